// The real @ag-ui/client HttpAgent sending a run to a thread whose run still streams, against a
// live `agentwire serve`: a second HttpAgent of the same thread names the mode in
// `forwardedProps.mode`. A steer's response is the rest of the thread's run under the client's
// runId, its outcome a CUSTOM `agentwire.input`, while the first client sees the steer as a
// user message where the model saw it; a queued message's response is the run it starts;
// interrupt and rollback cancel the thread's run (kept in the thread's history, or taken out of
// it) and respond with the run the message starts; reject is the 409 of before. Every event
// passes the client's own checks and both schemas.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { HttpAgent } from '@ag-ui/client';
import { run } from '../agent.mjs';
import { hasNull, normalizeArgs, validateClient, validateOfficial } from '../support.mjs';
import { getHistory, getInbox, getSession, startAgentwire, waitFor } from '../../agentwire-server.mjs';

const WORDS = Array.from({ length: 30 }, (_, n) => `word${n} `);

const scripts = {
  'talker.json': { turns: [[...WORDS.map((text) => ({ type: 'text_delta', text })), { type: 'finish', reason: 'stop' }]] },
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

[[agents]]
name = "talker"
provider = "scripted"
script = "talker.json"
tokens_per_second = 30
`;

let server;

before(async () => {
  server = await startAgentwire({ config, files: scripts, dirs: ['ws'] });
});
after(() => server?.stop());

/** Waits until the thread's run works. */
const working = (threadId) =>
  waitFor(`a run working in thread ${threadId}`, async () => {
    const session = await getSession(server.url, threadId);
    return session?.last_run?.status === 'in_progress';
  });

/** Runs the agent and checks every event the client saw. */
async function checkedRun(agent, params, name) {
  if (name) agent.url = `${server.url}/agents/${name}/ag-ui`;
  const out = await run(agent, params);
  assert.equal(out.error, null, `the client rejected the run: ${out.error}`);
  assert.deepEqual(out.warnings, [], 'the client warned');
  for (const event of out.events) {
    assert.equal(validateClient(event), null, `client schema: ${JSON.stringify(event)}`);
    assert.equal(validateOfficial(event), null, `official schema: ${JSON.stringify(event)}`);
    assert.ok(!hasNull(event), `null in ${JSON.stringify(event)}`);
  }
  assert.equal(out.events[0].runId, params.runId);
  assert.equal(out.events.at(-1).type, 'RUN_FINISHED');
  return out;
}

const agentOf = (threadId, id, text) => {
  const agent = new HttpAgent({ url: `${server.url}/ag-ui`, threadId });
  agent.addMessage({ id, role: 'user', content: text });
  return agent;
};

const inputs = (out) => out.custom.filter((event) => event.name === 'agentwire.input').map((event) => event.value);

describe('AG-UI HttpAgent: a run on a busy thread', () => {
  test('steer: the thread run goes on with the message; both clients see its outcome', async () => {
    const firstRun = checkedRun(agentOf('t-steer', 'u1', 'start'), { runId: 'r1' });
    await working('t-steer');
    const second = agentOf('t-steer', 'u2', 'answer in French');
    const steered = await checkedRun(second, { runId: 'r2', forwardedProps: { mode: 'steer' } });
    const first = await firstRun;
    assert.deepEqual(inputs(steered), [{ client_message_id: 'u2', outcome: 'delivered', step: 1 }]);
    assert.equal(second.messages.at(-1).content, 'done');
    assert.equal(second.messages.filter((message) => message.id === 'u2').length, 1, 'not added twice');
    // The first client's thread has the steer between the run's answers, as the user's.
    const roles = first.messages.map((message) => `${message.role}:${message.content ?? ''}`);
    const at = roles.indexOf('user:answer in French');
    assert.ok(at > 1, JSON.stringify(roles));
    assert.equal(roles.at(-1), 'assistant:done');
  });

  test('queue: the response is the run the message starts', async () => {
    const firstRun = checkedRun(agentOf('t-queue', 'u1', 'start'), { runId: 'r1' });
    await working('t-queue');
    const queued = await checkedRun(agentOf('t-queue', 'u2', 'then this'), {
      runId: 'r2',
      forwardedProps: { mode: 'queue' },
    });
    const first = await firstRun;
    assert.deepEqual(inputs(first), [{ client_message_id: 'u2', outcome: 'queued' }]);
    assert.deepEqual(inputs(queued), [{ client_message_id: 'u2', outcome: 'delivered', step: 0 }]);
    const texts = queued.events.filter((event) => event.type === 'TEXT_MESSAGE_CONTENT').map((event) => event.delta);
    assert.equal(texts.join(''), `${WORDS.join('')}done`);
  });

  // Both cancel the thread's run (the first client's run finishes `cancelled`, cut short) and
  // answer with the run the message starts at once; interrupt keeps what the canceled run said
  // in the thread's history, rollback takes the run out of it.
  for (const [mode, kept] of [['interrupt', true], ['rollback', false]]) {
    test(`${mode}: the thread's run is canceled and the message runs at once`, async () => {
      const thread = `t-${mode}`;
      const firstRun = checkedRun(agentOf(thread, 'u1', 'start'), { runId: 'r1' });
      await working(thread);
      const second = agentOf(thread, 'u2', 'do this instead');
      const out = await checkedRun(second, { runId: 'r2', forwardedProps: { mode } });
      const first = await firstRun;
      assert.equal(first.finished.outcome, 'cancelled');
      const cut = first.messages.at(-1);
      assert.equal(cut.role, 'assistant');
      assert.ok(WORDS.join('').startsWith(cut.content), `cut short: ${cut.content}`);
      assert.equal(out.finished.outcome, 'success');
      assert.deepEqual(inputs(out), [{ client_message_id: 'u2', outcome: 'delivered', step: 0 }]);
      const texts = out.events.filter((event) => event.type === 'TEXT_MESSAGE_CONTENT').map((event) => event.delta);
      assert.equal(texts.join(''), `${WORDS.join('')}done`);
      assert.equal(second.messages.at(-1).content, 'done');
      const answer = ['user: do this instead', `assistant: ${WORDS.join('')}done`];
      const before = kept ? ['user: start', `assistant: ${cut.content}`] : [];
      assert.deepEqual(await getHistory(server.url, thread), [...before, ...answer]);
      const [entry] = await getInbox(server.url, thread);
      assert.equal(entry.mode, mode);
      assert.equal(entry.outcome, 'delivered');
      if (kept) {
        assert.equal(entry.rollback_of, undefined);
      } else {
        const rolledBack = await (await fetch(`${server.url}/v1/runs/${entry.rollback_of}`)).json();
        assert.equal(rolledBack.run.status, 'canceled');
      }
    });
  }

  test('rollback from the client that shows the run: MESSAGES_SNAPSHOT takes it out of its list', async () => {
    const thread = 't-rollback-list';
    // An earlier turn, with a tool call and its result, that the thread keeps.
    const client = agentOf(thread, 'u0', 'look around');
    const earlier = await checkedRun(client, { runId: 'r0' });
    assert.ok(earlier.messages.some((message) => message.role === 'tool'));
    const kept = normalizeArgs(structuredClone(earlier.messages));
    // The next question, to the talker; the client shows the start of its answer when the user
    // changes their mind in another tab of the same conversation.
    const talking = checkedRun(agentOf(thread, 'u1', 'start'), { runId: 'r1' }, 'talker');
    await working(thread);
    const tab = new HttpAgent({
      url: `${server.url}/agents/talker/ag-ui`,
      threadId: thread,
      initialMessages: [
        ...structuredClone(earlier.messages),
        { id: 'u1', role: 'user', content: 'start' },
        { id: 'a1', role: 'assistant', content: WORDS[0] },
      ],
    });
    tab.addMessage({ id: 'u2', role: 'user', content: 'do this instead' });
    const out = await checkedRun(tab, { runId: 'r2', forwardedProps: { mode: 'rollback' } });
    assert.equal((await talking).finished.outcome, 'cancelled');
    assert.deepEqual(
      out.events.slice(0, 2).map((event) => event.type),
      ['RUN_STARTED', 'MESSAGES_SNAPSHOT'],
    );
    // The earlier turn stays as the client had it, message for message; the rolled-back
    // question and answer are gone; the new question and its answer follow.
    const list = normalizeArgs(structuredClone(out.messages));
    assert.deepEqual(list.slice(0, kept.length), kept);
    assert.deepEqual(list[kept.length], { id: 'u2', role: 'user', content: 'do this instead' });
    assert.deepEqual(
      list.slice(kept.length + 1).map((message) => `${message.role}: ${message.content}`),
      [`assistant: ${WORDS.join('')}`],
    );
    assert.ok(!list.some((message) => message.id === 'u1' || message.id === 'a1'));
  });

  test('reject: the client fails with the 409', async () => {
    const firstRun = checkedRun(agentOf('t-reject', 'u1', 'start'), { runId: 'r1' });
    await working('t-reject');
    const out = await run(agentOf('t-reject', 'u2', 'no'), { runId: 'r2', forwardedProps: { mode: 'reject' } });
    assert.match(String(out.error), /409|session_busy/);
    await firstRun;
  });
});
