// Sub-agents through a live `agentwire serve` (scripted agents with `subagents`), read by the
// real AI SDK `Chat` (useChat's AbstractChat) over DefaultChatTransport: a child's progress is
// the preliminary output of its call's tool part, and its answer the final output; an approval
// three sub-agents down is a tool part of the message in a last step of its own, which the app
// answers with addToolApprovalResponse and useChat sends by itself (sendAutomaticallyWhen); the
// server hands the answer down, the file is written, and the message ends with the top's text.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } from 'ai';
import { Chat } from '../chat.mjs';
import { startAgentwire } from '../../agentwire-server.mjs';

const FILE = { path: 'logs/cleaned.txt', content: 'old.log was here' };

const say = (text) => [
  { type: 'text_delta', text },
  { type: 'finish', reason: 'stop' },
];
/** A turn that calls each `[id, agent, input]`, all at once. */
const calling = (...calls) => [
  ...calls.flatMap(([id, name, input]) => [
    { type: 'tool_call_start', id, name },
    { type: 'tool_call_delta', id, args: JSON.stringify({ input }) },
    { type: 'tool_call_end', id },
  ]),
  { type: 'finish', reason: 'tool_calls' },
];

const scripts = {
  'researcher.json': { turns: [say('Paris is the capital.')] },
  'lead.json': { turns: [calling(['a1', 'researcher', 'Capital of France?']), say('Paris, it is.')] },
  'cleaner.json': {
    turns: [
      [
        { type: 'tool_call_start', id: 'c1', name: 'write_file' },
        { type: 'tool_call_delta', id: 'c1', args: JSON.stringify(FILE) },
        { type: 'tool_call_end', id: 'c1' },
        { type: 'finish', reason: 'tool_calls' },
      ],
      say('Cleaned.'),
    ],
  },
  'manager.json': { turns: [calling(['m1', 'cleaner', 'Clean the logs.']), say('The cleaner cleaned.')] },
  'director.json': { turns: [calling(['d1', 'manager', 'Get the logs cleaned.']), say('All clean.')] },
};

const config = `
[[agents]]
name = "researcher"
provider = "scripted"
script = "researcher.json"

[[agents]]
name = "lead"
provider = "scripted"
script = "lead.json"
subagents = ["researcher"]

[[agents]]
name = "cleaner"
provider = "scripted"
script = "cleaner.json"
tools = ["write_file"]
approval = ["write_file"]
workspace = "ws"

[[agents]]
name = "manager"
provider = "scripted"
script = "manager.json"
subagents = ["cleaner"]

[[agents]]
name = "director"
provider = "scripted"
script = "director.json"
subagents = ["manager"]
`;

let server;

before(async () => {
  server = await startAgentwire({ config, files: scripts, dirs: ['ws'] });
});
after(() => server?.stop());

describe('sub-agents through agentwire serve, read by the AI SDK Chat', () => {
  test('a child streams as its call\'s preliminary output, and answers as its final one', async () => {
    const chat = new Chat({
      id: 'chat-lead',
      transport: new DefaultChatTransport({ api: `${server.url}/agents/lead/api/chat` }),
    });
    // Every state of the message the client goes through, to see the progress it showed.
    const seen = [];
    const replace = chat.state.replaceMessage;
    chat.state.replaceMessage = (index, message) => {
      seen.push(structuredClone(message));
      replace(index, message);
    };
    await chat.sendMessage({ text: 'Capital?' });
    assert.equal(chat.error, undefined, chat.error?.message);
    const progress = seen
      .flatMap((message) => message.parts)
      .filter((part) => part.type === 'tool-researcher' && part.preliminary === true)
      .map((part) => part.output);
    assert.ok(progress.length > 0, 'the child\'s progress was shown');
    assert.equal(progress.at(-1).metadata.agentName, 'researcher');
    assert.deepEqual(
      progress.at(-1).parts.filter((part) => part.type === 'text').map((part) => part.text),
      ['Paris is the capital.'],
    );
    const message = chat.messages[1];
    const call = message.parts.find((part) => part.type === 'tool-researcher');
    assert.equal(call.state, 'output-available');
    assert.equal(call.output, 'Paris is the capital.');
    assert.equal(call.preliminary, undefined);
    assert.equal(message.parts.at(-1).text, 'Paris, it is.');
  });

  test('an approval three sub-agents down is a part the app answers, and useChat sends it by itself', async () => {
    const chat = new Chat({
      id: 'chat-director',
      transport: new DefaultChatTransport({ api: `${server.url}/agents/director/api/chat` }),
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    });
    await chat.sendMessage({ text: 'Clean up' });
    assert.equal(chat.error, undefined, chat.error?.message);
    assert.equal(chat.status, 'ready');
    const first = chat.messages[1];
    const manager = first.parts.find((part) => part.type === 'tool-manager');
    assert.equal(manager.preliminary, true, 'the manager works on: its progress is preliminary');
    assert.equal(manager.output.metadata.agentName, 'manager');
    assert.equal(manager.output.metadata.status, 'awaiting');
    const cleaner = manager.output.parts.find((part) => part.type === 'tool-cleaner');
    assert.equal(cleaner.output.metadata.status, 'awaiting');
    const asked = first.parts.find((part) => part.type === 'tool-write_file');
    assert.ok(asked, JSON.stringify(first.parts));
    assert.equal(asked.state, 'approval-requested');
    assert.deepEqual(asked.input, FILE);
    const run = asked.callProviderMetadata.agentwire.runId;
    assert.equal(asked.toolCallId, `${run}:c1`);
    assert.equal(cleaner.output.id, run, 'the asking run is the cleaner, three down');
    assert.equal(first.parts[first.parts.indexOf(asked) - 1].type, 'step-start', 'in a step of its own');

    await chat.addToolApprovalResponse({ id: asked.approval.id, approved: true });
    await chat.settled(2);
    assert.equal(chat.error, undefined, `chat error: ${chat.error?.message}`);
    assert.equal(chat.messages.length, 2, 'the continuation extends the same assistant message');
    const message = chat.messages[1];
    const done = message.parts.find((part) => part.toolCallId === asked.toolCallId);
    assert.equal(done.state, 'output-available', JSON.stringify(done));
    assert.equal(readFileSync(path.join(server.dir, 'ws', FILE.path), 'utf8'), FILE.content);
    const answered = message.parts.find((part) => part.type === 'tool-manager');
    assert.equal(answered.state, 'output-available');
    assert.equal(answered.output, 'The cleaner cleaned.');
    assert.equal(answered.preliminary, undefined);
    assert.equal(message.parts.at(-1).text, 'All clean.');
  });
});
