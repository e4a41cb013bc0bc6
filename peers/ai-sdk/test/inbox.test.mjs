// The real AI SDK Chat sending a message while a run of its chat streams, against a live
// `agentwire serve`: the second Chat (a second tab of the same chat id) names the mode in
// useChat's `body` option, and the SDK itself parses and validates the answer. A steer comes
// back as the v7 `steering-message` part of the answer (the client says `aiSdkVersion: 7`) and
// its outcome in a transient `data-agentwire-input` part (onData); a queued message's answer is
// the run it starts once the first has ended; interrupt cancels the first run; reject is a 409.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DefaultChatTransport } from 'ai';
import { Chat } from '../chat.mjs';
import { startAgentwire } from '../../agentwire-server.mjs';

const WORDS = Array.from({ length: 30 }, (_, n) => `word${n} `);

/** Every run: paced text and a `list_files` call (a step boundary), then an answer. */
const scripts = {
  'worker.json': {
    turns: [
      [
        ...WORDS.map((text) => ({ type: 'text_delta', text })),
        { type: 'tool_call_start', id: 'l1', name: 'list_files' },
        { type: 'tool_call_delta', id: 'l1', args: '{"path": "."}' },
        { type: 'tool_call_end', id: 'l1' },
        { type: 'finish', reason: 'tool_calls' },
      ],
      [
        { type: 'text_delta', text: 'done' },
        { type: 'finish', reason: 'stop' },
      ],
    ],
  },
};

const config = `
[[agents]]
name = "worker"
provider = "scripted"
script = "worker.json"
tokens_per_second = 30
tools = ["list_files"]
workspace = "ws"
`;

let server;
let url;

before(async () => {
  server = await startAgentwire({ config, files: scripts, dirs: ['ws'] });
  ({ url } = server);
});
after(() => server?.stop());

/** A Chat of chat `id` whose requests carry `body`, recording the data parts it is given. */
function chatOf(id, body = {}) {
  const data = [];
  const chat = new Chat({
    id,
    transport: new DefaultChatTransport({ api: `${url}/api/chat`, body }),
    onData: (part) => data.push(part),
  });
  return { chat, data };
}

const texts = (message) => message.parts.filter((part) => part.type === 'text').map((part) => part.text).join('');
/** Waits until the chat streams its answer (the run works). */
async function streaming(chat) {
  const deadline = Date.now() + 15_000;
  while (chat.status !== 'streaming') {
    assert.ok(Date.now() < deadline, `chat still ${chat.status}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('AI SDK Chat: a message while the chat streams', () => {
  test('steer: the answer goes on with the steering message and a delivered outcome', async () => {
    const first = chatOf('inbox-steer');
    const firstDone = first.chat.sendMessage({ text: 'start' });
    await streaming(first.chat);
    const second = chatOf('inbox-steer', { mode: 'steer', aiSdkVersion: 7 });
    await second.chat.sendMessage({ text: 'answer in French' });
    await firstDone;
    assert.equal(second.chat.error, undefined, `chat error: ${second.chat.error?.message}`);
    const answer = second.chat.messages.at(-1);
    assert.equal(answer.role, 'assistant');
    const steering = answer.parts.filter((part) => part.type === 'steering-message');
    assert.equal(steering.length, 1, JSON.stringify(answer.parts));
    assert.deepEqual(steering[0].parts, [{ type: 'text', text: 'answer in French' }]);
    assert.ok(texts(answer).endsWith('done'), texts(answer));
    assert.ok(!texts(answer).includes('answer in French'), 'the steer is not assistant text');
    const outcome = second.data.find((part) => part.type === 'data-agentwire-input');
    assert.equal(outcome?.data.outcome, 'delivered', JSON.stringify(second.data));
    assert.equal(outcome.data.step, 1);
    // The first tab heard of it too.
    assert.ok(first.data.some((part) => part.data?.outcome === 'delivered'), JSON.stringify(first.data));
  });

  test('queue: the answer is the run the message starts, after the first', async () => {
    const first = chatOf('inbox-queue');
    const firstDone = first.chat.sendMessage({ text: 'start' });
    await streaming(first.chat);
    const second = chatOf('inbox-queue', { mode: 'queue' });
    await second.chat.sendMessage({ text: 'then this' });
    await firstDone;
    assert.equal(second.chat.error, undefined, `chat error: ${second.chat.error?.message}`);
    assert.equal(first.chat.status, 'ready');
    const answer = second.chat.messages.at(-1);
    assert.equal(answer.role, 'assistant');
    assert.ok(texts(answer).startsWith('word0'), texts(answer));
    assert.ok(texts(answer).endsWith('done'));
    assert.ok(answer.parts.every((part) => part.type !== 'steering-message'));
    assert.deepEqual(
      second.data.map((part) => part.data.outcome),
      ['delivered'],
      'its own run reports it delivered at its start',
    );
    assert.ok(first.data.some((part) => part.data?.outcome === 'queued'), JSON.stringify(first.data));
  });

  test('interrupt: the first run ends aborted and the message runs at once', async () => {
    const first = chatOf('inbox-interrupt');
    const firstDone = first.chat.sendMessage({ text: 'start' });
    await streaming(first.chat);
    const second = chatOf('inbox-interrupt', { mode: 'interrupt' });
    await second.chat.sendMessage({ text: 'stop, do this' });
    await firstDone;
    assert.equal(second.chat.error, undefined, `chat error: ${second.chat.error?.message}`);
    assert.ok(texts(second.chat.messages.at(-1)).endsWith('done'));
    assert.ok(!texts(first.chat.messages.at(-1)).endsWith('done'), 'the first run was cut short');
  });

  test('reject: a 409 the SDK reports as the error', async () => {
    const first = chatOf('inbox-reject');
    const firstDone = first.chat.sendMessage({ text: 'start' });
    await streaming(first.chat);
    const second = chatOf('inbox-reject', { mode: 'reject' });
    await second.chat.sendMessage({ text: 'no' });
    assert.equal(second.chat.status, 'error');
    assert.match(second.chat.error.message, /session_busy/);
    await firstDone;
    assert.ok(texts(first.chat.messages.at(-1)).endsWith('done'));
  });
});
