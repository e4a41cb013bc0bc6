// Runs every golden transcript of agentwire's AI SDK encoder through the real client, in both
// modes (Chat + DefaultChatTransport as useChat does, and readUIMessageStream), and checks that
// the client rebuilds exactly the UIMessage the Rust tests expect (golden/ai-sdk/<name>.ui.json,
// which the Rust tests also decode back as a request into the canonical scenario message).
// Then the approval round trip: the request the SDK sends after addToolApprovalResponse must be
// golden/ai-sdk/approval.round2.request.json, which the Rust tests decode. Finally, damaged
// transcripts the client must refuse.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const peerDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const decodeScript = path.join(peerDir, 'decode.mjs');
const goldenDir = path.resolve(peerDir, '..', '..', 'crates', 'dialects', 'tests', 'golden');
const golden = (file) => path.join(goldenDir, 'ai-sdk', file);
const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'));
const tmp = mkdtempSync(path.join(tmpdir(), 'agentwire-ai-sdk-golden-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

function decode(args, input) {
  const r = spawnSync(process.execPath, [decodeScript, ...args], { input, encoding: 'utf8', timeout: 60_000 });
  if (r.error) throw r.error;
  assert.equal(r.status, 0, `decode.mjs ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

// Every transcript with an expected message: the scenarios, plus the Rust tests' extras (such
// as every_part, which has no scenario file and so no input or error).
const scenarioFile = (name) => path.join(goldenDir, 'scenarios', `${name}.json`);
const scenarios = readdirSync(path.join(goldenDir, 'ai-sdk'))
  .filter((file) => file.endsWith('.ui.json'))
  .map((file) => file.slice(0, -'.ui.json'.length))
  .map((name) =>
    existsSync(scenarioFile(name))
      ? readJson(scenarioFile(name))
      : { name, about: 'an extra transcript', input: [{ parts: [{ text: 'hello' }] }], status: {} },
  );

test('every scenario has a transcript', () => {
  const names = readdirSync(path.join(goldenDir, 'scenarios')).map((file) => file.replace(/\.json$/, ''));
  assert.ok(names.length >= 9, `${names.length} scenarios`);
  for (const name of names) assert.ok(scenarios.some((scenario) => scenario.name === name), name);
  assert.ok(scenarios.some((scenario) => scenario.name === 'every_part'));
});

for (const scenario of scenarios) {
  describe(`${scenario.name}: ${scenario.about}`, () => {
    const transcript = golden(`${scenario.name}.sse`);
    const expected = readJson(golden(`${scenario.name}.ui.json`));
    const userText = scenario.input[0].parts[0].text;
    const error = scenario.status.error?.message ?? null;
    const chunks = readFileSync(transcript, 'utf8')
      .split('\n\n')
      .filter((frame) => frame.startsWith('data: ') && frame !== 'data: [DONE]');
    const dataFrames = chunks.length;
    // An error chunk ends a chat's request: what follows it is never read.
    const errorAt = chunks.findIndex((frame) => frame.includes('"type":"error"'));
    const chatFrames = errorAt === -1 ? dataFrames : errorAt + 1;

    test('chat mode (useChat): the user message, then the expected assistant message', () => {
      const out = decode(['--mode', 'chat', '--text', userText, '--user-id', 'msg_user', transcript]);
      assert.equal(out.error, error);
      assert.equal(out.chunks, chatFrames, 'every chunk passed the schema');
      assert.deepEqual(out.messages, [{ id: 'msg_user', role: 'user', parts: [{ type: 'text', text: userText }] }, expected]);
    });

    test('read mode (readUIMessageStream): the expected assistant message', () => {
      const out = decode(['--mode', 'read', transcript]);
      assert.equal(out.error, error);
      assert.equal(out.chunks, dataFrames);
      assert.deepEqual(out.messages, [expected]);
    });
  });
}

describe('approval round trip', () => {
  test('addToolApprovalResponse then sendMessage() posts the golden round-2 request', () => {
    const dump = path.join(tmp, 'requests.json');
    const args = ['--text', 'Delete old.log', '--user-id', 'msg_user', '--approve', 'apr_1', '--dump-request', dump];
    const out = decode([...args, golden('approval.sse')]);
    assert.equal(out.error, null);
    const requests = readJson(dump);
    assert.equal(requests.length, 2);
    assert.equal(requests[1].method, 'POST');
    assert.deepEqual(requests[1].body, readJson(golden('approval.round2.request.json')));
  });

  test('round 2 continues the same assistant message', () => {
    const next = path.join(tmp, 'round2.sse');
    writeFileSync(
      next,
      [
        { type: 'start', messageId: 'msg_1' },
        { type: 'tool-output-available', toolCallId: 'call_1', output: { deleted: true } },
        { type: 'finish', finishReason: 'stop' },
      ]
        .map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`)
        .join('') + 'data: [DONE]\n\n',
    );
    const out = decode(['--text', 'Delete old.log', '--approve', 'apr_1', '--next', next, golden('approval.sse')]);
    assert.equal(out.error, null);
    assert.equal(out.messages.length, 2);
    const tool = out.messages[1].parts.find((part) => part.toolCallId === 'call_1');
    assert.equal(tool.state, 'output-available');
    assert.deepEqual(tool.output, { deleted: true });
    assert.equal(tool.approval.approved, true);
  });
});

describe('an approval three sub-agents down, answered on its surfaced part', () => {
  const args = ['--text', 'Clean up the logs', '--user-id', 'msg_user', '--approve', 'run_d:apr_1'];

  test('the cleaner\'s call is a tool part of the message, in a last step of its own, which the app answers', async () => {
    const { lastAssistantMessageIsCompleteWithApprovalResponses } = await import('ai');
    const waiting = readJson(golden('subagent_approval.ui.json'));
    const part = waiting.parts.find((p) => p.toolCallId === 'run_d:call_del');
    assert.equal(part.state, 'approval-requested');
    assert.deepEqual(part.callProviderMetadata, { agentwire: { runId: 'run_d' } });
    const director = waiting.parts.find((p) => p.toolCallId === 'call_1');
    assert.equal(director.preliminary, true, 'the director\'s progress is its call\'s preliminary output');
    assert.equal(director.output.metadata.status, 'awaiting');
    const cleaner = director.output.parts.find((p) => p.toolCallId === 'call_m').output.parts.find((p) => p.toolCallId === 'call_c').output;
    assert.deepEqual(cleaner.metadata, { runId: 'run_d', agentName: 'cleaner', status: 'awaiting' });
    assert.equal(lastAssistantMessageIsCompleteWithApprovalResponses({ messages: [waiting] }), false);
    const answered = readJson(golden('subagent_approval.round2.request.json')).messages;
    assert.equal(
      lastAssistantMessageIsCompleteWithApprovalResponses({ messages: answered }),
      true,
      'useChat sends the answer by itself (sendAutomaticallyWhen)',
    );
  });

  test('addToolApprovalResponse then sendMessage() posts the golden round-2 request', () => {
    const dump = path.join(tmp, 'subagent-requests.json');
    const out = decode([...args, '--dump-request', dump, golden('subagent_approval.sse')]);
    assert.equal(out.error, null);
    const requests = readJson(dump);
    assert.equal(requests.length, 2);
    assert.deepEqual(requests[1].body, readJson(golden('subagent_approval.round2.request.json')));
  });

  test('round 2 finishes the surfaced part and the director\'s call in the same message', () => {
    const out = decode([...args, '--next', golden('subagent_approval.round2.sse'), golden('subagent_approval.sse')]);
    assert.equal(out.error, null);
    assert.equal(out.messages.length, 2);
    assert.deepEqual(out.messages[1], readJson(golden('subagent_approval.round2.end.json')));
  });
});

describe('damaged transcripts are refused by the client', () => {
  const frames = (name) => readFileSync(golden(`${name}.sse`), 'utf8').split('\n\n').filter(Boolean);
  const damaged = (name, damage) => `${damage(frames(name)).join('\n\n')}\n\n`;

  const cases = [
    ['a text-delta whose text-start is gone', 'text', (f) => f.filter((x) => !x.includes('"text-start"')), /missing text part/],
    ['a tool-input-delta whose tool-input-start is gone', 'tool_call', (f) => f.filter((x) => !x.includes('"tool-input-start"')), /missing tool call/],
    ['an approval request for a call that is not there', 'approval', (f) => f.filter((x) => !x.includes('"tool-input')), /No tool invocation found/],
    ['a finishReason the schema does not allow', 'text', (f) => f.map((x) => x.replace('"finishReason":"stop"', '"finishReason":"unknown"')), /Type validation failed/],
    ['tool-input-available without input', 'tool_call', (f) => f.map((x) => x.replace(/,"input":\{[^}]*\}/, '')), /Type validation failed/],
  ];
  for (const [what, name, damage, message] of cases) {
    test(what, () => {
      const input = damaged(name, damage);
      for (const mode of ['chat', 'read']) {
        const out = decode(['--mode', mode, '-'], input);
        assert.match(out.error ?? '', message, mode);
      }
    });
  }
});
