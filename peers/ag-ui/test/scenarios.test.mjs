// Every golden AG-UI transcript of the canonical scenarios, read by the real HttpAgent with its
// verifier active: the client must accept it without a warning, and hold exactly the canonical
// messages mapped to AG-UI messages. Every event must also pass the client's zod schema and the
// official AG-UI 1.0 JSON Schema.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { agentFor, run, runTranscript, withServer } from '../agent.mjs';
import {
  SCENARIOS,
  agUiInput,
  agUiMessages,
  byRun,
  expectedByRun,
  frames,
  hasNull,
  normalizeArgs,
  scenario,
  transcript,
  validateClient,
  validateOfficial,
} from '../support.mjs';

for (const name of SCENARIOS) {
  describe(`scenario ${name}`, () => {
    const sse = transcript(name);
    const canonical = scenario(name);

    test('every event passes the client schema and the official 1.0 schema, with no null', () => {
      assert.ok(!sse.includes('\r'), 'LF-only framing');
      for (const event of frames(sse)) {
        assert.equal(validateClient(event), null, `client schema: ${JSON.stringify(event)}`);
        assert.equal(validateOfficial(event), null, `official schema: ${JSON.stringify(event)}`);
        assert.ok(!hasNull(event), `null in ${JSON.stringify(event)}`);
      }
    });

    test('HttpAgent accepts the run and holds the canonical messages', async () => {
      const input = agUiInput(canonical.input);
      const out = await runTranscript(sse, { initialMessages: input });
      assert.equal(out.error, null);
      assert.deepEqual(out.warnings, [], 'the client warned (stripped fields or dropped events)');
      const expected = [...input, ...canonical.messages.flatMap((m) => agUiMessages(m))];
      if (canonical.subagents === undefined) {
        assert.deepEqual(normalizeArgs(out.messages), normalizeArgs(expected));
      } else {
        // Each run's messages, in its own order, apart from the others'.
        assert.deepEqual(normalizeArgs(byRun(out.messages)), normalizeArgs(expectedByRun(canonical, input)));
      }
      assert.equal(out.events.length, frames(sse).length, 'every event reached the subscriber');

      const [request] = out.requests;
      assert.equal(request.headers.accept, 'text/event-stream');
      assert.deepEqual(JSON.parse(request.body).messages, input);

      const status = canonical.status;
      const last = out.events.at(-1);
      if (status.status === 'failed') {
        assert.equal(last.type, 'RUN_ERROR');
        assert.equal(last.message, status.error.message);
        assert.equal(last.code, status.error.code);
        assert.equal(out.finished, null);
      } else {
        assert.equal(last.type, 'RUN_FINISHED');
        assert.equal(last.runId, 'run_1');
        assert.equal(last.threadId, 'ses_1');
        const outcome = { completed: 'success', awaiting: status.awaiting === 'approval' ? 'interrupt' : 'success' };
        assert.equal(out.finished.outcome, outcome[status.status]);
      }
    });
  });
}

describe('what the client makes of each ending', () => {
  test('client_tool leaves call_1 pending', async () => {
    const out = await runTranscript(transcript('client_tool'));
    assert.equal(out.finished.outcome, 'success');
    assert.deepEqual(out.finished.pendingToolCallIds, ['call_1']);
    assert.deepEqual(out.pendingInterrupts, []);
  });

  test('approval leaves an interrupt for call_1', async () => {
    const out = await runTranscript(transcript('approval'));
    assert.equal(out.finished.outcome, 'interrupt');
    assert.equal(out.pendingInterrupts.length, 1);
    const [interrupt] = out.pendingInterrupts;
    assert.equal(interrupt.id, 'apr_1');
    assert.equal(interrupt.reason, 'tool_call');
    assert.equal(interrupt.toolCallId, 'call_1');
    assert.equal(interrupt.message, 'delete_file changes the workspace');
  });

  test('completed runs leave nothing pending', async () => {
    for (const name of ['text', 'tool_call', 'parallel_tools', 'tool_error']) {
      const out = await runTranscript(transcript(name));
      assert.deepEqual(out.finished.pendingToolCallIds, [], name);
      assert.deepEqual(out.pendingInterrupts, [], name);
    }
  });

  test('parts with no AG-UI message reach subscribers as CUSTOM agentwire.part events', async () => {
    const out = await runTranscript(transcript('rich_parts'));
    const parts = scenario('rich_parts').messages[0].parts.filter((p) => ['source', 'file', 'data'].includes(p.type));
    assert.deepEqual(
      out.custom.map((e) => [e.name, e.value]),
      parts.map((part) => ['agentwire.part', { messageId: 'msg_1', part }]),
    );
  });

  test('keep-alive comments between events change nothing', async () => {
    const sse = transcript('tool_call');
    const plain = await runTranscript(sse);
    const kept = await runTranscript(sse.replaceAll('\n\n', '\n\n: keepalive\n\n'));
    assert.equal(kept.error, null);
    assert.deepEqual(kept.messages, plain.messages);
  });

  test('sub-agents are subagents: started under their parents, each ending with its answer', async () => {
    const out = await runTranscript(transcript('subagents'));
    const lifecycle = out.events
      .filter((e) => e.type.startsWith('SUBAGENT_'))
      .map((e) => [e.type, e.subagentRunId, e.parentSubagentRunId ?? e.result ?? null]);
    assert.deepEqual(lifecycle, [
      ['SUBAGENT_STARTED', 'run_b', null],
      ['SUBAGENT_STARTED', 'run_c', null],
      ['SUBAGENT_STARTED', 'run_d', 'run_b'],
      ['SUBAGENT_FINISHED', 'run_d', 'Yes, it is Paris.'],
      ['SUBAGENT_FINISHED', 'run_c', 'Hello from the writer!'],
      ['SUBAGENT_FINISHED', 'run_b', 'Let me check with the fact checker.\nThe capital of France is Paris.'],
    ]);
    const runs = scenario('subagents').subagents;
    for (const run of runs) {
      const started = out.events.find((e) => e.type === 'SUBAGENT_STARTED' && e.subagentRunId === run.run_id);
      assert.equal(started.name, run.agent);
      const parentPrefix = run.parent_run_id === 'run_1' ? '' : `${run.parent_run_id}:`;
      assert.equal(started.parentToolCallId, `${parentPrefix}${run.parent_tool_call_id}`);
    }
    assert.deepEqual(out.finished.pendingToolCallIds, []);
  });

  test('an approval three sub-agents down is an interrupt naming the cleaner', async () => {
    const out = await runTranscript(transcript('subagent_approval'));
    assert.equal(out.finished.outcome, 'interrupt');
    assert.deepEqual(
      out.pendingInterrupts.map((i) => [i.id, i.reason, i.toolCallId, i.subagentRunId]),
      [['apr_1', 'tool_call', 'run_d:call_del', 'run_d']],
    );
    const suspended = out.events.filter((e) => e.type === 'SUBAGENT_FINISHED').map((e) => [e.subagentRunId, e.outcome]);
    assert.deepEqual(suspended, [
      ['run_d', { type: 'suspended', interruptIds: ['apr_1'] }],
      ['run_c', { type: 'suspended' }],
      ['run_b', { type: 'suspended' }],
    ]);
  });

  test('plans and artifacts are activity messages, updated in place and never sent back', async () => {
    const sse = transcript('activity');
    for (const event of frames(sse)) {
      assert.equal(validateClient(event), null, JSON.stringify(event));
      assert.equal(validateOfficial(event), null, JSON.stringify(event));
    }
    await withServer([sse, sse], async (url, requests) => {
      const agent = agentFor(url);
      const out = await run(agent, { runId: 'run_1' });
      assert.equal(out.error, null);
      assert.deepEqual(out.warnings, []);
      const ours = { agentwire: { messageId: 'msg_1' } };
      assert.deepEqual(
        out.messages.filter((m) => m.role === 'activity'),
        [
          {
            id: 'plan:plan_1',
            role: 'activity',
            activityType: 'agentwire.plan',
            content: { plan_id: 'plan_1', action: 'completed', details: { steps: ['Read', 'Write'], done: 2 } },
            metadata: ours,
          },
          {
            id: 'artifact:art_1',
            role: 'activity',
            activityType: 'agentwire.artifact',
            content: { artifact_id: 'art_1', title: 'Notes', version: 1 },
            metadata: ours,
          },
        ],
      );
      assert.deepEqual(out.custom, [], 'no CUSTOM events for them');
      // Activity messages are the client's display state: the next request leaves them out.
      await run(agent, { runId: 'run_2' });
      const body = JSON.parse(requests[1].body);
      assert.ok(!body.messages.some((m) => m.role === 'activity'));
    });
  });

  test('usage arrives on RUN_FINISHED', async () => {
    const out = await runTranscript(transcript('text'));
    assert.deepEqual(out.events.at(-1).usage, [{ inputTokens: 5, outputTokens: 9, totalTokens: 14 }]);
  });
});
