// The client's side of a waiting run: after client_tool the client runs its tool and starts the
// next run with the tool message in its history; after approval it must resume the interrupt.
// Both next requests are built by the client itself and pinned as golden files, which the Rust
// tests decode with the request decoder (crates/dialects/tests/ag_ui.rs).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildResumeArray } from '@ag-ui/client';
import { agentFor, run, withServer } from '../agent.mjs';
import { agUiInput, byRun, checkGoldenJson, frames, scenario, transcript, validateOfficial } from '../support.mjs';

/** What the server answers the second run with: a short reply, so the client completes it. */
const reply = [
  { type: 'RUN_STARTED', threadId: 'ses_1', runId: 'run_2' },
  { type: 'TEXT_MESSAGE_START', messageId: 'msg_2', role: 'assistant' },
  { type: 'TEXT_MESSAGE_CONTENT', messageId: 'msg_2', delta: 'Done.' },
  { type: 'TEXT_MESSAGE_END', messageId: 'msg_2' },
  { type: 'RUN_FINISHED', threadId: 'ses_1', runId: 'run_2' },
]
  .map((event) => `data: ${JSON.stringify(event)}\n\n`)
  .join('');

const locationTool = {
  name: 'get_location',
  description: "The user's location, from the browser",
  parameters: { type: 'object', properties: { precision: { type: 'string' } } },
};

test('a frontend tool call is answered by a tool message in the next run', async () => {
  const input = agUiInput(scenario('client_tool').input);
  await withServer([transcript('client_tool'), reply], async (url, requests) => {
    const agent = agentFor(url, { initialMessages: input });
    const first = await run(agent, { runId: 'run_1', tools: [locationTool] });
    assert.equal(first.error, null);
    assert.deepEqual(first.finished.pendingToolCallIds, ['call_1']);
    const call = first.messages.at(-1).toolCalls[0];
    assert.equal(call.function.name, 'get_location');
    assert.deepEqual(JSON.parse(call.function.arguments), { precision: 'city' });

    // The application runs the tool and answers, as a frontend-tool loop does.
    agent.addMessage({ id: 'msg_tool_1', role: 'tool', toolCallId: call.id, content: JSON.stringify({ city: 'Paris' }) });
    const second = await run(agent, { runId: 'run_2', tools: [locationTool] });
    assert.equal(second.error, null);

    const body = JSON.parse(requests[1].body);
    assert.equal(validateOfficial({ type: 'RUN_STARTED', threadId: 't', runId: 'r', input: body }), null);
    assert.deepEqual(body.tools, [locationTool]);
    assert.equal(body.messages.at(-1).role, 'tool');
    checkGoldenJson('request-client_tool.json', body);
  });
});

test('an approval interrupt must be resumed, and the resume is sent', async () => {
  const input = agUiInput(scenario('approval').input);
  await withServer([transcript('approval'), reply], async (url, requests) => {
    const agent = agentFor(url, { initialMessages: input });
    const first = await run(agent, { runId: 'run_1' });
    assert.equal(first.error, null);
    assert.deepEqual(
      first.pendingInterrupts.map((i) => [i.id, i.toolCallId]),
      [['apr_1', 'call_1']],
    );

    // The client refuses to go on without answering the interrupt.
    const refused = await run(agent, { runId: 'run_x' });
    assert.match(refused.error, /pending interrupt/);
    assert.equal(requests.length, 1, 'nothing was sent');

    const resume = buildResumeArray(agent.pendingInterrupts, {
      apr_1: { status: 'resolved', payload: { approved: true } },
    });
    const second = await run(agent, { runId: 'run_2', resume });
    assert.equal(second.error, null);
    assert.deepEqual(second.pendingInterrupts, []);

    const body = JSON.parse(requests[1].body);
    assert.equal(validateOfficial({ type: 'RUN_STARTED', threadId: 't', runId: 'r', input: body }), null);
    assert.deepEqual(body.resume, [{ interruptId: 'apr_1', status: 'resolved', payload: { approved: true } }]);
    checkGoldenJson('request-approval.json', body);
  });
});

test('an approval three sub-agents down is resumed at the top, and the continuation finishes every subagent', async () => {
  const input = agUiInput(scenario('subagent_approval').input);
  const resumed = transcript('subagent_approval.resumed');
  for (const event of frames(resumed)) assert.equal(validateOfficial(event), null, JSON.stringify(event));
  await withServer([transcript('subagent_approval'), resumed], async (url, requests) => {
    const agent = agentFor(url, { initialMessages: input });
    const first = await run(agent, { runId: 'run_1' });
    assert.equal(first.error, null);
    assert.deepEqual(first.warnings, []);
    const [interrupt] = first.pendingInterrupts;
    assert.deepEqual([interrupt.id, interrupt.subagentRunId], ['apr_1', 'run_d']);

    const resume = buildResumeArray(agent.pendingInterrupts, {
      apr_1: { status: 'resolved', payload: { approved: true } },
    });
    const second = await run(agent, { runId: 'run_2', resume });
    assert.equal(second.error, null);
    assert.deepEqual(second.warnings, [], 'the verifier took the reopened subagents');
    assert.deepEqual(second.pendingInterrupts, []);
    assert.equal(second.finished.outcome, 'success');
    assert.deepEqual(
      second.events.filter((e) => e.type === 'SUBAGENT_FINISHED').map((e) => [e.subagentRunId, e.result]),
      [
        ['run_d', 'Deleted old.log.'],
        ['run_c', 'The cleaner deleted old.log.'],
        ['run_b', 'The logs are clean.'],
      ],
    );

    // The cleaner's result joins its call, in the cleaner's messages; the answer goes up as the
    // director's result, and the conversation ends with the parent's text.
    const groups = byRun(second.messages);
    const cleaned = groups.run_d.find((m) => m.role === 'tool');
    assert.equal(cleaned.toolCallId, 'run_d:call_del');
    assert.deepEqual(JSON.parse(cleaned.content), { deleted: 'old.log' });
    const own = groups[''];
    assert.deepEqual(
      own.slice(-2).map((m) => [m.role, m.toolCallId ?? null, m.content]),
      [
        ['tool', 'call_1', 'The logs are clean.'],
        ['assistant', null, 'All clean.'],
      ],
    );

    const body = JSON.parse(requests[1].body);
    assert.equal(validateOfficial({ type: 'RUN_STARTED', threadId: 't', runId: 'r', input: body }), null);
    assert.deepEqual(body.resume, [{ interruptId: 'apr_1', status: 'resolved', payload: { approved: true } }]);
    assert.ok(body.messages.some((m) => m.subagentRunId === 'run_d'), 'the history holds the subagents\' messages');
    checkGoldenJson('request-subagent_approval.json', body);
  });
});

test('the reply used above is itself a valid run', () => {
  for (const event of frames(reply)) assert.equal(validateOfficial(event), null);
});
