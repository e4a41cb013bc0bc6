// The web UI end to end: Debian's Chromium, driven by playwright-core, against a live
// `agentwire serve` running scripted agents (paced, so streaming can be watched) and a real MCP
// server's slow tool. Every test works the page as a person would (typing, Enter, clicks,
// reloads) and checks what is on the screen; screenshots of each state go to
// peers/webui/artifacts/ (printed at the end).

import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { chromium } from 'playwright-core';
import { repoRoot, startAgentwire } from '../../agentwire-server.mjs';

const ARTIFACTS = path.join(repoRoot, 'peers', 'webui', 'artifacts');
const CHROMIUM = process.env.AGENTWIRE_CHROMIUM ?? '/usr/bin/chromium';
const EVERYTHING = path.join(repoRoot, 'peers', 'mcp', 'node_modules', '.bin', 'mcp-server-everything');

const words = (text) => text.split(/(?<= )/);
const ANSWER = 'Streaming arrives word by word, so the page shows each piece as soon as it is made.';
const LONG = 'This answer goes on for a long while so that there is time to press the stop button before it ends. '.repeat(6);
const FILE = { path: 'notes/approved.txt', content: 'written after approval' };
// Long enough to overflow any screen, paced so it still streams while the test scrolls.
const CHATTY = Array.from({ length: 80 }, (_, i) => `Paragraph ${i + 1} of a long answer.\n\n`).join('');
// What a careless approval would let through: long, multi-line, and markup that must stay text.
const LONG_FILE = {
  path: 'notes/long.txt',
  content: `<img src=x onerror="document.title='pwned'"><b>not bold</b>\n${'line of the long note\n'.repeat(40)}the end`,
};
// Every block Markdown has, then a long plain tail, so the blocks are seen while the text
// streams; and markup that must stay text.
const CODE = 'def greet(name):\n    return f"Hello, {name}!"';
const MARKDOWN = [
  '## Release notes',
  '',
  'Here is **what changed** in *this* release, with `inline code` and a [link](https://example.com/docs).',
  '',
  '1. First step',
  '2. Second step',
  '   - a nested detail',
  '   - another one',
  '3. Third step',
  '',
  '| Feature | Status |',
  '|:--------|-------:|',
  '| Lists | **done** |',
  '| Tables | done |',
  '',
  '```python',
  CODE,
  '```',
  '',
  '> A quote to finish.',
  '',
  '---',
  '',
  `Markup stays text: <script>document.title='pwned'</script> <img src=x onerror="document.title='pwned'"> and [a bad link](javascript:document.title='pwned').`,
  '',
  'The end of the answer takes a while to arrive, so the blocks above are seen while it streams. '.repeat(6).trim(),
].join('\n');
// An approval asked for a call the page will not see.
const ORPHAN_FILE = { path: 'notes/orphan.txt', content: 'approved from a card made from its request' };
const VIEWPORTS = [
  { name: 'desktop', width: 1280, height: 900 },
  { name: 'phone', width: 390, height: 844 },
];
const finish = (reason) => ({ type: 'finish', reason });
const call = (id, name, args) => [
  { type: 'tool_call_start', id, name },
  ...[args.slice(0, 8), args.slice(8)].map((part) => ({ type: 'tool_call_delta', id, args: part })),
  { type: 'tool_call_end', id },
];

const scripts = {
  'talker.json': { turns: [[...words(ANSWER).map((text) => ({ type: 'text_delta', text })), finish('stop')]] },
  'stopper.json': { turns: [[...words(LONG).map((text) => ({ type: 'text_delta', text })), finish('stop')]] },
  'slow-tool.json': {
    turns: [
      [{ type: 'text_delta', text: 'Starting the long job.' }, ...call('c1', 'everything_trigger-long-running-operation', '{"duration": 1.5, "steps": 3}'), finish('tool_calls')],
      [{ type: 'text_delta', text: 'The job is done.' }, finish('stop')],
    ],
  },
  'fixer.json': {
    turns: [
      [{ type: 'reasoning_delta', text: 'I will write the note.' }, ...call('c1', 'write_file', '{"content": "hello"}'), finish('tool_calls')],
      [{ type: 'text_delta', text: 'I forgot the path; ' }, { type: 'text_delta', text: 'here is the corrected call.' }, ...call('c2', 'write_file', '{"path": "notes/fixed.txt", "content": "hello"}'), finish('tool_calls')],
      [{ type: 'data', name: 'demo.stats', data: { files: 1 } }, { type: 'text_delta', text: 'Fixed and written.' }, finish('stop')],
    ],
  },
  // Arguments streamed slowly, a piece at a time, so their streaming state can be seen.
  'slow-args.json': {
    turns: [
      [
        { type: 'tool_call_start', id: 'c1', name: 'everything_trigger-long-running-operation' },
        ...['{"dura', 'tion": ', '1, ', '"ste', 'ps": ', '2}'].map((args) => ({ type: 'tool_call_delta', id: 'c1', args })),
        { type: 'tool_call_end', id: 'c1' },
        finish('tool_calls'),
      ],
      [{ type: 'text_delta', text: 'The job is done.' }, finish('stop')],
    ],
  },
  // Two model calls with their token usage and a tool call of a known length between them: the
  // run's timeline.
  'timed.json': {
    turns: [
      [...words('Timing the long job now.').map((text) => ({ type: 'text_delta', text })), ...call('c1', 'everything_trigger-long-running-operation', '{"duration": 0.6, "steps": 2}'), { ...finish('tool_calls'), usage: { input_tokens: 120, output_tokens: 15 } }],
      [...words('The job took its time.').map((text) => ({ type: 'text_delta', text })), { ...finish('stop'), usage: { input_tokens: 160, output_tokens: 9 } }],
    ],
  },
  'chatty.json': { turns: [[...words(CHATTY).map((text) => ({ type: 'text_delta', text })), finish('stop')]] },
  'long-writer.json': {
    turns: [
      [{ type: 'text_delta', text: 'Writing the long note.' }, ...call('c1', 'write_file', JSON.stringify(LONG_FILE)), finish('tool_calls')],
      [{ type: 'text_delta', text: 'The long note is written.' }, finish('stop')],
    ],
  },
  'markdown.json': { turns: [[...words(MARKDOWN).map((text) => ({ type: 'text_delta', text })), finish('stop')]] },
  'looker.json': { turns: [[{ type: 'text_delta', text: 'A single red pixel.' }, finish('stop')]] },
  'orphan.json': {
    turns: [
      [{ type: 'text_delta', text: 'Writing it.' }, ...call('c1', 'write_file', JSON.stringify(ORPHAN_FILE)), finish('tool_calls')],
      [{ type: 'text_delta', text: 'Written.' }, finish('stop')],
    ],
  },
  'writer.json': {
    turns: [
      [{ type: 'text_delta', text: 'Let me write it.' }, ...call('c1', 'write_file', JSON.stringify(FILE)), finish('tool_calls')],
      [{ type: 'text_delta', text: 'Done, the note is written.' }, finish('stop')],
    ],
  },
};

const agent = (name, extra = '') => `
[[agents]]
name = "${name}"
provider = "scripted"
script = "${name}.json"
${extra}`;

const config = [
  agent('talker', 'tokens_per_second = 12'),
  agent('stopper', 'tokens_per_second = 8'),
  agent('slow-tool', `tokens_per_second = 40\nworkspace = "ws-slow"\n[[agents.mcp]]\nname = "everything"\ncommand = ["${EVERYTHING}", "stdio"]`),
  agent('fixer', 'tokens_per_second = 30\nworkspace = "ws-fix"'),
  agent('writer', 'tokens_per_second = 40\ntools = ["write_file"]\napproval = ["write_file"]\nworkspace = "ws-write"'),
  agent('writer', 'tokens_per_second = 40\ntools = ["write_file"]\napproval = ["write_file"]\nworkspace = "ws-deny"').replace('name = "writer"', 'name = "denied"'),
  agent('chatty', 'tokens_per_second = 60'),
  agent('timed', `tokens_per_second = 40\nworkspace = "ws-slow"\n[[agents.mcp]]\nname = "everything"\ncommand = ["${EVERYTHING}", "stdio"]`),
  agent('slow-args', `tokens_per_second = 8\nworkspace = "ws-slow"\n[[agents.mcp]]\nname = "everything"\ncommand = ["${EVERYTHING}", "stdio"]`),
  agent('long-writer', 'tokens_per_second = 40\ntools = ["write_file"]\napproval = ["write_file"]\nworkspace = "ws-long"'),
  agent('markdown', 'tokens_per_second = 30'),
  // A model that reads images: its user messages may carry them.
  agent('looker', 'tokens_per_second = 40\ninput_types = ["text/plain", "image/*"]'),
  agent('orphan', 'tokens_per_second = 40\ntools = ["write_file"]\napproval = ["write_file"]\nworkspace = "ws-orphan"'),
  // The offline demo brain, whose `tour` streams every kind of part: reasoning, text, tall tool
  // cards, a plan, an artifact, an image, a source and data.
  `[[agents]]\nname = "guide"\nprovider = "demo"\ntokens_per_second = 200\nworkspace = "ws-tour"\ntools = ["write_file", "read_file", "list_files", "update_plan", "save_artifact"]`,
].join('\n');

let server;
let keyed;
let browser;
const shots = [];

before(async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: run scripts/chromium.sh`);
  assert.ok(existsSync(EVERYTHING), `${EVERYTHING} is missing: run scripts/peers.sh`);
  mkdirSync(ARTIFACTS, { recursive: true });
  [server, keyed] = await Promise.all([
    startAgentwire({ config, files: scripts, dirs: ['ws-slow', 'ws-fix', 'ws-write', 'ws-deny', 'ws-long', 'ws-tour', 'ws-orphan'] }),
    startAgentwire({ config: `[server]\napi_keys = ["s3cret"]\n${agent('talker')}`, files: scripts }),
  ]);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    // What the machine's closed network and a root user need (see the env notes).
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
});

after(async () => {
  await browser?.close();
  await Promise.all([server?.stop(), keyed?.stop()]);
  if (shots.length) console.log(`# screenshots (${shots.length}) in ${ARTIFACTS}`);
});

/** A fresh page at the UI, failing the test on any script error. */
async function open(t, { url = server.url, width = 1100, height = 800, permissions = [] } = {}) {
  const context = await browser.newContext({ viewport: { width, height }, permissions });
  t.after(() => context.close());
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  t.after(() => assert.deepEqual(errors, [], 'script errors on the page'));
  await page.goto(url);
  await page.waitForFunction(() => document.querySelectorAll('#agent option').length > 0 || !document.getElementById('error').hidden);
  return page;
}

async function shot(page, name) {
  const file = path.join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path: file });
  shots.push(file);
}

/** A screenshot of one element (scrolled into view). */
async function shotOf(locator, name) {
  const file = path.join(ARTIFACTS, `${name}.png`);
  await locator.screenshot({ path: file });
  shots.push(file);
}

/** Picks the agent and sends a message with Enter. */
async function say(page, agentName, text) {
  await page.selectOption('#agent', agentName);
  await page.fill('#input', text);
  await page.press('#input', 'Enter');
}

const status = (page) => page.locator('#run-status').getAttribute('data-status');
const waitStatus = (page, value) => page.waitForSelector(`#run-status[data-status="${value}"]`, { timeout: 15_000 });
const lastText = (page) => page.locator('.message.assistant .part.text').last();

/** The session open on the page, from its address. */
const sessionOf = (page) => decodeURIComponent(/#session=(.+)$/.exec(page.url())?.[1] ?? '');

/** A session's messages as the server has them: role and text. */
async function storedMessages(id) {
  const session = await (await fetch(`${server.url}/v1/sessions/${encodeURIComponent(id)}`)).json();
  return session.messages.map((message) => [message.role, message.parts.filter((part) => part.type === 'text').map((part) => part.text).join('')]);
}

/** How far the end of the messages is below what the scroller shows, in pixels. */
const belowEnd = (page) => page.locator('.scroller').evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight);

/** Asserts the element is wholly on screen: inside the messages' scroller and the viewport. */
async function assertInView(page, locator, what) {
  const box = await locator.boundingBox();
  const view = await page.locator('.scroller').boundingBox();
  const { width, height } = page.viewportSize();
  assert.ok(box && view, `${what} has no box`);
  const inside = box.y >= view.y - 1 && box.y + box.height <= view.y + view.height + 1 && box.y + box.height <= height && box.x >= 0 && box.x + box.width <= width;
  assert.ok(inside, `${what} is out of view: ${JSON.stringify(box)} in ${JSON.stringify(view)} (${width}×${height})`);
}

/**
 * Records every state and label tool cards show, intermediate ones included (a mutation
 * record keeps the old value; removed and added text nodes keep theirs).
 */
async function watchToolStates(page) {
  await page.evaluate(() => {
    const seen = { states: new Set(), labels: new Set(), unlabeled: 0 };
    window.__toolStates = seen;
    new MutationObserver((records) => {
      for (const record of records) {
        const target = /** @type {Element} */ (record.target);
        if (record.type === 'attributes' && target.matches('.part.tool')) {
          if (record.oldValue) seen.states.add(record.oldValue);
          seen.states.add(target.getAttribute('data-state'));
        }
        for (const node of record.addedNodes) {
          if (node.parentElement?.matches('.part.tool .status')) seen.labels.add(node.textContent);
          if (node instanceof Element) {
            for (const card of [node, ...node.querySelectorAll('.part.tool')].filter((el) => el.matches('.part.tool'))) {
              seen.states.add(card.getAttribute('data-state'));
              const label = card.querySelector('.status')?.textContent ?? '';
              if (label) seen.labels.add(label);
              else seen.unlabeled++;
            }
          }
        }
      }
    }).observe(document.getElementById('messages'), { subtree: true, childList: true, attributes: true, attributeFilter: ['data-state'], attributeOldValue: true });
  });
  return async () => page.evaluate(() => {
    const seen = window.__toolStates;
    return { states: [...seen.states], labels: [...seen.labels], unlabeled: seen.unlabeled };
  });
}

describe('the web UI against agentwire serve', () => {
  test('a text answer streams in: a partial answer shows before the whole one', async (t) => {
    const page = await open(t);
    await shot(page, '01-empty');
    // Shift+Enter is a new line, Enter sends.
    await page.selectOption('#agent', 'talker');
    await page.fill('#input', 'line one');
    await page.press('#input', 'Shift+Enter');
    await page.type('#input', 'line two');
    await page.press('#input', 'Enter');
    await page.waitForSelector('.message.user');
    assert.equal(await page.locator('.message.user .part.text').innerText(), 'line one\nline two');
    assert.equal(await page.inputValue('#input'), '');

    const streaming = page.locator('.message.assistant .part.text.streaming');
    await streaming.waitFor();
    await page.waitForFunction(() => (document.querySelector('.part.text.streaming')?.textContent ?? '').length > 10);
    const partial = await streaming.innerText();
    await shot(page, '02-text-streaming');
    assert.ok(partial.length < ANSWER.length, `partial: ${partial}`);
    assert.ok(ANSWER.startsWith(partial.trimEnd()), `partial "${partial}" is not a prefix of the answer`);
    assert.equal(await status(page), 'in_progress');
    assert.equal(await page.locator('#stop').isVisible(), true);

    await waitStatus(page, 'completed');
    assert.equal(await lastText(page).innerText(), ANSWER);
    assert.equal(await page.locator('.part.text.streaming').count(), 0);
    assert.equal(await page.locator('#stop').isVisible(), false);
    assert.match(page.url(), /#session=ses_/);
    await shot(page, '03-text-done');
  });

  test('a tool call shows running, then done with its result', async (t) => {
    const page = await open(t);
    await say(page, 'slow-tool', 'run the long job');
    const card = page.locator('.part.tool[data-tool-call-id="c1"]');
    await page.waitForSelector('.part.tool[data-state="running"]', { timeout: 15_000 });
    assert.equal(await card.locator('.status').innerText(), 'running');
    assert.match(await card.locator('.args').textContent(), /"duration": 1.5/);
    await shot(page, '04-tool-running');
    await page.waitForSelector('.part.tool[data-state="done"]', { timeout: 15_000 });
    assert.match(await card.locator('.outcome').innerText(), /Long running operation completed/);
    await waitStatus(page, 'completed');
    assert.equal(await lastText(page).innerText(), 'The job is done.');
    await shot(page, '05-tool-done');
  });

  test('a run’s timeline shows its steps, model calls and tool call with durations and tokens', async (t) => {
    const page = await open(t);
    await say(page, 'timed', 'time the job');
    await waitStatus(page, 'completed');
    /** The timeline's bars as the page shows them. */
    const readBars = () => page.locator('.message.assistant .timeline .timeline-bar').evaluateAll((bars) => bars.map((bar) => ({
      kind: bar.getAttribute('data-kind'),
      label: bar.querySelector('.timeline-label')?.textContent,
      ms: Number(bar.getAttribute('data-duration-ms')),
      shown: bar.querySelector('.timeline-duration')?.textContent,
      tokens: bar.querySelector('.timeline-tokens')?.textContent,
      width: bar.querySelector('.timeline-fill')?.getBoundingClientRect().width ?? 0,
    })));
    const check = async (when) => {
      const timeline = page.locator('.message.assistant .timeline').last();
      await timeline.waitFor({ timeout: 15_000 });
      assert.match(await timeline.locator('summary').innerText(), /^Timeline · \d/);
      await timeline.locator('summary').click();
      const bars = await readBars();
      assert.equal(bars.length, 5, `${when}: ${JSON.stringify(bars)}`);
      assert.deepEqual(bars.map((bar) => bar.kind), ['step', 'chat', 'execute_tool', 'step', 'chat'], when);
      assert.deepEqual(bars.map((bar) => bar.label), ['step 1', 'chat', 'execute_tool everything_trigger-long-running-operation', 'step 2', 'chat'], when);
      for (const bar of bars) {
        assert.ok(bar.ms > 0, `${when}: ${bar.label} lasted ${bar.ms} ms`);
        assert.match(bar.shown, /^\d+(\.\d+)? (ms|s)$/);
      }
      // The tool ran its 0.6 s; each model call streamed its words at 40 a second.
      assert.ok(bars[2].ms >= 550, `${when}: the tool took ${bars[2].ms} ms`);
      assert.ok(bars[0].ms >= bars[2].ms, `${when}: the step holds its tool call`);
      assert.equal(bars[1].tokens, '120 in · 15 out');
      assert.equal(bars[4].tokens, '160 in · 9 out');
      assert.ok(bars.every((bar) => bar.width >= 2), `${when}: every bar is drawn`);
    };
    await check('live');
    await shotOf(page.locator('.message.assistant').last(), '05b-run-timeline');
    // From the session's history, as after a restart.
    await page.reload();
    await page.waitForSelector('.message.assistant .timeline', { timeout: 15_000 });
    await check('restored');
  });

  test('a validation error and the model’s correction appear', async (t) => {
    const page = await open(t);
    await say(page, 'fixer', 'write a note');
    await waitStatus(page, 'completed');
    const [first, second] = [page.locator('.part.tool[data-tool-call-id="c1"]'), page.locator('.part.tool[data-tool-call-id="c2"]')];
    assert.equal(await first.getAttribute('data-state'), 'error');
    assert.equal(await first.locator('.outcome').getAttribute('data-error-type'), 'VALIDATION');
    assert.match(await first.locator('.outcome').innerText(), /Validation error[\s\S]*path/);
    assert.equal(await second.getAttribute('data-state'), 'done');
    assert.match(await page.locator('.messages').innerText(), /I forgot the path; here is the corrected call\./);
    // Reasoning is folded once complete; the provider data part is there, folded.
    assert.equal(await page.locator('.part.reasoning').getAttribute('open'), null);
    assert.match(await page.locator('.part.data summary').innerText(), /demo\.stats/);
    await page.locator('.part.tool[data-tool-call-id="c1"] summary').click();
    await shot(page, '06-validation-and-correction');
  });

  test('an approval is clicked (after a reload) and the run continues', async (t) => {
    const page = await open(t);
    await say(page, 'writer', 'write the note');
    const approve = page.getByRole('button', { name: 'approve c1' });
    await approve.waitFor();
    await waitStatus(page, 'awaiting');
    assert.equal(await page.locator('.part.tool[data-tool-call-id="c1"]').getAttribute('data-state'), 'approval');
    assert.equal(await page.locator('#send').isDisabled(), true);
    await shot(page, '07-approval-asked');

    // Reloading while the run waits brings the question back, from the run's events.
    await page.reload();
    await approve.waitFor();
    await waitStatus(page, 'awaiting');
    assert.equal(await approve.isEnabled(), true);
    await approve.click();
    await page.waitForSelector('.approval .approved');
    await waitStatus(page, 'completed');
    assert.equal(await page.locator('.part.tool[data-tool-call-id="c1"]').getAttribute('data-state'), 'done');
    assert.equal(await lastText(page).innerText(), 'Done, the note is written.');
    assert.equal(readFileSync(path.join(server.dir, 'ws-write', FILE.path), 'utf8'), FILE.content);
    await shot(page, '08-approved-and-done');
  });

  test('a denied call does not run, and the run goes on', async (t) => {
    const page = await open(t);
    await say(page, 'denied', 'write the note');
    const deny = page.getByRole('button', { name: 'deny c1' });
    await deny.waitFor();
    await waitStatus(page, 'awaiting');
    // Keyboard only: Shift+Tab from the composer reaches the approval's buttons.
    await page.focus('#input');
    for (let i = 0; i < 8 && !(await deny.evaluate((el) => el === document.activeElement)); i++) {
      await page.keyboard.press('Shift+Tab');
    }
    await page.keyboard.press('Enter');
    await page.waitForSelector('.approval .denied');
    await waitStatus(page, 'completed');
    assert.equal(await page.locator('.part.tool[data-tool-call-id="c1"]').getAttribute('data-state'), 'denied');
    assert.equal(existsSync(path.join(server.dir, 'ws-deny', FILE.path)), false);
    await shot(page, '09a-denied');
  });

  test('stop cancels the run and keeps what came', async (t) => {
    const page = await open(t);
    await say(page, 'stopper', 'talk for a while');
    await page.waitForFunction(() => (document.querySelector('.part.text.streaming')?.textContent ?? '').length > 20);
    await page.getByRole('button', { name: 'Stop the run' }).click();
    await waitStatus(page, 'canceled');
    assert.equal(await page.locator('#run-status').innerText(), 'Stopped');
    const kept = await page.locator('.message.assistant').innerText();
    assert.ok(kept.length > 20 && kept.length < LONG.length, `kept ${kept.length} characters`);
    assert.equal(await page.locator('#send').isDisabled(), false);
    await shot(page, '09-stopped');
  });

  test('reload restores the session, and resumes a run still streaming', async (t) => {
    const page = await open(t);
    await say(page, 'talker', 'hello');
    await page.waitForFunction(() => (document.querySelector('.part.text.streaming')?.textContent ?? '').length > 5);
    const url = page.url();
    assert.match(url, /#session=ses_/);
    // Mid-stream: the page comes back to the same session and follows the run to its end.
    await page.reload();
    await waitStatus(page, 'completed');
    assert.equal(await page.locator('.message.user').count(), 1);
    assert.equal(await page.locator('.message.assistant').count(), 1);
    assert.equal(await lastText(page).innerText(), ANSWER);

    // A second turn in the same session, then a reload restores both from the history.
    await page.fill('#input', 'again');
    await page.press('#input', 'Enter');
    await page.waitForFunction(() => document.querySelectorAll('.message.assistant').length === 2);
    await waitStatus(page, 'completed');
    await page.reload();
    await page.waitForFunction(() => document.querySelectorAll('.message').length === 4);
    const texts = await page.locator('.message .part.text').allInnerTexts();
    assert.deepEqual(texts, ['hello', ANSWER, 'again', ANSWER]);
    assert.equal(page.url(), url);
    // The session is in the list, current, titled by its first message.
    const current = page.locator('.session[aria-current]');
    assert.match(await current.innerText(), /hello[\s\S]*talker/);
    await shot(page, '10-restored');

    // Opening another session from the list shows that one.
    await page.locator('.session', { hasText: /writer ·/ }).click();
    await page.waitForSelector('.part.tool[data-tool-call-id="c1"][data-state="done"]');
    assert.match(page.url(), /#session=ses_/);
    assert.notEqual(page.url(), url);
  });

  test('a phone-width screen: no sideways scrolling, sessions in a drawer', async (t) => {
    const first = await open(t);
    const session = await first.evaluate(async () => (await (await fetch('/v1/sessions?limit=100')).json()).sessions.find((s) => s.title === 'write a note').id);
    const page = await open(t, { url: `${server.url}/#session=${session}`, width: 375, height: 740 });
    await page.waitForSelector('.part.tool[data-state="done"]');
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(width <= 375, `the page is ${width}px wide`);
    assert.equal(await page.locator('#sidebar').isVisible(), false);
    const composer = await page.locator('.composer-row').boundingBox();
    assert.ok(composer && composer.x >= 0 && composer.x + composer.width <= 375);
    await shot(page, '11-phone');
    await page.getByRole('button', { name: 'Sessions' }).click();
    await page.locator('#sidebar').waitFor({ state: 'visible' });
    assert.equal(await page.getByRole('button', { name: '+ New chat' }).evaluate((el) => el === document.activeElement), true);
    await shot(page, '12-phone-sessions');
    await page.keyboard.press('Escape');
    await page.locator('#sidebar').waitFor({ state: 'hidden' });
  });

  test('with keys, a refused request is shown and the key asked for and kept', async (t) => {
    const page = await open(t, { url: keyed.url });
    const dialog = page.locator('#key-dialog');
    await dialog.waitFor();
    assert.match(await page.locator('#error').innerText(), /unauthorized/);
    await shot(page, '13-key-asked');
    await page.fill('#key-input', 's3cret');
    await page.press('#key-input', 'Enter');
    await page.waitForSelector('#agent option[value="talker"]', { state: 'attached' });
    assert.equal(await page.locator('#error').isVisible(), false);
    await say(page, 'talker', 'hi');
    await waitStatus(page, 'completed');
    assert.equal(await lastText(page).innerText(), ANSWER);
    // Kept in the browser: a reload needs no key.
    await page.reload();
    await page.waitForSelector('.message.assistant');
    assert.equal(await dialog.isVisible(), false);
  });

  test('a page of another origin cannot start a run on a server without keys', async (t) => {
    // The attacker's page, served from another origin (another port), tries every way a page
    // can reach a server it does not come from: a no-cors fetch (text/plain, no preflight), a
    // plain-text form post, a JSON fetch (preflighted), and a WebSocket.
    const marker = `csrf-${Date.now()}`;
    const target = server.url;
    const page = `<!doctype html><title>evil</title>
<iframe name="sink"></iframe>
<form id="form" method="POST" enctype="text/plain" target="sink" action="${target}/v1/runs">
<input name='{"input": [{"role": "user", "parts": [{"type": "text", "text": "${marker}-form"}]}], "x": "' value='"}'>
</form>
<script>
const body = (how) => JSON.stringify({ input: [{ role: 'user', parts: [{ type: 'text', text: '${marker}-' + how }] }] });
const tries = [
  fetch('${target}/v1/runs', { method: 'POST', mode: 'no-cors', body: body('no-cors') }).catch(() => {}),
  fetch('${target}/v1/runs', { method: 'POST', headers: { 'content-type': 'application/json' }, body: body('cors') }).catch(() => {}),
  new Promise((done) => {
    const ws = new WebSocket('${target.replace('http', 'ws')}/v1/ws', ['agentwire']);
    ws.onopen = () => ws.send(JSON.stringify({ type: 'start', ...JSON.parse(body('ws')) }));
    ws.onerror = ws.onclose = () => done();
    setTimeout(done, 3000);
  }),
];
document.getElementById('form').submit();
Promise.all(tries).then(() => setTimeout(() => { document.title = 'done'; }, 500));
</script>`;
    const evil = createServer((request, response) => {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      response.end(page);
    });
    await new Promise((ready) => evil.listen(0, '127.0.0.1', ready));
    t.after(() => evil.close());
    const context = await browser.newContext();
    t.after(() => context.close());
    const tab = await context.newPage();
    await tab.goto(`http://127.0.0.1:${evil.address().port}/`);
    await tab.waitForFunction(() => document.title === 'done', null, { timeout: 15_000 });
    await shot(tab, '15-other-origin');
    // Nothing ran: no session holds the marker.
    const listed = await (await fetch(`${target}/v1/sessions?limit=100`)).json();
    const hits = listed.sessions.filter((session) => JSON.stringify(session).includes(marker));
    assert.deepEqual(hits, []);
    // The same request from the server's own page goes through, so the check is not blocking
    // everything.
    const own = await open(t);
    const status = await own.evaluate(async (text) => {
      const response = await fetch('/v1/runs', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ agent: 'talker', input: [{ role: 'user', parts: [{ type: 'text', text }] }] }),
      });
      return response.status;
    }, `${marker}-own`);
    assert.equal(status, 200);
  });

  test('every part type renders', async (t) => {
    const page = await open(t);
    await page.evaluate(async () => {
      const { Conversation } = await import('/ui/render.js');
      const root = document.getElementById('messages');
      root.replaceChildren();
      document.getElementById('empty').hidden = true;
      const conversation = new Conversation(root, { approve: async () => true, resend: async () => true, findCall: async () => undefined });
      conversation.setRunStatus({ status: 'awaiting', awaiting: 'approval' });
      const pixel = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkaPhfDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
      conversation.add({ id: 'm1', role: 'user', parts: [{ type: 'text', text: 'Show me **everything**' }, { type: 'file', media_type: 'image/png', data: pixel, filename: 'pixel.png' }] });
      conversation.add({
        id: 'm2',
        role: 'assistant',
        metadata: { agent_name: 'assistant' },
        parts: [
          { type: 'step_start', step_id: 's1' },
          { type: 'reasoning', text: 'Thinking it over.' },
          { type: 'text', text: 'Here is `code`, **bold**, *emphasis* and https://example.com.\n\n```\nfn main() {}\n```' },
          { type: 'refusal', text: 'I will not do that part.' },
          { type: 'tool_call', tool_call_id: 't1', tool_name: 'search', args: { q: 'x' } },
          { type: 'tool_result', tool_call_id: 't1', result: { hits: 2 } },
          { type: 'tool_call', tool_call_id: 't2', tool_name: 'fetch', args: {} },
          { type: 'tool_error', tool_call_id: 't2', error_type: 'EXECUTION', message: 'timed out' },
          { type: 'step_start', step_id: 's2' },
          { type: 'tool_call', tool_call_id: 't3', tool_name: 'delete', args: { path: 'a' } },
          { type: 'approval_request', approval_id: 'a1', tool_call_id: 't3', reason: 'delete needs approval' },
          { type: 'artifact', artifact_id: 'art1', title: 'report.md', version: 2, preview: '# Report' },
          { type: 'plan_update', plan_id: 'p1', action: 'updated', details: { steps: [{ title: 'look', done: true }, { title: 'write' }] } },
          { type: 'file', media_type: 'application/pdf', url: 'https://example.com/a.pdf', filename: 'a.pdf' },
          { type: 'data', name: 'stats', data: { n: 1 } },
          { type: 'source', source_id: 'src1', url: 'https://example.com/doc', title: 'A source' },
        ],
      });
    });
    const expect = {
      '.part.file.image img[alt="pixel.png"]': 1,
      '.part.reasoning': 1,
      '.part.text strong': 2,
      '.part.text pre.code': 1,
      '.part.refusal': 1,
      '.part.tool[data-state="done"]': 1,
      '.part.tool[data-state="error"]': 1,
      '.part.tool[data-state="approval"] button.approve:not([disabled])': 1,
      '.part.artifact': 1,
      '.part.plan li.done': 1,
      '.part.file a[download="a.pdf"]': 1,
      '.part.data': 1,
      '.part.source a[href="https://example.com/doc"]': 1,
      '.part.step': 2,
    };
    for (const [selector, count] of Object.entries(expect)) {
      assert.equal(await page.locator(selector).count(), count, selector);
    }
    assert.equal(await page.locator('.part.file.image img').evaluate((img) => img.naturalWidth), 1);
    await shot(page, '14-every-part');
  });

  test('a file attached with the paperclip goes with the message and shows in it', async (t) => {
    const page = await open(t);
    await page.selectOption('#agent', 'looker');
    // A 1×1 PNG.
    const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
    const chooser = page.waitForEvent('filechooser');
    await page.click('#attach');
    await (await chooser).setFiles({ name: 'pixel.png', mimeType: 'image/png', buffer: png });
    await page.waitForSelector('#attachments .chip');
    assert.match(await page.locator('#attachments').innerText(), /pixel\.png/);
    await shot(page, '30-attached');
    await page.fill('#input', 'what is this');
    await page.press('#input', 'Enter');
    const image = page.locator('.message.user .part.file.image img');
    await image.waitFor();
    assert.equal(await image.getAttribute('src'), `data:image/png;base64,${png.toString('base64')}`);
    assert.equal(await page.locator('#attachments').isVisible(), false);
    await waitStatus(page, 'completed');
    assert.equal(await lastText(page).innerText(), 'A single red pixel.');
    await shot(page, '31-image-sent');
    // The server has the image in the message, as sent.
    const session = await (await fetch(`${server.url}/v1/sessions/${encodeURIComponent(sessionOf(page))}`)).json();
    const file = session.messages[0].parts.find((part) => part.type === 'file');
    assert.deepEqual({ media_type: file.media_type, filename: file.filename, data: file.data }, { media_type: 'image/png', filename: 'pixel.png', data: png.toString('base64') });
    assert.equal(session.state, 'idle');
  });

  test('Copy puts an answer’s text on the clipboard', async (t) => {
    const page = await open(t, { permissions: ['clipboard-read', 'clipboard-write'] });
    await say(page, 'talker', 'copy this');
    const copy = page.getByRole('button', { name: 'Copy the answer' });
    // Only once there is complete text to copy.
    await page.locator('.part.text.streaming').waitFor();
    assert.equal(await copy.isVisible(), false);
    await waitStatus(page, 'completed');
    await copy.click();
    // The clipboard write is asynchronous: the label says how it went once it has.
    let label = await copy.innerText();
    for (const deadline = Date.now() + 5_000; label === 'Copy' && Date.now() < deadline; ) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      label = await copy.innerText();
    }
    assert.equal(label, 'Copied');
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), ANSWER);
  });

  test('Markdown renders while the text streams, block by block, and model markup stays text', async (t) => {
    const page = await open(t, { permissions: ['clipboard-read', 'clipboard-write'] });
    await say(page, 'markdown', 'show me markdown');
    const streaming = '.part.text.streaming';
    // An open fence is a code block that grows.
    await page.waitForFunction(({ streaming, code }) => {
      const text = document.querySelector(`${streaming} pre.code code`)?.textContent;
      return text != null && text.length > 0 && text.length < code.length && code.startsWith(text);
    }, { streaming, code: CODE }, { timeout: 15_000 });
    // A list, a nested list and a table, before the part completes; the table, followed by
    // another block, is finished: marked now, it must be the same element at the end.
    const seen = await page.evaluate((streaming) => {
      const part = document.querySelector(streaming);
      const table = part?.querySelector('.table-wrap');
      if (table?.nextElementSibling) table.dataset.seen = 'while streaming';
      return {
        heading: part?.querySelector('h2')?.textContent,
        items: part?.querySelectorAll('ol > li').length,
        nested: part?.querySelectorAll('ol > li > ul > li').length,
        cells: [...(part?.querySelectorAll('td') ?? [])].map((cell) => cell.textContent),
        bold: part?.querySelector('td strong')?.textContent,
        marked: !!table?.dataset.seen,
      };
    }, streaming);
    assert.deepEqual(seen, { heading: 'Release notes', items: 3, nested: 2, cells: ['Lists', 'done', 'Tables', 'done'], bold: 'done', marked: true });
    await page.locator(`${streaming} pre.code`).waitFor();
    assert.equal(await page.locator(`${streaming} .code-block`).getByRole('button', { name: 'Copy the code' }).count(), 1);
    await shot(page, '22-markdown-streaming');

    await waitStatus(page, 'completed');
    const text = lastText(page);
    assert.equal(await text.locator('.table-wrap[data-seen]').count(), 1, 'the finished table was rebuilt');
    assert.equal(await text.locator('td.align-right').count(), 2);
    assert.equal(await text.locator('pre.code code').textContent(), CODE);
    assert.equal(await text.locator('pre.code code').getAttribute('data-lang'), 'python');
    assert.equal(await text.locator('blockquote').innerText(), 'A quote to finish.');
    assert.equal(await text.locator('hr').count(), 1);
    assert.deepEqual(await text.locator('p').first().locator('strong, em, code').allInnerTexts(), ['what changed', 'this', 'inline code']);
    // Links open apart, and only to http(s) or mailto; what looked like markup is text.
    const links = await text.locator('a').evaluateAll((anchors) => anchors.map((a) => [a.getAttribute('href'), a.target, a.rel]));
    assert.deepEqual(links, [['https://example.com/docs', '_blank', 'noopener noreferrer']]);
    assert.equal(await page.locator('.part.text script, .part.text img').count(), 0);
    assert.match(await text.innerText(), /<script>document\.title='pwned'<\/script> <img src=x onerror="document\.title='pwned'"> and a bad link\./);
    assert.equal(await page.title(), 'agentwire');
    await shot(page, '23-markdown-done');

    // The code block's Copy copies the code.
    const copy = text.getByRole('button', { name: 'Copy the code' });
    await copy.click();
    for (const deadline = Date.now() + 5_000; (await copy.innerText()) === 'Copy' && Date.now() < deadline; ) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.equal(await copy.innerText(), 'Copied');
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), CODE);
  });

  test('a question is edited and sent again: the conversation goes on from it in a copy of the session', async (t) => {
    const page = await open(t);
    await say(page, 'guide', 'first question');
    await waitStatus(page, 'completed');
    await page.fill('#input', 'second question');
    await page.press('#input', 'Enter');
    await page.waitForFunction(() => document.querySelectorAll('.message.assistant').length === 2);
    await waitStatus(page, 'completed');
    const original = sessionOf(page);
    const before = await storedMessages(original);

    const second = page.locator('.message.user').nth(1);
    const edit = second.getByRole('button', { name: 'Edit your message' });
    await edit.click();
    const box = second.getByRole('textbox', { name: 'Edit your message' });
    assert.equal(await box.inputValue(), 'second question');
    // Escape gives up, leaving the message as it was.
    await box.press('Escape');
    assert.equal(await box.count(), 0);
    assert.equal(await second.locator('.part.text').innerText(), 'second question');

    await edit.click();
    await box.fill('the edited question');
    await shot(page, '24-editing');
    await box.press('Enter');
    await page.waitForFunction(() => /the edited question/.test(document.querySelector('.message.assistant:last-of-type')?.textContent ?? ''));
    await waitStatus(page, 'completed');
    // The messages after the edited one are gone; the answer is to the edited question.
    assert.deepEqual(await page.locator('.message.user .part.text').allInnerTexts(), ['first question', 'the edited question']);
    assert.equal(await page.locator('.message.assistant').count(), 2);
    assert.doesNotMatch(await page.locator('.messages').innerText(), /second question/);
    await shot(page, '25-edited');

    // The page is on a copy of the session holding the first turn and the edited one; the
    // original is as it was, and both are listed.
    const forked = sessionOf(page);
    assert.notEqual(forked, original);
    const stored = await storedMessages(forked);
    assert.deepEqual(stored.map(([role]) => role), ['user', 'assistant', 'user', 'assistant']);
    assert.deepEqual(stored.slice(0, 2), before.slice(0, 2));
    assert.equal(stored[2][1], 'the edited question');
    assert.match(stored[3][1], /the edited question/);
    assert.deepEqual(await storedMessages(original), before);
    await page.locator(`.session[data-session-id="${forked}"][aria-current]`).waitFor({ state: 'attached' });
    await page.locator(`.session[data-session-id="${original}"]`).waitFor({ state: 'attached' });
  });

  test('Regenerate asks for the last answer again', async (t) => {
    const page = await open(t);
    await say(page, 'talker', 'hello');
    await waitStatus(page, 'completed');
    await page.fill('#input', 'again');
    await page.press('#input', 'Enter');
    await page.waitForFunction(() => document.querySelectorAll('.message.assistant').length === 2);
    await waitStatus(page, 'completed');
    const original = sessionOf(page);
    const ids = await page.locator('.message').evaluateAll((messages) => messages.map((m) => m.getAttribute('data-message-id')));
    // Only the last answer offers it.
    const regenerate = page.getByRole('button', { name: 'Regenerate the answer' });
    assert.equal(await page.locator('.message.assistant .regenerate').count(), 2);
    assert.equal(await page.locator('.message.assistant').first().locator('.regenerate').isVisible(), false);
    assert.equal(await regenerate.count(), 1);
    assert.equal(await page.locator('.message.assistant').last().locator('.regenerate').isVisible(), true);

    await regenerate.click();
    // While the new answer streams, nothing starts another run.
    await page.locator('.part.text.streaming').waitFor();
    assert.equal(await page.locator('.message .edit:visible, .message .regenerate:visible').count(), 0);
    await waitStatus(page, 'completed');
    assert.deepEqual(await page.locator('.message .part.text').allInnerTexts(), ['hello', ANSWER, 'again', ANSWER]);
    const now = await page.locator('.message').evaluateAll((messages) => messages.map((m) => m.getAttribute('data-message-id')));
    // The first turn is the same; the question is asked again and answered anew.
    assert.deepEqual(now.slice(0, 2), ids.slice(0, 2));
    assert.notEqual(now[2], ids[2]);
    assert.notEqual(now[3], ids[3]);
    assert.equal(await regenerate.count(), 1);
    const forked = sessionOf(page);
    assert.notEqual(forked, original);
    assert.deepEqual(await storedMessages(forked), [['user', 'hello'], ['assistant', ANSWER], ['user', 'again'], ['assistant', ANSWER]]);
    assert.equal((await storedMessages(original)).length, 4);
    await shot(page, '26-regenerated');
  });

  test('an approval whose call is not on the page gets a card with the call, and Approve works', async (t) => {
    // A run waiting for approval, started through the API.
    const started = await fetch(`${server.url}/v1/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ agent: 'orphan', input: [{ role: 'user', parts: [{ type: 'text', text: 'write it' }] }] }),
    });
    const { run } = await started.json();
    assert.equal(run.awaiting, 'approval');
    const page = await open(t);
    // The page reads the run's events with the call taken out (an empty text part in its
    // place): it sees the approval request, not the call.
    await page.route(/\/v1\/runs\/[^/]+\/events/, async (route) => {
      const response = await route.fetch();
      const hidden = new Set();
      const body = (await response.text()).split('\n').map((line) => {
        if (!line.startsWith('data: ')) return line;
        const event = JSON.parse(line.slice(6));
        const key = `${event.message_id}/${event.index}`;
        if (event.event === 'part_start' && event.type === 'tool_call') {
          hidden.add(key);
          return `data: ${JSON.stringify({ seq: event.seq, event: 'part_start', message_id: event.message_id, index: event.index, type: 'text' })}`;
        }
        if (event.event === 'part_delta' && hidden.has(key)) event.delta = '';
        if (event.event === 'part_complete' && event.part.type === 'tool_call') event.part = { type: 'text', text: '' };
        if (event.event === 'message_complete') {
          event.message.parts = event.message.parts.map((part) => (part.type === 'tool_call' ? { type: 'text', text: '' } : part));
        }
        return `data: ${JSON.stringify(event)}`;
      });
      await route.fulfill({ response, body: body.join('\n') });
    });
    await page.goto(`${server.url}/#session=${run.session_id}`);
    await waitStatus(page, 'awaiting');
    const card = page.locator('.part.tool[data-tool-call-id="c1"]');
    await card.waitFor();
    assert.equal(await page.locator('.part.note').count(), 0);
    // The name and arguments, as the server tells them.
    await card.locator('.name', { hasText: 'write_file' }).waitFor();
    assert.deepEqual(await card.locator('.approval dt').allInnerTexts(), ['path', 'content']);
    assert.deepEqual(await card.locator('.approval dd pre').allTextContents(), [ORPHAN_FILE.path, ORPHAN_FILE.content]);
    assert.match(await card.locator('.question').innerText(), /needs a person's approval/);
    assert.equal(await card.locator('.status').innerText(), 'awaiting approval');
    await shot(page, '27-approval-card-without-its-call');

    await card.getByRole('button', { name: 'approve c1' }).click();
    await waitStatus(page, 'completed');
    assert.equal(await card.locator('.approval .approved').innerText(), '✓ Approved');
    assert.equal(await card.getAttribute('data-state'), 'done');
    assert.equal(await lastText(page).innerText(), 'Written.');
    assert.equal(readFileSync(path.join(server.dir, 'ws-orphan', ORPHAN_FILE.path), 'utf8'), ORPHAN_FILE.content);
  });

  for (const { name, width, height } of VIEWPORTS) {
    test(`the view follows the tour to its final answer, and a session opens at its end (${width}×${height})`, async (t) => {
      const page = await open(t, { width, height });
      await say(page, 'guide', 'tour');
      await waitStatus(page, 'completed');
      const answer = lastText(page);
      assert.match(await answer.innerText(), /That was the whole tour/);
      // Tall cards and reasoning came before it: the view followed them all.
      assert.ok((await page.locator('.part.tool').count()) >= 4);
      // Every kind of part the tour makes is on the page: the plan (completed at the end), the
      // artifact, the image, the source and the data.
      assert.equal(await page.locator('.part.plan').count(), 3);
      assert.equal(await page.locator('.part.plan').last().getAttribute('data-action'), 'completed');
      assert.equal(await page.locator('.part.artifact').count(), 1);
      assert.match(await page.locator('.part.artifact').innerText(), /Tour summary/);
      assert.equal(await page.locator('.part.file.image img').count(), 1);
      assert.equal(await page.locator('.part.source a').getAttribute('href'), 'https://html.spec.whatwg.org/multipage/server-sent-events.html');
      assert.equal(await page.locator('.part.data').count(), 1);
      assert.ok((await belowEnd(page)) < 8, `the view is ${await belowEnd(page)}px above the end`);
      await assertInView(page, answer, 'the final answer');
      assert.equal(await page.locator('#jump').isVisible(), false);
      await shot(page, `16-tour-end-${name}`);
      // Each kind of part the tour added, as it looks (this scrolls the view up).
      const parts = {
        plan: page.locator('.part.plan').last(),
        artifact: page.locator('.part.artifact'),
        image: page.locator('.part.file.image'),
        source: page.locator('.part.source'),
        data: page.locator('.part.data'),
      };
      for (const [kind, locator] of Object.entries(parts)) await shotOf(locator, `16-tour-${kind}-${name}`);

      // Opened afresh (a link, a reload), the session shows its end, not its top.
      const reopened = await open(t, { url: page.url(), width, height });
      await reopened.waitForFunction(() => /whole tour/.test(document.querySelector('.message.assistant:last-of-type .part.text:last-child')?.textContent ?? ''));
      await reopened.waitForFunction(() => {
        const el = document.querySelector('.scroller');
        return el.scrollHeight - el.scrollTop - el.clientHeight < 8;
      });
      await assertInView(reopened, lastText(reopened), 'the final answer of the reopened session');
      await shot(reopened, `17-tour-reopened-${name}`);
    });

    test(`scrolling up stops following; Jump to latest follows again (${width}×${height})`, async (t) => {
      const page = await open(t, { width, height });
      await say(page, 'chatty', 'talk at length');
      // Following while it overflows the screen.
      await page.waitForFunction(() => {
        const el = document.querySelector('.scroller');
        return el.scrollHeight > el.clientHeight + 300;
      }, null, { timeout: 15_000 });
      assert.ok((await belowEnd(page)) < 8);
      assert.equal(await page.locator('#jump').isVisible(), false);

      // The reader scrolls up: the view stays where they put it while the answer grows.
      const box = await page.locator('.scroller').boundingBox();
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
      await page.mouse.wheel(0, -200);
      await page.locator('#jump').waitFor();
      const top = await page.locator('.scroller').evaluate((el) => el.scrollTop);
      const grown = await page.locator('.scroller').evaluate((el) => el.scrollHeight);
      await page.waitForFunction((height) => document.querySelector('.scroller').scrollHeight > height + 100, grown);
      assert.equal(await page.locator('.scroller').evaluate((el) => el.scrollTop), top);
      assert.ok((await belowEnd(page)) > 100);
      assert.equal(await status(page), 'in_progress');
      await shot(page, `18-scrolled-up-${name}`);

      // Jump to latest: back at the end, and following again as more comes.
      await page.getByRole('button', { name: 'Jump to latest' }).click();
      await page.locator('#jump').waitFor({ state: 'hidden' });
      await page.waitForFunction(() => {
        const el = document.querySelector('.scroller');
        return el.scrollHeight - el.scrollTop - el.clientHeight < 8;
      });
      const after = await page.locator('.scroller').evaluate((el) => el.scrollHeight);
      await page.waitForFunction((height) => document.querySelector('.scroller').scrollHeight > height + 100, after);
      assert.ok((await belowEnd(page)) < 8, 'following again after the jump');
      assert.equal(await status(page), 'in_progress');
      await page.getByRole('button', { name: 'Stop the run' }).click();
      await waitStatus(page, 'canceled');
    });

    test(`an approval card shows what it approves, folded and as text (${width}×${height})`, async (t) => {
      const page = await open(t, { width, height });
      await say(page, 'long-writer', 'write the long note');
      const card = page.locator('.part.tool[data-tool-call-id="c1"]');
      await page.getByRole('button', { name: 'approve c1' }).waitFor();
      await waitStatus(page, 'awaiting');
      assert.equal(await card.locator('.status').innerText(), 'awaiting approval');
      // The arguments are on the card, beside the buttons, not in a folded box.
      assert.deepEqual(await card.locator('.approval dt').allInnerTexts(), ['path', 'content']);
      const [pathValue, content] = [card.locator('.approval dd pre').first(), card.locator('.approval dd pre').nth(1)];
      assert.equal(await pathValue.textContent(), LONG_FILE.path);
      assert.equal(await card.locator('.args-box').isVisible(), false);
      // Long: folded, with a button that shows it whole; markup stays text.
      const folded = await content.textContent();
      assert.ok(folded.length < LONG_FILE.content.length && folded.endsWith('…'), `folded: ${folded.length} characters`);
      assert.ok(LONG_FILE.content.startsWith(folded.slice(0, -1)));
      assert.equal(await card.locator('img, b').count(), 0);
      await assertInView(page, page.getByRole('button', { name: 'approve c1' }), 'the Approve button');
      await shot(page, `19-approval-args-${name}`);
      await card.getByRole('button', { name: `Show all ${LONG_FILE.content.length} characters` }).click();
      assert.equal(await content.textContent(), LONG_FILE.content);
      assert.equal(await page.title(), 'agentwire');
      await shot(page, `20-approval-args-whole-${name}`);

      await page.getByRole('button', { name: 'approve c1' }).click();
      await waitStatus(page, 'completed');
      // The answer joins the card; what was approved stays on it.
      assert.equal(await card.locator('.approval .approved').innerText(), '✓ Approved');
      assert.equal(await card.locator('.approval dt').count(), 2);
      assert.equal(readFileSync(path.join(server.dir, 'ws-long', LONG_FILE.path), 'utf8'), LONG_FILE.content);
    });

    test(`every tool-call state has a label, and a new chat is listed at once (${width}×${height})`, async (t) => {
      const page = await open(t, { width, height });
      const seen = await watchToolStates(page);
      const title = `the long job ${name}`;
      await say(page, 'slow-args', title);
      // Listed while its run still goes on, as the current session.
      const listed = page.locator('.session[aria-current]', { hasText: title });
      await listed.waitFor({ state: 'attached', timeout: 5_000 });
      assert.notEqual(await status(page), 'completed');
      // State and label read together: the arguments stream for under a second.
      await page.waitForFunction(() => document.querySelector('.part.tool[data-state="preparing"] .status')?.textContent === 'streaming arguments', null, { timeout: 15_000 });
      await shot(page, `21-tool-streaming-arguments-${name}`);
      await waitStatus(page, 'completed');
      const { states, labels, unlabeled } = await seen();
      assert.equal(unlabeled, 0, 'a tool card was shown without a label');
      for (const state of ['preparing', 'running', 'done']) assert.ok(states.includes(state), `state ${state} not seen in ${states}`);
      for (const label of ['streaming arguments', 'running', 'done']) assert.ok(labels.includes(label), `label "${label}" not seen in ${labels}`);
    });
  }
});
