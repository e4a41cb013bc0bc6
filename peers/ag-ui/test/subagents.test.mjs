// Sub-agents through a live `agentwire serve` (scripted agents with `subagents`), read by the
// real HttpAgent with its verifier on and every event checked against the client's zod schema
// and the official 1.0 JSON Schema: two children in parallel are subagents whose answers are
// their calls' results; an approval three sub-agents down is an interrupt naming the cleaner,
// resumed at the top, after which the continuation reopens the subagents, the file is written
// and every subagent finishes with its answer.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { HttpAgent, buildResumeArray } from '@ag-ui/client';
import { run } from '../agent.mjs';
import { byRun, hasNull, validateClient, validateOfficial } from '../support.mjs';
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
  'writer.json': { turns: [say('Hello from the writer.')] },
  'lead.json': {
    turns: [calling(['a1', 'researcher', 'Capital of France?'], ['a2', 'writer', 'A greeting.']), say('Both answered.')],
  },
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
name = "writer"
provider = "scripted"
script = "writer.json"

[[agents]]
name = "lead"
provider = "scripted"
script = "lead.json"
subagents = ["researcher", "writer"]

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

/** Runs the agent: accepted, unwarned, every event valid by both schemas. */
async function checkedRun(agent, params) {
  const out = await run(agent, params);
  assert.equal(out.error, null, `the client rejected the run: ${out.error}`);
  assert.deepEqual(out.warnings, [], 'the client warned');
  for (const event of out.events) {
    assert.equal(validateClient(event), null, `client schema: ${JSON.stringify(event)}`);
    assert.equal(validateOfficial(event), null, `official schema: ${JSON.stringify(event)}`);
    assert.ok(!hasNull(event), `null in ${JSON.stringify(event)}`);
  }
  return out;
}

const lifecycle = (events) =>
  events.filter((e) => e.type.startsWith('SUBAGENT_')).map((e) => [e.type, e.name ?? e.result ?? null]);

describe('sub-agents through agentwire serve', () => {
  test('two children in parallel: subagents whose answers are their calls\' results', async () => {
    const agent = new HttpAgent({ url: `${server.url}/agents/lead/ag-ui`, threadId: 'thread-lead' });
    agent.addMessage({ id: 'u1', role: 'user', content: 'Ask both' });
    const out = await checkedRun(agent, { runId: 'run-lead' });
    assert.equal(out.finished.outcome, 'success');
    const started = out.events.filter((e) => e.type === 'SUBAGENT_STARTED');
    assert.deepEqual(started.map((e) => [e.name, e.parentToolCallId]).sort(), [
      ['researcher', 'a1'],
      ['writer', 'a2'],
    ]);
    const finished = out.events.filter((e) => e.type === 'SUBAGENT_FINISHED').map((e) => e.result).sort();
    assert.deepEqual(finished, ['Hello from the writer.', 'Paris is the capital.']);

    const groups = byRun(agent.messages);
    const results = groups[''].filter((m) => m.role === 'tool').map((m) => [m.toolCallId, m.content]);
    assert.deepEqual(results.sort(), [
      ['a1', 'Paris is the capital.'],
      ['a2', 'Hello from the writer.'],
    ]);
    assert.equal(groups[''].at(-1).content, 'Both answered.');
    // Each child's message is its own, under its run.
    for (const { subagentRunId, name } of started) {
      const [message] = groups[subagentRunId];
      assert.equal(message.content, name === 'writer' ? 'Hello from the writer.' : 'Paris is the capital.');
      assert.ok(message.id.startsWith(`${subagentRunId}:`));
    }
  });

  test('an approval three sub-agents down: an interrupt naming the cleaner, resumed at the top', async () => {
    const agent = new HttpAgent({ url: `${server.url}/agents/director/ag-ui`, threadId: 'thread-director' });
    agent.addMessage({ id: 'u1', role: 'user', content: 'Clean up' });
    const first = await checkedRun(agent, { runId: 'run-ask' });
    assert.equal(first.finished.outcome, 'interrupt', JSON.stringify(first.finished));
    assert.deepEqual(lifecycle(first.events), [
      ['SUBAGENT_STARTED', 'manager'],
      ['SUBAGENT_STARTED', 'cleaner'],
      ['SUBAGENT_FINISHED', null],
      ['SUBAGENT_FINISHED', null],
    ]);
    const cleaner = first.events.find((e) => e.type === 'SUBAGENT_STARTED' && e.name === 'cleaner');
    const [interrupt] = agent.pendingInterrupts;
    assert.equal(agent.pendingInterrupts.length, 1);
    assert.equal(interrupt.subagentRunId, cleaner.subagentRunId);
    assert.equal(interrupt.toolCallId, `${cleaner.subagentRunId}:c1`);
    const call = agent.messages.flatMap((m) => m.toolCalls ?? []).find((c) => c.id === interrupt.toolCallId);
    assert.deepEqual(JSON.parse(call.function.arguments), FILE);

    const resume = buildResumeArray(agent.pendingInterrupts, {
      [interrupt.id]: { status: 'resolved', payload: { approved: true } },
    });
    const second = await checkedRun(agent, { runId: 'run-resume', resume });
    assert.equal(second.finished.outcome, 'success', JSON.stringify(second.finished));
    assert.deepEqual(agent.pendingInterrupts, []);
    assert.deepEqual(
      second.events.filter((e) => e.type === 'SUBAGENT_FINISHED').map((e) => e.result),
      ['Cleaned.', 'The cleaner cleaned.'],
    );
    assert.equal(readFileSync(path.join(server.dir, 'ws', FILE.path), 'utf8'), FILE.content);
    const own = byRun(agent.messages)[''];
    assert.deepEqual(
      own.slice(-2).map((m) => [m.role, m.content]),
      [
        ['tool', 'The cleaner cleaned.'],
        ['assistant', 'All clean.'],
      ],
    );
  });
});
