// Runs the captured AI SDK streams (and some broken ones) through decode.mjs,
// which hands them to the real `ai` client code, and checks what comes out.
//
// The captures live beside the repository: <repo>/../shared/protocols/ai-sdk-examples
// (<repo> is two levels above peers/ai-sdk). AGENTWIRE_AI_SDK_EXAMPLES overrides it.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const peerDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const decodeScript = path.join(peerDir, 'decode.mjs');
const repoRoot = path.resolve(peerDir, '..', '..');
const examplesDir =
  process.env.AGENTWIRE_AI_SDK_EXAMPLES ?? path.resolve(repoRoot, '..', 'shared', 'protocols', 'ai-sdk-examples');

const example = (name) => path.join(examplesDir, name);
const tmp = mkdtempSync(path.join(tmpdir(), 'agentwire-ai-sdk-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

/** Runs decode.mjs; returns {status, stdout, stderr, out (parsed stdout, if any)}. */
function run(args, { input } = {}) {
  const r = spawnSync(process.execPath, [decodeScript, ...args], { input, encoding: 'utf8', timeout: 60_000 });
  if (r.error) throw r.error;
  let out;
  if (r.status === 0) {
    assert.doesNotThrow(() => {
      out = JSON.parse(r.stdout);
    }, `stdout is not one JSON object: ${r.stdout}`);
  }
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, out };
}

/** Decodes and insists on a clean exit with the documented output shape. */
function decode(args, options) {
  const r = run(args, options);
  assert.equal(r.status, 0, `decode.mjs ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  assert.deepEqual(Object.keys(r.out).sort(), ['chunks', 'error', 'messages']);
  assert.ok(Array.isArray(r.out.messages));
  assert.equal(typeof r.out.chunks, 'number');
  return r.out;
}

const sse = (...chunks) => chunks.map((c) => `data: ${typeof c === 'string' ? c : JSON.stringify(c)}\n\n`).join('');

const assistant = (out) => {
  const last = out.messages.at(-1);
  assert.equal(last?.role, 'assistant', `no assistant message in ${JSON.stringify(out.messages)}`);
  return last;
};

test('the captured streams are where CI puts them', () => {
  assert.ok(
    existsSync(examplesDir),
    `missing ${examplesDir}: check out shared/ beside the repository or set AGENTWIRE_AI_SDK_EXAMPLES`,
  );
});

describe('streamtext-tools.sse (reasoning, text, two tools, two steps)', () => {
  const file = example('streamtext-tools.sse');

  function checkAssistant(out) {
    assert.equal(out.error, null);
    assert.equal(out.chunks, 22, 'every data frame but [DONE] is a chunk');
    const msg = assistant(out);
    assert.equal(msg.id, 'msg_ref_1');
    assert.deepEqual(
      msg.parts.map((p) => p.type),
      ['step-start', 'reasoning', 'text', 'tool-getWeather', 'tool-readFile', 'step-start', 'text'],
    );
    const [, reasoning, text1, weather, readFile, , text2] = msg.parts;
    assert.deepEqual(reasoning, { type: 'reasoning', id: 'r1', text: 'Need weather.', state: 'done' });
    assert.deepEqual(text1, { type: 'text', text: 'Checking.', state: 'done' });
    assert.deepEqual(weather, {
      type: 'tool-getWeather',
      toolCallId: 'call_1',
      state: 'output-available',
      input: { city: 'Paris' },
      output: { city: 'Paris', tempC: 21 },
    });
    assert.deepEqual(readFile, {
      type: 'tool-readFile',
      toolCallId: 'call_2',
      state: 'output-error',
      input: { path: '/etc/shadow' },
      errorText: 'Error: EACCES: permission denied',
    });
    assert.deepEqual(text2, { type: 'text', text: 'Sunny, 21C.', state: 'done' });
    return msg;
  }

  test('chat mode: user message, then the assistant message the stream builds', () => {
    const out = decode(['--mode', 'chat', '--text', 'What is the weather in Paris?', file]);
    assert.equal(out.messages.length, 2);
    assert.equal(out.messages[0].role, 'user');
    assert.deepEqual(out.messages[0].parts, [{ type: 'text', text: 'What is the weather in Paris?' }]);
    checkAssistant(out);
  });

  test('read mode: the same assistant message', () => {
    const out = decode(['--mode', 'read', file]);
    assert.equal(out.messages.length, 1);
    checkAssistant(out);
  });

  test('both modes agree exactly', () => {
    const chat = decode(['--mode', 'chat', file]);
    const read = decode(['--mode', 'read', file]);
    assert.deepEqual(assistant(chat), read.messages[0]);
  });
});

describe('approval-round1.sse (a tool call waiting for approval)', () => {
  const file = example('approval-round1.sse');
  for (const mode of ['chat', 'read']) {
    test(`${mode} mode: the tool part is approval-requested`, () => {
      const out = decode(['--mode', mode, file]);
      assert.equal(out.error, null);
      assert.equal(out.chunks, 6);
      assert.equal(out.messages.length, mode === 'chat' ? 2 : 1);
      const msg = assistant(out);
      assert.equal(msg.id, 'msg_ref_2');
      assert.deepEqual(msg.parts, [
        { type: 'step-start' },
        {
          type: 'tool-deleteFile',
          toolCallId: 'call_del',
          state: 'approval-requested',
          input: { path: '/tmp/x' },
          approval: { id: 'aitxt-k9ZWYruxlAVUi7uY2sOTM5oG' },
        },
      ]);
    });
  }
});

describe('approval-round2.sse (continuing the approved assistant message)', () => {
  const file = example('approval-round2.sse');
  const requestFile = example('approval-round2.request.json');
  const recorded = () => JSON.parse(readFileSync(requestFile, 'utf8'));

  const expectedParts = [
    { type: 'step-start' },
    {
      type: 'tool-deleteFile',
      toolCallId: 'call_del',
      state: 'output-available',
      input: { path: '/tmp/x' },
      approval: { id: 'aitxt-k9ZWYruxlAVUi7uY2sOTM5oG', approved: true },
      output: { deleted: true },
    },
    { type: 'step-start' },
    { type: 'text', text: 'Deleted.', state: 'done' },
  ];

  test('chat mode: sendMessage() continues msg_ref_2 and posts exactly the recorded request', () => {
    const dump = path.join(tmp, 'round2-request.json');
    const args = ['--mode', 'chat', '--messages', requestFile, '--chat-id', 'chat-ref', '--dump-request', dump, file];
    const out = decode(args);
    assert.equal(out.error, null);
    assert.equal(out.chunks, 8);
    assert.equal(out.messages.length, 2, 'the assistant message is continued, not appended');
    assert.deepEqual(out.messages[0], recorded().messages[0]);
    const msg = assistant(out);
    assert.equal(msg.id, 'msg_ref_2');
    assert.deepEqual(msg.parts, expectedParts);

    const request = JSON.parse(readFileSync(dump, 'utf8'));
    assert.equal(request.method, 'POST');
    assert.equal(request.url, '/api/chat');
    assert.equal(request.headers['content-type'], 'application/json');
    assert.deepEqual(request.body, recorded());
  });

  test('read mode: readUIMessageStream continues the given message', () => {
    const out = decode(['--mode', 'read', '--messages', requestFile, file]);
    assert.equal(out.error, null);
    assert.equal(out.messages.length, 1);
    assert.equal(out.messages[0].id, 'msg_ref_2');
    assert.deepEqual(out.messages[0].parts, expectedParts);
  });

  test('without the history the client has no tool call to attach the output to', () => {
    for (const mode of ['chat', 'read']) {
      const out = decode(['--mode', mode, file]);
      assert.match(out.error ?? '', /No tool invocation found for tool call ID "call_del"/, mode);
    }
  });
});

describe('broken streams', () => {
  const start = { type: 'start', messageId: 'm1' };

  test('a text-delta without text-start is an error in chat mode (and read mode)', () => {
    const input = sse(start, { type: 'text-delta', id: 't1', delta: 'Hi' }, { type: 'text-end', id: 't1' }, '[DONE]');
    const chat = decode(['--mode', 'chat', '-'], { input });
    assert.notEqual(chat.error, null);
    assert.match(chat.error, /text-delta for missing text part with ID "t1"/);
    assert.deepEqual(assistant(chat).parts, []);
    const read = decode(['--mode', 'read', '-'], { input });
    assert.match(read.error ?? '', /text-delta for missing text part/);
  });

  test('a chunk with an unknown type fails the schema and ends the response', () => {
    const input = sse(
      start,
      { type: 'text-start', id: 't1' },
      { type: 'text-delta', id: 't1', delta: 'Hi' },
      { type: 'text-bogus', id: 't1' },
      { type: 'text-end', id: 't1' },
      '[DONE]',
    );
    const chat = decode(['--mode', 'chat', '-'], { input });
    assert.notEqual(chat.error, null);
    assert.match(chat.error, /^Type validation failed: Value: \{"type":"text-bogus"/);
    assert.equal(chat.chunks, 3, 'the chunks after the bad one are never seen');
    assert.deepEqual(assistant(chat).parts, [{ type: 'text', text: 'Hi', state: 'streaming' }]);
    const read = decode(['--mode', 'read', '-'], { input });
    assert.match(read.error ?? '', /^Type validation failed/);
  });

  test('a chunk missing a required key (tool-input-available without input) fails the schema', () => {
    const input = sse(start, { type: 'tool-input-available', toolCallId: 'c1', toolName: 'x' }, '[DONE]');
    assert.match(decode(['--mode', 'chat', '-'], { input }).error ?? '', /^Type validation failed/);
  });

  test('finishReason "unknown" (allowed in v5) is rejected', () => {
    const input = sse(start, { type: 'finish', finishReason: 'unknown' }, '[DONE]');
    assert.match(decode(['--mode', 'chat', '-'], { input }).error ?? '', /^Type validation failed/);
  });

  test('a __proto__ key is rejected by secure-json-parse', () => {
    const input = sse(start, '{"type":"data-x","data":{"__proto__":{"a":1}}}', '[DONE]');
    assert.match(decode(['--mode', 'chat', '-'], { input }).error ?? '', /forbidden prototype property/);
  });
});

describe('what the client tolerates and how it treats an error chunk', () => {
  const start = { type: 'start', messageId: 'm1' };
  const hello = [
    start,
    { type: 'text-start', id: 't1' },
    { type: 'text-delta', id: 't1', delta: 'Hi' },
    { type: 'text-end', id: 't1' },
  ];

  test('an error chunk: chat stops and reports errorText; read reports it and keeps going', () => {
    const input = sse(
      start,
      { type: 'text-start', id: 't1' },
      { type: 'text-delta', id: 't1', delta: 'Hi' },
      { type: 'error', errorText: 'boom' },
      { type: 'text-delta', id: 't1', delta: ' there' },
      { type: 'text-end', id: 't1' },
      '[DONE]',
    );
    const chat = decode(['--mode', 'chat', '-'], { input });
    assert.equal(chat.error, 'boom');
    assert.deepEqual(assistant(chat).parts, [{ type: 'text', text: 'Hi', state: 'streaming' }]);
    const read = decode(['--mode', 'read', '-'], { input });
    assert.equal(read.error, 'boom');
    assert.deepEqual(read.messages[0].parts, [{ type: 'text', text: 'Hi there', state: 'done' }]);
  });

  test('a missing [DONE] is tolerated', () => {
    const withDone = decode(['-'], { input: sse(...hello, { type: 'finish' }, '[DONE]') });
    const withoutDone = decode(['-'], { input: sse(...hello, { type: 'finish' }) });
    assert.equal(withoutDone.error, null);
    assert.deepEqual(withoutDone, withDone);
  });

  test('an unterminated last frame (no blank line) is dropped silently', () => {
    const input = `${sse(...hello)}data: ${JSON.stringify({ type: 'finish' })}`;
    const out = decode(['-'], { input });
    assert.equal(out.error, null);
    assert.equal(out.chunks, 4, 'the finish frame was never dispatched');
  });

  test('unknown fields pass; data parts keep them, other parts drop them', () => {
    const input = sse(
      { ...start, extra: 1 },
      { type: 'text-start', id: 't1', extra: 'x' },
      { type: 'text-delta', id: 't1', delta: 'Hi', extra: [1] },
      { type: 'text-end', id: 't1' },
      { type: 'data-weather', id: 'w1', data: { c: 1 }, extra: 'kept' },
      { type: 'finish', finishReason: 'stop', extra: true },
      '[DONE]',
    );
    for (const mode of ['chat', 'read']) {
      const out = decode(['--mode', mode, '-'], { input });
      assert.equal(out.error, null, mode);
      assert.deepEqual(assistant(out).parts, [
        { type: 'text', text: 'Hi', state: 'done' },
        { type: 'data-weather', id: 'w1', data: { c: 1 }, extra: 'kept' },
      ]);
    }
  });

  test('SSE comments, event:, id:, CRLF and multi-line data are all fine', () => {
    const input =
      ': stream-open\n\n' +
      'event: message\nid: 1\ndata: {"type":"start","messageId":"m1"}\r\n\r\n' +
      ': keep-alive\n\n' +
      'data: {"type":"text-start","id":"t1"}\n\n' +
      'data: {"type":"text-delta",\ndata: "id":"t1","delta":"Hi"}\n\n' +
      'data: {"type":"text-end","id":"t1"}\n\ndata: [DONE]\n\n';
    const out = decode(['-'], { input });
    assert.equal(out.error, null);
    assert.equal(out.chunks, 4);
    assert.equal(assistant(out).id, 'm1');
    assert.deepEqual(assistant(out).parts, [{ type: 'text', text: 'Hi', state: 'done' }]);
  });

  test('without a start chunk the chat makes up the message id', () => {
    const out = decode(['-'], { input: sse(...hello.slice(1)) });
    assert.equal(out.error, null);
    assert.equal(assistant(out).id, 'gen-2', 'the harness id generator: gen-1 is the user message');
  });
});

describe('resumable streams', () => {
  test('resume: GET {api}/{chatId}/stream, and the replay rebuilds the message from its start', () => {
    const history = path.join(tmp, 'resume-history.json');
    const dump = path.join(tmp, 'resume-request.json');
    writeFileSync(
      history,
      JSON.stringify([
        { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'hi' }] },
        { id: 'm1', role: 'assistant', parts: [{ type: 'text', text: 'stale partial', state: 'streaming' }] },
      ]),
    );
    const input = sse(
      { type: 'start', messageId: 'm1' },
      { type: 'text-start', id: 't1' },
      { type: 'text-delta', id: 't1', delta: 'Hi' },
      { type: 'text-end', id: 't1' },
      { type: 'finish' },
      '[DONE]',
    );
    const args = ['--trigger', 'resume', '--chat-id', 'c/1', '--messages', history, '--dump-request', dump, '-'];
    const out = decode(args, { input });
    assert.equal(out.error, null);
    assert.equal(out.messages.length, 2);
    assert.deepEqual(assistant(out), { id: 'm1', role: 'assistant', parts: [{ type: 'text', text: 'Hi', state: 'done' }] });
    const request = JSON.parse(readFileSync(dump, 'utf8'));
    assert.equal(request.method, 'GET');
    assert.equal(request.url, '/api/chat/c%2F1/stream');
  });
});

describe('decode.mjs command line', () => {
  test('misuse exits 2 with a message on stderr', () => {
    const misuses = [
      [],
      ['--mode', 'nope', '-'],
      ['--bogus', '-'],
      ['a.sse', 'b.sse'],
      [path.join(tmp, 'missing.sse')],
      ['--mode', 'read', '--trigger', 'resume', '-'],
      ['--messages'],
      ['--approve', 'a', '--deny', 'b', '-'],
      ['--next', 'x.sse', '-'],
      ['--mode', 'read', '--approve', 'a', '-'],
    ];
    for (const args of misuses) {
      const r = run(args, { input: '' });
      assert.equal(r.status, 2, `${JSON.stringify(args)} exited ${r.status}`);
      assert.equal(r.stdout, '');
      assert.match(r.stderr, /^decode\.mjs: /);
    }
  });

  test('a history that is not UIMessages is misuse', () => {
    const bad = path.join(tmp, 'bad-history.json');
    writeFileSync(bad, JSON.stringify({ messages: [{ role: 'user' }] }));
    const r = run(['--messages', bad, '-'], { input: '' });
    assert.equal(r.status, 2);
    assert.match(r.stderr, /message 0 needs/);
  });

  test('an empty body is no error: the chat just gets no assistant message', () => {
    const chat = decode(['-'], { input: '' });
    assert.deepEqual(chat, {
      messages: [{ parts: [{ type: 'text', text: 'hello' }], id: 'gen-1', role: 'user' }],
      error: null,
      chunks: 0,
    });
    assert.deepEqual(decode(['--mode', 'read', '-'], { input: '' }), { messages: [], error: null, chunks: 0 });
  });
});
