// The real @ag-ui/client HttpAgent against a live `agentwire serve` (started by
// ../../agentwire-server.mjs on scripted agents): a plain run at the root `/ag-ui` and a second
// run in the same thread, a frontend tool the run asks for and the client answers with a `tool`
// message on its next run, and an approval interrupt answered by `resume` (approved: the tool
// writes the file; denied: it does not), under `/agents/{name}/ag-ui`, and the thread's shared
// state (the client's `initialState` becomes the session's, `update_state` streams into it, and
// `agent.state` equals the server's `GET /v1/sessions/{id}/state` after each run). Every event passes the
// client's own zod enforcement and ordering verifier (a rejection is `error`), its zod schema
// and the official 1.0 JSON Schema; the client must not warn.

import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { HttpAgent, buildResumeArray } from '@ag-ui/client';
import { run } from '../agent.mjs';
import { hasNull, validateClient, validateOfficial } from '../support.mjs';
import { startAgentwire } from '../../agentwire-server.mjs';

const ANSWER = ['Hello ', 'from ', 'agentwire.'];
const FILE = { path: 'notes/ag-ui.txt', content: 'written after approval' };
const ARGS = JSON.stringify(FILE);
const QUESTION = { question: 'Ship it?' };

/** The planner's `update_state` call, its arguments in pieces as a model streams them. */
const PLAN_ARGS = JSON.stringify({
  ops: [
    { op: 'add', path: '/todo/-', value: { title: 'Write the docs', tags: ['docs', 'urgent'], done: false } },
    { op: 'replace', path: '/status', value: 'planned' },
  ],
});
const pieces = (text, size) => Array.from({ length: Math.ceil(text.length / size) }, (_, i) => text.slice(i * size, (i + 1) * size));

const scripts = {
  'planner.json': {
    turns: [
      [
        { type: 'tool_call_start', id: 'p1', name: 'update_state' },
        ...pieces(PLAN_ARGS, 7).map((args) => ({ type: 'tool_call_delta', id: 'p1', args })),
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
    turns: Array(4).fill([
      ...ANSWER.map((text) => ({ type: 'text_delta', text })),
      { type: 'finish', reason: 'stop', usage: { input_tokens: 3, output_tokens: 3 } },
    ]),
  },
  // Calls the client's `confirm` tool, then says what it heard.
  'asker.json': {
    turns: [
      [
        { type: 'tool_call_start', id: 'q1', name: 'confirm' },
        { type: 'tool_call_delta', id: 'q1', args: JSON.stringify(QUESTION) },
        { type: 'tool_call_end', id: 'q1' },
        { type: 'finish', reason: 'tool_calls' },
      ],
      [
        { type: 'text_delta', text: 'Shipping.' },
        { type: 'finish', reason: 'stop' },
      ],
    ],
  },
  'writer.json': {
    turns: [
      [
        { type: 'text_delta', text: 'Let me write it.' },
        { type: 'tool_call_start', id: 'c1', name: 'write_file' },
        { type: 'tool_call_delta', id: 'c1', args: ARGS.slice(0, 20) },
        { type: 'tool_call_delta', id: 'c1', args: ARGS.slice(20) },
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

const config = `
[[agents]]
name = "talker"
provider = "scripted"
script = "talker.json"

[[agents]]
name = "asker"
provider = "scripted"
script = "asker.json"
tools = []
schema = "function_calling"

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

const confirmTool = {
  name: 'confirm',
  description: 'Asks the user to confirm',
  parameters: { type: 'object', properties: { question: { type: 'string' } }, required: ['question'] },
};

let server;

before(async () => {
  server = await startAgentwire({ config, files: scripts, dirs: ['ws-approve', 'ws-deny'] });
});
after(() => server?.stop());

/** Runs the agent and checks what every run must be: accepted, unwarned, every event valid. */
async function checkedRun(agent, params) {
  const out = await run(agent, params);
  assert.equal(out.error, null, `the client rejected the run: ${out.error}`);
  assert.deepEqual(out.warnings, [], 'the client warned');
  for (const event of out.events) {
    assert.equal(validateClient(event), null, `client schema: ${JSON.stringify(event)}`);
    assert.equal(validateOfficial(event), null, `official schema: ${JSON.stringify(event)}`);
    assert.ok(!hasNull(event), `null in ${JSON.stringify(event)}`);
  }
  const [first, last] = [out.events[0], out.events.at(-1)];
  assert.equal(first.type, 'RUN_STARTED');
  assert.deepEqual([first.threadId, first.runId], [agent.threadId, params.runId]);
  assert.equal(last.type, 'RUN_FINISHED');
  assert.equal(last.runId, params.runId);
  return out;
}

const userMessage = (id, content) => ({ id, role: 'user', content });

describe('AG-UI HttpAgent against agentwire serve', () => {
  test('a run at the root /ag-ui, then a second run in the same thread', async () => {
    const agent = new HttpAgent({ url: `${server.url}/ag-ui`, threadId: 'thread-plain' });
    agent.addMessage(userMessage('u1', 'hello'));
    const first = await checkedRun(agent, { runId: 'run-1' });
    assert.equal(first.finished.outcome, 'success');
    const contents = first.events.filter((event) => event.type === 'TEXT_MESSAGE_CONTENT').map((event) => event.delta);
    assert.deepEqual(contents, ANSWER, 'the text streams as the brain made it');
    assert.equal(agent.messages.length, 2);
    const [user, assistant] = agent.messages;
    assert.deepEqual(user, userMessage('u1', 'hello'));
    assert.equal(assistant.role, 'assistant');
    assert.equal(assistant.content, ANSWER.join(''));
    assert.deepEqual(first.newMessages.map((message) => message.id), [assistant.id]);
    assert.deepEqual(agent.state, {}, 'a session without a state sends no state events');

    // The thread is the session: the next run sends the whole history and answers anew.
    agent.addMessage(userMessage('u2', 'again'));
    const second = await checkedRun(agent, { runId: 'run-2' });
    assert.equal(agent.messages.length, 4);
    assert.equal(agent.messages[3].content, ANSWER.join(''));
    assert.notEqual(agent.messages[3].id, assistant.id);
    assert.equal(second.events[0].threadId, 'thread-plain');
  });

  test('the thread state: set by the client, streamed into by update_state, equal to the server\'s', async () => {
    const threadId = 'thread-state';
    const serverState = async () => {
      const response = await fetch(`${server.url}/v1/sessions/${threadId}/state`);
      assert.equal(response.status, 200);
      return response.json();
    };
    const agent = new HttpAgent({
      url: `${server.url}/agents/planner/ag-ui`,
      threadId,
      initialState: { todo: [], status: 'new' },
    });
    agent.addMessage(userMessage('u1', 'Plan the docs'));
    const first = await checkedRun(agent, { runId: 'run-plan' });
    const types = first.events.map((event) => event.type);
    assert.equal(types.filter((type) => type === 'STATE_SNAPSHOT').length, 1, types.join());
    const deltas = first.events.filter((event) => event.type === 'STATE_DELTA');
    assert.ok(deltas.length >= 3, `the call's changes stream: ${deltas.length} deltas`);
    // The changes came while the call's arguments streamed, before they had all arrived.
    const firstDelta = types.indexOf('STATE_DELTA');
    assert.ok(types.indexOf('TOOL_CALL_ARGS', firstDelta) > firstDelta, types.join());
    const planned = {
      todo: [{ title: 'Write the docs', tags: ['docs', 'urgent'], done: false }],
      status: 'planned',
    };
    assert.deepEqual(agent.state, planned);
    assert.deepEqual(await serverState(), agent.state);

    // The client changes its state; its next run sends it, and the session takes it.
    agent.setState({ ...agent.state, status: 'reviewed' });
    agent.addMessage(userMessage('u2', 'Plan again'));
    await checkedRun(agent, { runId: 'run-plan-2' });
    assert.deepEqual(agent.state, {
      todo: [...planned.todo, ...planned.todo],
      status: 'planned',
    });
    assert.deepEqual(await serverState(), agent.state);
  });

  test('a frontend tool: the run asks, the client answers with a tool message, the run goes on', async () => {
    const agent = new HttpAgent({ url: `${server.url}/agents/asker/ag-ui`, threadId: 'thread-tool' });
    agent.addMessage(userMessage('u1', 'Ship?'));
    const first = await checkedRun(agent, { runId: 'run-ask', tools: [confirmTool] });
    const asked = agent.messages.at(-1);
    assert.equal(asked.role, 'assistant');
    const [call] = asked.toolCalls;
    assert.equal(call.function.name, 'confirm');
    assert.deepEqual(JSON.parse(call.function.arguments), QUESTION);
    assert.equal(first.finished.outcome, 'success');
    assert.deepEqual(first.finished.pendingToolCallIds, [call.id], 'the run waits for the client');

    // The application runs its tool and starts the next run with the answer.
    agent.addMessage({ id: 't1', role: 'tool', toolCallId: call.id, content: 'yes' });
    const second = await checkedRun(agent, { runId: 'run-answer', tools: [confirmTool] });
    assert.equal(second.events[0].runId, 'run-answer');
    const last = agent.messages.at(-1);
    assert.equal(last.role, 'assistant');
    assert.equal(last.content, 'Shipping.');
    assert.deepEqual(
      agent.messages.map((message) => message.role),
      ['user', 'assistant', 'tool', 'assistant'],
    );
  });

  for (const approved of [true, false]) {
    const name = approved ? 'writer' : 'denied';
    test(`an approval interrupt answered by resume, ${approved ? 'approved' : 'denied'}: /agents/${name}/ag-ui`, async () => {
      const agent = new HttpAgent({ url: `${server.url}/agents/${name}/ag-ui`, threadId: `thread-${name}` });
      agent.addMessage(userMessage('u1', 'Write the note'));
      const first = await checkedRun(agent, { runId: 'run-ask' });
      assert.equal(first.finished.outcome, 'interrupt', JSON.stringify(first.finished));
      const [interrupt] = agent.pendingInterrupts;
      assert.equal(agent.pendingInterrupts.length, 1);
      assert.equal(interrupt.reason, 'tool_call');
      const call = agent.messages.flatMap((message) => message.toolCalls ?? []).find((c) => c.id === interrupt.toolCallId);
      assert.equal(call.function.name, 'write_file');
      assert.deepEqual(JSON.parse(call.function.arguments), FILE);

      // The client refuses to run on without answering; the answer is a resume.
      const refused = await run(agent, { runId: 'run-x' });
      assert.match(refused.error, /pending interrupt/);
      const resume = buildResumeArray(agent.pendingInterrupts, {
        [interrupt.id]: { status: 'resolved', payload: approved ? { approved: true } : { approved: false, reason: 'not now' } },
      });
      const second = await checkedRun(agent, { runId: 'run-resume', resume });
      assert.deepEqual(agent.pendingInterrupts, []);
      assert.equal(second.finished.outcome, 'success');
      assert.deepEqual(second.finished.pendingToolCallIds, []);
      const results = agent.messages.filter((message) => message.role === 'tool' && message.toolCallId === call.id);
      assert.equal(results.length, 1, JSON.stringify(agent.messages));
      const written = path.join(server.dir, approved ? 'ws-approve' : 'ws-deny', FILE.path);
      if (approved) {
        assert.equal(readFileSync(written, 'utf8'), FILE.content);
      } else {
        assert.equal(existsSync(written), false, 'a denied write leaves no file');
      }
      assert.equal(agent.messages.at(-1).role, 'assistant');
      assert.equal(agent.messages.at(-1).content, 'Done.');
    });
  }
});
