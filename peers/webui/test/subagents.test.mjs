// Sub-agents in the web UI: Chromium against a live `agentwire serve` of scripted agents. The
// lead calls four scouts at once (paced, so their answers stream interleaved); one of them, west,
// calls a manager, who calls a cleaner, whose `write_file` needs approval: three levels down.
// The page shows each scout's run inside its call's card, nested, live; the approval is clicked
// there (it goes to the top run), after a reload in the middle of the wait; then everything
// completes, and a reload of the finished session builds the same view again. Screenshots go to
// peers/webui/artifacts/.

import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { chromium } from 'playwright-core';
import { repoRoot, startAgentwire } from '../../agentwire-server.mjs';

const ARTIFACTS = path.join(repoRoot, 'peers', 'webui', 'artifacts');
const CHROMIUM = process.env.AGENTWIRE_CHROMIUM ?? '/usr/bin/chromium';

const words = (text) => text.split(/(?<= )/).map((word) => ({ type: 'text_delta', text: word }));
const finish = (reason) => ({ type: 'finish', reason });
const call = (id, name, args) => {
  const text = JSON.stringify(args);
  return [
    { type: 'tool_call_start', id, name },
    { type: 'tool_call_delta', id, args: text.slice(0, 6) },
    { type: 'tool_call_delta', id, args: text.slice(6) },
    { type: 'tool_call_end', id },
  ];
};

const SCOUTS = ['north', 'south', 'east', 'west'];
const ANSWERS = {
  north: 'The north wing is quiet, with two open windows and a cold draught in the hall.',
  south: 'The south wing has the kitchen, which smells of fresh bread and burnt toast.',
  east: 'The east wing holds the library, dusty but in order, every shelf still full.',
  west: 'The west wing is tidy now: the manager had the cleaner remove the old log.',
  manager: 'The cleaner removed the old log, as asked.',
  cleaner: 'Cleaned: the old log is gone.',
};
const FINAL = 'All four scouts reported back, and the west wing is clean.';
const NOTE = { path: 'west/old.log', content: 'cleared by the cleaner' };

// Call ids repeat across levels (every script says c1): a run's calls are its own.
const scripts = {
  'lead.json': {
    turns: [
      [...words('I will send the four scouts out at once.'), ...SCOUTS.flatMap((scout, idx) => call(`c${idx + 1}`, scout, { input: `Scout the ${scout} wing.` })), finish('tool_calls')],
      [...words(FINAL), finish('stop')],
    ],
  },
  'north.json': { turns: [[...words(ANSWERS.north), finish('stop')]] },
  'south.json': { turns: [[...words(ANSWERS.south), finish('stop')]] },
  'east.json': { turns: [[...words(ANSWERS.east), finish('stop')]] },
  'west.json': {
    turns: [
      [...words('Asking the manager. '), ...call('c1', 'manager', { input: 'Tidy the west wing.' }), finish('tool_calls')],
      [...words(ANSWERS.west), finish('stop')],
    ],
  },
  'manager.json': {
    turns: [
      [...words('Sending the cleaner. '), ...call('c1', 'cleaner', { input: 'Remove the old log.' }), finish('tool_calls')],
      [...words(ANSWERS.manager), finish('stop')],
    ],
  },
  // One call of the scribe per run, with the same call id in every run.
  'pair.json': {
    turns: [
      [...words('Asking the scribe. '), ...call('c1', 'scribe', { input: 'Write it down.' }), finish('tool_calls')],
      [...words('The scribe wrote it down.'), finish('stop')],
    ],
  },
  'scribe.json': { turns: [[...words('Written down, word for word.'), finish('stop')]] },
  'cleaner.json': {
    turns: [
      [...words('Overwriting the old log. '), ...call('c1', 'write_file', NOTE), finish('tool_calls')],
      [...words(ANSWERS.cleaner), finish('stop')],
    ],
  },
};

const agent = (name, extra) => `
[[agents]]
name = "${name}"
description = "The ${name}."
provider = "scripted"
script = "${name}.json"
${extra}`;

const config = [
  agent('lead', `tokens_per_second = 40\nsubagents = ${JSON.stringify(SCOUTS)}`),
  // Paced alike, so the three answers stream at the same time, interleaved.
  agent('north', 'tokens_per_second = 9'),
  agent('south', 'tokens_per_second = 9'),
  agent('east', 'tokens_per_second = 9'),
  agent('west', 'tokens_per_second = 30\nsubagents = ["manager"]'),
  agent('manager', 'tokens_per_second = 30\nsubagents = ["cleaner"]'),
  agent('cleaner', 'tokens_per_second = 30\ntools = ["write_file"]\napproval = ["write_file"]\nworkspace = "ws-clean"'),
  agent('pair', 'tokens_per_second = 60\nsubagents = ["scribe"]'),
  agent('scribe', 'tokens_per_second = 60'),
].join('\n');

let server;
let browser;
const shots = [];

before(async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: run scripts/chromium.sh`);
  mkdirSync(ARTIFACTS, { recursive: true });
  server = await startAgentwire({ config, files: scripts, dirs: ['ws-clean'] });
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

/** A screenshot of the page; with `from`, scrolled to show that element from its top. */
async function shot(page, name, from) {
  if (from) await from.evaluate((el) => el.scrollIntoView({ block: 'start' }));
  const file = path.join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path: file });
  shots.push(file);
}

/** The page's sub-agent runs in document order: where each sits, its agent, status and text. */
const subruns = (page) =>
  page.locator('details.subrun').evaluateAll((folds) =>
    folds.map((fold) => {
      const path = [];
      for (let el = fold.parentElement?.closest('details.subrun'); el; el = el.parentElement?.closest('details.subrun')) path.unshift(el.dataset.agent);
      const own = (selector) => [...fold.querySelectorAll(selector)].filter((el) => el.closest('details.subrun') === fold);
      return {
        path: [...path, fold.dataset.agent].join('/'),
        // The call whose card holds the run: a run sits in the card of the call that started it.
        call: fold.closest('.part.tool')?.querySelector('.name')?.textContent,
        status: fold.dataset.status,
        label: fold.querySelector(':scope > summary .status')?.textContent,
        open: fold.open,
        text: own('.part.text').map((el) => el.textContent.trim()).join(' | '),
        tools: own('.part.tool').map((el) => `${el.querySelector('.name')?.textContent}:${el.dataset.state}`).join(', '),
      };
    }),
  );

const fold = (page, agentPath) => page.locator(agentPath.map((name) => `details.subrun[data-agent="${name}"]`).join(' '));

test('sub-agents’ runs show nested in their calls, live; an approval three levels down is clicked; a reload rebuilds them', async (t) => {
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
  t.after(() => context.close());
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  t.after(() => assert.deepEqual(errors, [], 'script errors on the page'));
  await page.goto(server.url);
  await page.waitForFunction(() => document.querySelectorAll('#agent option').length > 0);
  await page.selectOption('#agent', 'lead');
  await page.fill('#input', 'Scout the house');
  await page.press('#input', 'Enter');

  // Each scout's run sits in the card of the lead's call that started it.
  const top = page.locator('#messages > .message.assistant > .parts > .part.tool.agent-call > details.subrun');
  await page.waitForFunction(() => document.querySelectorAll('#messages > .message.assistant > .parts > .part.tool > details.subrun').length === 4, null, { timeout: 15_000 });
  assert.deepEqual(await top.evaluateAll((folds) => folds.map((el) => el.dataset.agent)), SCOUTS);

  // Three answers stream at once, each in its own run, updated in place.
  await page.waitForFunction(() => document.querySelectorAll('details.subrun .part.text.streaming').length >= 3, null, { timeout: 15_000 });
  const north = fold(page, ['north']).locator('.part.text').first();
  const partial = await north.textContent();
  assert.ok(partial.length < ANSWERS.north.length && ANSWERS.north.startsWith(partial), `north streams: "${partial}"`);
  const labels = await top.evaluateAll((folds) => folds.map((el) => el.querySelector('summary .status').textContent));
  assert.ok(labels.filter((label) => label === 'working').length >= 3, `${labels}`);
  await north.evaluate((el) => (el.dataset.seen = 'yes'));
  await shot(page, 'subagents-01-streaming');

  // The cleaner, three levels down, asks to write; the lead's whole tree waits for the answer.
  const approve = fold(page, ['west', 'manager', 'cleaner']).locator('.part.tool[data-state="approval"] button.approve');
  await approve.waitFor({ timeout: 15_000 });
  await page.waitForSelector('#run-status[data-status="awaiting"]', { timeout: 15_000 });
  assert.equal(await page.locator('#run-status').textContent(), 'Waiting for your approval');
  assert.equal(await approve.isEnabled(), true);
  // The north answer grew in the same element: nothing was built again.
  assert.equal(await north.getAttribute('data-seen'), 'yes');
  assert.equal(await north.textContent(), ANSWERS.north);
  const waiting = await subruns(page);
  assert.deepEqual(
    waiting.map(({ path, call, status, open }) => [path, call, status, open]),
    [
      ['north', 'north', 'completed', false],
      ['south', 'south', 'completed', false],
      ['east', 'east', 'completed', false],
      ['west', 'west', 'awaiting', true],
      ['west/manager', 'manager', 'awaiting', true],
      ['west/manager/cleaner', 'cleaner', 'awaiting', true],
    ],
  );
  assert.equal(waiting[5].label, 'waiting for approval');
  assert.equal(waiting[5].tools, 'write_file:approval');
  // The calls whose runs wait say so, those whose runs are done too (their results come when
  // the lead goes on); the lead's own text is the lead's alone.
  const states = () => page.locator('#messages > .message.assistant > .parts > .part.tool').evaluateAll((els) => els.map((el) => el.dataset.state));
  assert.deepEqual(await states(), ['done', 'done', 'done', 'nested']);
  assert.deepEqual(await fold(page, ['west']).locator('.part.tool').evaluateAll((els) => els.map((el) => el.dataset.state)), ['nested', 'nested', 'approval']);
  assert.equal(await page.locator('#messages > .message.assistant > .parts > .part.text').first().textContent(), 'I will send the four scouts out at once.');
  await shot(page, 'subagents-02-approval');

  // A reload in the middle of the wait builds the same view from the run's log.
  await page.reload();
  await approve.waitFor({ timeout: 15_000 });
  await page.waitForSelector('#run-status[data-status="awaiting"]');
  assert.deepEqual(await subruns(page), waiting);
  await page.waitForFunction(() => !document.querySelector('.part.tool[data-state="approval"] button.approve')?.disabled);
  await shot(page, 'subagents-03-approval-reloaded');

  // The answer goes to the top run, which hands it down; everything completes.
  await approve.click();
  await page.waitForSelector('#run-status[data-status="completed"]', { timeout: 15_000 });
  assert.equal(await page.locator('#messages > .message.assistant .part.text').last().textContent(), FINAL);
  assert.equal(readFileSync(path.join(server.dir, 'ws-clean', NOTE.path), 'utf8'), NOTE.content);
  const done = await subruns(page);
  assert.deepEqual(
    done.map(({ path, status, label, open }) => [path, status, label, open]),
    [
      ['north', 'completed', 'done', false],
      ['south', 'completed', 'done', false],
      ['east', 'completed', 'done', false],
      // The reader saw these open; done, they fold like the others.
      ['west', 'completed', 'done', false],
      ['west/manager', 'completed', 'done', false],
      ['west/manager/cleaner', 'completed', 'done', false],
    ],
  );
  for (const [idx, scout] of SCOUTS.entries()) assert.equal(done[idx].text, idx < 3 ? ANSWERS[scout] : `Asking the manager. | ${ANSWERS.west}`);
  assert.equal(done[4].text, `Sending the cleaner. | ${ANSWERS.manager}`);
  assert.equal(done[5].text, `Overwriting the old log. | ${ANSWERS.cleaner}`);
  assert.equal(done[5].tools, 'write_file:done');
  assert.equal(done[4].tools, 'cleaner:done');
  assert.match(await fold(page, ['west', 'manager', 'cleaner']).locator('.approval').textContent(), /✓ Approved/);
  // Each call's result is its run's answer.
  for (const scout of ['north', 'west']) {
    const card = page.locator('#messages > .message.assistant > .parts > .part.tool', { has: page.locator(`details.subrun[data-agent="${scout}"]`) });
    assert.equal(await card.locator(':scope > .outcome pre').textContent(), ANSWERS[scout]);
    assert.equal(await card.getAttribute('data-state'), 'done');
  }
  await shot(page, 'subagents-04-done');
  for (const agentPath of [['west'], ['west', 'manager'], ['west', 'manager', 'cleaner']]) await fold(page, agentPath).locator(':scope > summary').click();
  const westCard = page.locator('#messages .part.tool[data-tool-call-id="c4"]');
  await page.setViewportSize({ width: 1100, height: 1250 });
  await shot(page, 'subagents-05-expanded', westCard);

  // Reopened once finished: the session's history, and the runs replayed from the run's log.
  await page.reload();
  await page.waitForFunction(() => document.querySelectorAll('details.subrun').length === 6, null, { timeout: 15_000 });
  await page.waitForFunction(() => document.querySelector('details.subrun[data-agent="cleaner"]')?.dataset.status === 'completed');
  assert.deepEqual(await subruns(page), done);
  for (const agentPath of [['west'], ['west', 'manager'], ['west', 'manager', 'cleaner']]) await fold(page, agentPath).locator(':scope > summary').click();
  await shot(page, 'subagents-06-reopened', westCard);

  // On a phone, three levels deep still fits the width.
  await page.setViewportSize({ width: 390, height: 844 });
  const cleaner = fold(page, ['west', 'manager', 'cleaner']);
  const box = await cleaner.boundingBox();
  assert.ok(box && box.x >= 0 && box.x + box.width <= 390 && box.width > 150, `the cleaner's run on a phone: ${JSON.stringify(box)}`);
  await cleaner.scrollIntoViewIfNeeded();
  await shot(page, 'subagents-07-phone');
});

test('a reopened session shows the sub-agents’ runs of each of its runs, in their own calls', async (t) => {
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
  t.after(() => context.close());
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  t.after(() => assert.deepEqual(errors, [], 'script errors on the page'));
  await page.goto(server.url);
  await page.waitForFunction(() => document.querySelectorAll('#agent option').length > 0);
  await page.selectOption('#agent', 'pair');
  for (const [turn, question] of ['First note', 'Second note'].entries()) {
    await page.fill('#input', question);
    await page.press('#input', 'Enter');
    await page.waitForFunction((n) => document.querySelectorAll('details.subrun[data-status="completed"]').length === n, turn + 1, { timeout: 15_000 });
    await page.waitForSelector('#run-status[data-status="completed"]');
  }
  // Each answer's call (both are `c1`) holds its own run.
  const cards = (page) =>
    page.locator('#messages > .message.assistant > .parts > .part.tool').evaluateAll((els) =>
      els.map((el) => [el.dataset.toolCallId, el.dataset.state, [...el.querySelectorAll('details.subrun')].map((run) => `${run.dataset.agent}:${run.dataset.status}:${run.textContent.includes('Written down, word for word.')}`).join(', ')]),
    );
  const live = await cards(page);
  assert.deepEqual(live, [
    ['c1', 'done', 'scribe:completed:true'],
    ['c1', 'done', 'scribe:completed:true'],
  ]);
  const runIds = await page.locator('details.subrun').evaluateAll((els) => els.map((el) => el.dataset.runId));
  assert.equal(new Set(runIds).size, 2);

  await page.reload();
  await page.waitForFunction(() => document.querySelectorAll('details.subrun[data-status="completed"]').length === 2, null, { timeout: 15_000 });
  assert.deepEqual(await cards(page), live);
  assert.deepEqual(await page.locator('details.subrun').evaluateAll((els) => els.map((el) => el.dataset.runId)), runIds);
});

