// The real AI SDK client against a live `agentwire serve`: the `Chat` of `useChat` (AbstractChat
// with a plain state) and `DefaultChatTransport` talk over real HTTP to the binary the Rust
// build made, which runs scripted agents from a temporary agentwire.toml. Covers a plain answer
// at the root `/api/chat`, and the approval round trip under `/agents/{name}/api/chat`, approved
// (the tool really writes the file) and denied (it does not), with `sendAutomaticallyWhen`
// sending the answer as an app does; and the session's shared state, which a run's
// `update_state` streams into: the message holds it once, as the data part
// `data-agentwire-state` reconciled in place by its id, equal to `GET /v1/sessions/{id}/state`,
// and `onData` sees each change as a transient `data-agentwire-state-delta`.

import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } from 'ai';
import { Chat } from '../chat.mjs';
import { startAgentwire } from '../../agentwire-server.mjs';

const ANSWER = ['Hello ', 'from ', 'agentwire.'];
const FILE = { path: 'notes/hello.txt', content: 'written after approval' };

/** The planner's `update_state` call, in pieces as a model streams them. */
const PLAN_ARGS = JSON.stringify({ ops: [{ op: 'add', path: '/todo/-', value: { title: 'Write the docs', done: false } }] });
const pieces = (text, size) => Array.from({ length: Math.ceil(text.length / size) }, (_, i) => text.slice(i * size, (i + 1) * size));

/** The scripted turns: a plain answer, a write_file call (needing approval) then a text, and a
 * streamed update_state call then a text. */
const scripts = {
  'planner.json': {
    turns: [
      [
        { type: 'tool_call_start', id: 'p1', name: 'update_state' },
        ...pieces(PLAN_ARGS, 6).map((args) => ({ type: 'tool_call_delta', id: 'p1', args })),
        { type: 'tool_call_end', id: 'p1' },
        { type: 'finish', reason: 'tool_calls' },
      ],
      [
        { type: 'text_delta', text: 'Planned.' },
        { type: 'finish', reason: 'stop' },
      ],
    ],
  },
  'talker.json': {
    turns: [
      [
        ...ANSWER.map((text) => ({ type: 'text_delta', text })),
        { type: 'finish', reason: 'stop', usage: { input_tokens: 3, output_tokens: 3 } },
      ],
    ],
  },
  'writer.json': {
    turns: [
      [
        { type: 'text_delta', text: 'Let me write it.' },
        { type: 'tool_call_start', id: 'c1', name: 'write_file' },
        { type: 'tool_call_delta', id: 'c1', args: JSON.stringify(FILE).slice(0, 20) },
        { type: 'tool_call_delta', id: 'c1', args: JSON.stringify(FILE).slice(20) },
        { type: 'tool_call_end', id: 'c1' },
        { type: 'finish', reason: 'tool_calls' },
      ],
      [
        { type: 'text_delta', text: 'Done.' },
        { type: 'finish', reason: 'stop' },
      ],
    ],
  },
};

// Two writers with their own workspaces, so the approved and the denied run cannot see each
// other's file.
const config = `
[[agents]]
name = "talker"
provider = "scripted"
script = "talker.json"

[[agents]]
name = "writer"
provider = "scripted"
script = "writer.json"
tools = ["write_file"]
approval = ["write_file"]
workspace = "ws-approve"

[[agents]]
name = "denied"
provider = "scripted"
script = "writer.json"
tools = ["write_file"]
approval = ["write_file"]
workspace = "ws-deny"

[[agents]]
name = "planner"
provider = "scripted"
script = "planner.json"
tools = ["update_state"]
`;

let server;
let dir;
let url;

before(async () => {
  server = await startAgentwire({ config, files: scripts, dirs: ['ws-approve', 'ws-deny'] });
  ({ url, dir } = server);
});
after(() => server?.stop());

const withoutProviderMetadata = (parts) => parts.map(({ providerMetadata, callProviderMetadata, ...part }) => part);

describe('AI SDK Chat against agentwire serve', () => {
  test('sendMessage at the root /api/chat: the scripted answer as a step and a text', async () => {
    const chat = new Chat({ id: 'chat-plain', transport: new DefaultChatTransport({ api: `${url}/api/chat` }) });
    await chat.sendMessage({ text: 'hello' });
    assert.equal(chat.error, undefined);
    assert.equal(chat.status, 'ready');
    assert.equal(chat.messages.length, 2);
    const [user, assistant] = chat.messages;
    assert.deepEqual(user.parts, [{ type: 'text', text: 'hello' }]);
    assert.equal(assistant.role, 'assistant');
    assert.deepEqual(withoutProviderMetadata(assistant.parts), [
      { type: 'step-start' },
      { type: 'text', text: ANSWER.join(''), state: 'done' },
    ]);

    // The chat's run is over: a reload has nothing to resume (204), and the messages stay.
    await chat.resumeStream();
    assert.equal(chat.error, undefined);
    assert.equal(chat.messages.length, 2);
  });

  test('the shared state: one data part reconciled in place, equal to the server\'s', async () => {
    const id = 'chat-state';
    const stateUrl = `${url}/v1/sessions/${id}/state`;
    const put = await fetch(stateUrl, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ todo: [] }),
    });
    assert.equal(put.status, 200);
    const deltas = [];
    const chat = new Chat({
      id,
      transport: new DefaultChatTransport({ api: `${url}/agents/planner/api/chat` }),
      onData: (part) => {
        if (part.type === 'data-agentwire-state-delta') deltas.push(part.data.patch);
      },
    });
    const stateParts = (message) => message.parts.filter((part) => part.type === 'data-agentwire-state');
    for (const [round, text] of ['Plan the docs', 'Plan more'].entries()) {
      await chat.sendMessage({ text });
      assert.equal(chat.error, undefined, `chat error: ${chat.error?.message}`);
      assert.equal(chat.status, 'ready');
      const assistant = chat.messages.at(-1);
      assert.equal(assistant.role, 'assistant');
      const parts = stateParts(assistant);
      assert.equal(parts.length, 1, `one state part, replaced in place: ${JSON.stringify(assistant.parts)}`);
      assert.equal(parts[0].id, 'state');
      const server = await (await fetch(stateUrl)).json();
      assert.deepEqual(parts[0].data, server);
      assert.equal(server.todo.length, round + 1);
      assert.ok(assistant.parts.some((part) => part.type === 'text' && part.text === 'Planned.'));
    }
    // Each run's call streamed its changes: the list item, then its members as they ended.
    assert.ok(deltas.length >= 4, `transient deltas: ${JSON.stringify(deltas)}`);
    assert.deepEqual(deltas[0], [{ op: 'add', path: '/todo/0', value: {} }]);
    assert.equal(chat.messages.length, 4);
  });

  for (const approved of [true, false]) {
    const agent = approved ? 'writer' : 'denied';
    test(`approval round trip, ${approved ? 'approved' : 'denied'}: /agents/${agent}/api/chat`, async () => {
      const chat = new Chat({
        id: `chat-${agent}`,
        transport: new DefaultChatTransport({ api: `${url}/agents/${agent}/api/chat` }),
        sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
      });
      await chat.sendMessage({ text: 'Write the note' });
      assert.equal(chat.error, undefined);
      assert.equal(chat.status, 'ready');
      assert.equal(chat.messages.length, 2);
      const first = chat.messages[1];
      const asked = first.parts.find((part) => part.type === 'tool-write_file');
      assert.ok(asked, JSON.stringify(first.parts));
      assert.equal(asked.state, 'approval-requested');
      assert.deepEqual(asked.input, FILE);
      assert.equal(typeof asked.approval.id, 'string');
      assert.ok(first.parts.some((part) => part.type === 'text' && part.text === 'Let me write it.'));

      // The user clicks: the SDK sends the answer by itself and the server continues the run.
      await chat.addToolApprovalResponse({ id: asked.approval.id, approved, reason: approved ? undefined : 'not now' });
      await chat.settled(2);
      assert.equal(chat.error, undefined, `chat error: ${chat.error?.message}`);
      assert.equal(chat.status, 'ready');
      assert.equal(chat.messages.length, 2, 'the continuation extends the same assistant message');
      const message = chat.messages[1];
      assert.equal(message.id, first.id);
      const tool = message.parts.find((part) => part.type === 'tool-write_file');
      assert.equal(tool.toolCallId, asked.toolCallId);
      assert.equal(tool.approval.approved, approved);
      const written = path.join(dir, approved ? 'ws-approve' : 'ws-deny', FILE.path);
      if (approved) {
        assert.equal(tool.state, 'output-available', JSON.stringify(tool));
        assert.ok(tool.output != null);
        assert.equal(readFileSync(written, 'utf8'), FILE.content);
      } else {
        // The denial ends the call, as the AI SDK's own server leaves it; the runtime's tool
        // error telling the model about it is not sent to the client.
        assert.equal(tool.state, 'output-denied', JSON.stringify(tool));
        assert.equal(tool.approval.reason, 'not now');
        assert.equal(existsSync(written), false, 'a denied write leaves no file');
      }
      const texts = message.parts.filter((part) => part.type === 'text').map((part) => part.text);
      assert.deepEqual(texts, ['Let me write it.', 'Done.']);
      assert.equal(message.parts.at(-1).type, 'text');
    });
  }
});
