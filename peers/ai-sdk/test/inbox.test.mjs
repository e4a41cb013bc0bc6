// The real AI SDK Chat sending a message while a run of its chat streams, against a live
// `agentwire serve`: the second Chat (a second tab of the same chat id) names the mode in
// useChat's `body` option, and the SDK itself parses and validates the answer. A steer comes
// back as the v7 `steering-message` part of the answer (the client says `aiSdkVersion: 7`) and
// its outcome in a transient `data-agentwire-input` part (onData); a queued message's answer is
// the run it starts once the first has ended; interrupt cancels the first run and keeps what it
// said in the chat's history, rollback cancels it and takes it out; reject is a 409.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DefaultChatTransport } from 'ai';
import { Chat } from '../chat.mjs';
import { getHistory, getInbox, startAgentwire, waitFor } from '../../agentwire-server.mjs';

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
const streaming = (chat) => waitFor(`chat ${chat.id} streaming`, () => chat.status === 'streaming');
/** The outcomes the chat was told of (its `data-agentwire-input` parts). */
const outcomes = (data) =>
  data.filter((part) => part.type === 'data-agentwire-input').map(({ data: { outcome, step } }) => ({ outcome, step }));

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

  test('interrupt: the first run ends aborted, stays in the history, and the message runs at once', async () => {
    const first = chatOf('inbox-interrupt');
    const firstDone = first.chat.sendMessage({ text: 'start' });
    await streaming(first.chat);
    const second = chatOf('inbox-interrupt', { mode: 'interrupt' });
    await second.chat.sendMessage({ text: 'stop, do this' });
    await firstDone;
    assert.equal(second.chat.error, undefined, `chat error: ${second.chat.error?.message}`);
    assert.equal(texts(second.chat.messages.at(-1)), `${WORDS.join('')}done`);
    assert.deepEqual(outcomes(second.data), [{ outcome: 'delivered', step: 0 }]);
    assert.equal(first.chat.status, 'ready', 'an abort is no error');
    const cut = texts(first.chat.messages.at(-1));
    assert.ok(WORDS.join('').startsWith(cut), `the first run was cut short: ${cut}`);
    // What the first run said before the cut stays, as the first tab saw it.
    assert.deepEqual(await getHistory(url, 'inbox-interrupt'), [
      'user: start',
      `assistant: ${cut}`,
      'user: stop, do this',
      `assistant: ${WORDS.join('')}done`,
    ]);
    const [entry] = await getInbox(url, 'inbox-interrupt');
    assert.equal(entry.mode, 'interrupt');
    assert.equal(entry.client_message_id, second.chat.messages[0].id);
    assert.equal(entry.rollback_of, undefined);
  });

  test('rollback: the first run ends aborted and leaves the history; the message runs at once', async () => {
    const first = chatOf('inbox-rollback');
    const firstDone = first.chat.sendMessage({ text: 'start' });
    await streaming(first.chat);
    const second = chatOf('inbox-rollback', { mode: 'rollback' });
    await second.chat.sendMessage({ text: 'forget that, do this' });
    await firstDone;
    assert.equal(second.chat.error, undefined, `chat error: ${second.chat.error?.message}`);
    assert.equal(texts(second.chat.messages.at(-1)), `${WORDS.join('')}done`);
    assert.deepEqual(outcomes(second.data), [{ outcome: 'delivered', step: 0 }]);
    assert.equal(first.chat.status, 'ready', 'an abort is no error');
    const cut = texts(first.chat.messages.at(-1));
    assert.ok(WORDS.join('').startsWith(cut), `the first run was cut short: ${cut}`);
    // Neither the first message nor what its run said is in the history any more.
    assert.deepEqual(await getHistory(url, 'inbox-rollback'), [
      'user: forget that, do this',
      `assistant: ${WORDS.join('')}done`,
    ]);
    const [entry] = await getInbox(url, 'inbox-rollback');
    assert.equal(entry.mode, 'rollback');
    assert.equal(entry.client_message_id, second.chat.messages[0].id);
    const rolledBack = await (await fetch(`${url}/v1/runs/${entry.rollback_of}`)).json();
    assert.equal(rolledBack.run.status, 'canceled');
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
