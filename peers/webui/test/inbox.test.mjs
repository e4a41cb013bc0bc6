// Typing while the agent answers: Chromium against a live `agentwire serve`. A paced scripted
// agent streams its first step slowly; a steer typed meanwhile joins the run at its next step
// and shows there, and a queued message (to another agent) gets its own run, streamed after
// the first. Screenshots go to peers/webui/artifacts/.

import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { chromium } from 'playwright-core';
import { repoRoot, startAgentwire } from '../../agentwire-server.mjs';

const ARTIFACTS = path.join(repoRoot, 'peers', 'webui', 'artifacts');
const CHROMIUM = process.env.AGENTWIRE_CHROMIUM ?? '/usr/bin/chromium';

const words = (text) => text.split(/(?<= )/);
const FIRST = 'Working on the long job now, one slow word at a time, so that there is time to type. ';
const scripts = {
  // Step 0 streams slowly and ends on a tool call: its result is the step boundary a steer joins at.
  'pacer.json': {
    turns: [
      [
        ...words(FIRST).map((text) => ({ type: 'text_delta', text })),
        { type: 'tool_call_start', id: 'c1', name: 'write_file' },
        { type: 'tool_call_delta', id: 'c1', args: '{"path": "notes/job.txt", "content": "done"}' },
        { type: 'tool_call_end', id: 'c1' },
        { type: 'finish', reason: 'tool_calls' },
      ],
      [{ type: 'text_delta', text: 'The job is written, and I saw your note.' }, { type: 'finish', reason: 'stop' }],
    ],
  },
  'replier.json': { turns: [[...words('Here is the answer to your queued message.').map((text) => ({ type: 'text_delta', text })), { type: 'finish', reason: 'stop' }]] },
};
const config = `
[[agents]]
name = "pacer"
provider = "scripted"
script = "pacer.json"
tokens_per_second = 8
tools = ["write_file"]
workspace = "ws-pace"

[[agents]]
name = "replier"
provider = "scripted"
script = "replier.json"
tokens_per_second = 20
`;

let server;
let browser;

before(async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: run scripts/chromium.sh`);
  mkdirSync(ARTIFACTS, { recursive: true });
  server = await startAgentwire({ config, files: scripts, dirs: ['ws-pace'] });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

/** Sends `text` with Enter, in `mode` when the session is busy. */
async function type(page, text, mode) {
  if (mode) await page.selectOption('#send-mode', mode);
  await page.fill('#input', text);
  await page.press('#input', 'Enter');
}

/** The chip of the user's message saying `text`. */
const chipOf = (page, text) => page.locator('.message.user', { hasText: text }).locator('.inbox-chip');

/** The transcript as the page shows it, in order: role and text (step marks and tool cards left out). */
const transcript = (page) =>
  page.locator('#messages > .message').evaluateAll((els) =>
    els
      .map((el) => [el.classList.contains('user') ? 'user' : el.classList.contains('assistant') ? 'assistant' : 'other', [...el.querySelectorAll('.part.text')].map((part) => part.textContent).join('').trim()])
      .filter(([role, text]) => role !== 'other' && text),
  );

test('while the agent answers, a steer joins the run and a queued message gets its own run after it', async (t) => {
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
  t.after(() => context.close());
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  await page.goto(server.url);
  await page.waitForFunction(() => document.querySelectorAll('#agent option').length > 0);

  await page.selectOption('#agent', 'pacer');
  await type(page, 'start the long job');
  await page.waitForFunction(() => (document.querySelector('.message.assistant .part.text.streaming')?.textContent ?? '').length > 5);
  // The composer stays usable while the run streams, with the mode beside Send.
  assert.equal(await page.locator('#send').isDisabled(), false);
  assert.equal(await page.locator('#send-mode').isVisible(), true);
  assert.equal(await page.inputValue('#send-mode'), 'queue');

  await type(page, 'also note the weather', 'steer');
  // At once, with its status.
  await chipOf(page, 'also note the weather').waitFor();
  assert.match(await chipOf(page, 'also note the weather').innerText(), /sending|steering/);
  assert.equal(await page.locator('.message.assistant .part.text.streaming').count(), 1, 'the run still streams');

  await page.selectOption('#agent', 'replier');
  await type(page, 'then answer this', 'queue');
  await chipOf(page, 'then answer this').waitFor();
  await page.waitForFunction(() => /queued/.test(document.querySelector('#waiting .inbox-chip:last-child')?.textContent ?? '') || /queued/.test([...document.querySelectorAll('.inbox-chip')].map((chip) => chip.textContent).join(' ')));
  await page.screenshot({ path: path.join(ARTIFACTS, 'inbox-1-waiting.png') });

  await page.waitForFunction(() => /steered at step \d/.test([...document.querySelectorAll('.inbox-chip')].map((chip) => chip.textContent).join(' ')), undefined, { timeout: 20_000 });
  assert.match(await chipOf(page, 'also note the weather').innerText(), /^steered at step 1$/);

  await page.waitForFunction(() => /answer to your queued message\./.test(document.querySelector('#messages > .message.assistant:last-of-type')?.textContent ?? ''), undefined, { timeout: 20_000 });
  await page.waitForSelector('#run-status[data-status="completed"]');
  assert.equal(await chipOf(page, 'then answer this').innerText(), 'delivered');
  assert.equal(await page.locator('#waiting > *').count(), 0, 'nothing waits any more');

  // The steer sits between the run's two steps, the queued message after the run, its answer last.
  const shown = await transcript(page);
  const order = shown.map(([role, text]) => `${role}: ${text.slice(0, 24)}`);
  const at = (prefix) => order.findIndex((line) => line.startsWith(prefix));
  const steps = [at('user: start the long job'), at('assistant: Working on the long'), at('user: also note the weather'), at('assistant: The job is written'), at('user: then answer this'), at('assistant: Here is the answer')];
  assert.ok(steps.every((index) => index >= 0), order.join('\n'));
  assert.deepEqual([...steps].sort((a, b) => a - b), steps, order.join('\n'));
  await page.screenshot({ path: path.join(ARTIFACTS, 'inbox-2-done.png') });

  // The server has the same history: a reload shows it in that order.
  await page.reload();
  await page.waitForFunction(() => /answer to your queued message\./.test(document.querySelector('#messages')?.textContent ?? ''));
  const reloaded = (await transcript(page)).map(([role, text]) => `${role}: ${text.slice(0, 24)}`);
  assert.deepEqual(reloaded, order);
  assert.deepEqual(errors, [], 'script errors on the page');
});
