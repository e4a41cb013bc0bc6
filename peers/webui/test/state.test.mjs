// The session's shared state in the web UI: Chromium against a live `agentwire serve`. A
// scripted planner streams a trip into the state through `update_state`, a few characters at a
// time; the page's state panel shows each value as it becomes definite, while the run still
// works, changing the nodes in place (an element drawn early is the same element later); the
// session reopened (a reload) shows the state the store holds. Screenshots go to
// peers/webui/artifacts/.

import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { chromium } from 'playwright-core';
import { repoRoot, startAgentwire } from '../../agentwire-server.mjs';

const ARTIFACTS = path.join(repoRoot, 'peers', 'webui', 'artifacts');
const CHROMIUM = process.env.AGENTWIRE_CHROMIUM ?? '/usr/bin/chromium';

const TRIP = { title: 'Lisbon in spring', days: ['Alfama and the castle', 'Belém and the tower', 'Sintra, a day out'], budget: 900 };
const ARGS = JSON.stringify({ ops: [{ op: 'add', path: '/trip', value: TRIP }] });

const words = (text) => text.split(/(?<= )/).map((word) => ({ type: 'text_delta', text: word }));
// The arguments in pieces of four characters: the state fills as they stream.
const pieces = (text) => Array.from({ length: Math.ceil(text.length / 4) }, (_, at) => text.slice(at * 4, at * 4 + 4));

const scripts = {
  'planner.json': {
    turns: [
      [
        ...words('Let me plan the trip. '),
        { type: 'tool_call_start', id: 'c1', name: 'update_state' },
        ...pieces(ARGS).map((args) => ({ type: 'tool_call_delta', id: 'c1', args })),
        { type: 'tool_call_end', id: 'c1' },
        { type: 'finish', reason: 'tool_calls' },
      ],
      [...words('The plan is on the board.'), { type: 'finish', reason: 'stop' }],
    ],
  },
};

const config = `
[[agents]]
name = "planner"
description = "Plans trips on a shared board."
provider = "scripted"
script = "planner.json"
tokens_per_second = 25
tools = ["update_state"]
`;

let server;
let browser;
const shots = [];

before(async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: run scripts/chromium.sh`);
  mkdirSync(ARTIFACTS, { recursive: true });
  server = await startAgentwire({ config, files: scripts });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
});

after(async () => {
  await browser?.close();
  await server?.stop();
  if (shots.length) console.log(`# screenshots (${shots.length}) in ${ARTIFACTS}: ${shots.map((file) => path.basename(file)).join(', ')}`);
});

async function shot(page, name) {
  const file = path.join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path: file });
  shots.push(file);
}

/** The state panel as JSON, read back from its tree (keys from `dt`, values from the nodes). */
const shown = (page) =>
  page.locator('#state').evaluate((host) => {
    const read = (el) => {
      if (el.matches('ol.state-array')) return [...el.children].map((item) => read(item.firstElementChild));
      if (el.matches('dl.state-object')) {
        return Object.fromEntries([...el.children].map((row) => [row.querySelector(':scope > dt').textContent, read(row.querySelector(':scope > dd').firstElementChild)]));
      }
      if (el.matches('.state-string')) return el.textContent;
      return JSON.parse(el.textContent);
    };
    return host.firstElementChild ? read(host.firstElementChild) : null;
  });

test('the shared state shows live as update_state streams, changed in place, and again after a reload', async (t) => {
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
  t.after(() => context.close());
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  t.after(() => assert.deepEqual(errors, [], 'script errors on the page'));
  await page.goto(server.url);
  await page.waitForFunction(() => document.querySelectorAll('#agent option').length > 0);
  await page.selectOption('#agent', 'planner');
  assert.equal(await page.locator('#state-panel').isHidden(), true, 'no state, no panel');
  await page.fill('#input', 'Plan three days in Lisbon');
  await page.press('#input', 'Enter');

  // The title shows while the arguments still stream: the run works on.
  await page.waitForFunction(() => [...document.querySelectorAll('#state .state-string')].some((el) => el.textContent === 'Lisbon in spring'), null, { timeout: 15_000 });
  assert.equal(await page.locator('#state-panel').isVisible(), true);
  assert.notEqual(await page.locator('#run-status').getAttribute('data-status'), 'completed');
  const partial = await shown(page);
  assert.equal(partial.trip.title, TRIP.title);
  assert.ok(!partial.trip.budget, `the budget comes last: ${JSON.stringify(partial)}`);
  // Mark what is drawn now: later operations change the tree around it, not redraw it.
  await page.locator('#state dl.state-object').first().evaluate((el) => (el.dataset.seen = 'yes'));
  await shot(page, 'state-01-streaming');

  await page.waitForSelector('#run-status[data-status="completed"]', { timeout: 20_000 });
  assert.deepEqual(await shown(page), { trip: TRIP });
  assert.equal(await page.locator('#state dl.state-object').first().getAttribute('data-seen'), 'yes', 'changed in place');
  await shot(page, 'state-02-done');

  // Reopened, the session shows the state the store holds.
  await page.reload();
  await page.waitForFunction(() => document.querySelectorAll('#state .state-string').length > 0, null, { timeout: 15_000 });
  assert.deepEqual(await shown(page), { trip: TRIP });
  await shot(page, 'state-03-reloaded');

  // A new chat has no state.
  await page.click('#new-chat');
  assert.equal(await page.locator('#state-panel').isHidden(), true);
});
