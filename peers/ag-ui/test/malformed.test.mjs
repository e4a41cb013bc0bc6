// Streams the client must refuse, so that the scenario tests above mean something: the same
// client, fed broken transcripts (most of them a golden one with one thing broken), rejects the
// run.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runTranscript } from '../agent.mjs';
import { transcript, validateClient, validateOfficial } from '../support.mjs';

const sse = (...events) => events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('');
const started = { type: 'RUN_STARTED', threadId: 't', runId: 'r' };
const finished = { type: 'RUN_FINISHED', threadId: 't', runId: 'r' };

/** Runs `body` and insists the client rejected it, with a message matching `why`. */
async function rejects(body, why) {
  const out = await runTranscript(body);
  assert.notEqual(out.error, null, 'the client accepted it');
  assert.match(out.error, why);
}

test('TEXT_MESSAGE_CONTENT without its START', async () => {
  await rejects(
    sse(started, { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm', delta: 'x' }, finished),
    /TEXT_MESSAGE_CONTENT/,
  );
});

test('a null optional field', async () => {
  const start = { type: 'TEXT_MESSAGE_START', messageId: 'm', role: null };
  assert.notEqual(validateClient(start), null);
  assert.notEqual(validateOfficial(start), null);
  await rejects(sse(started, start, { type: 'TEXT_MESSAGE_END', messageId: 'm' }, finished), /role|null|Expected/i);
});

test('a golden transcript with CRLF framing', async () => {
  await rejects(transcript('text').replaceAll('\n', '\r\n'), /JSON|Unexpected|parse/i);
});

test('a golden transcript missing a TEXT_MESSAGE_END', async () => {
  const broken = transcript('text').replace(/data: \{"type":"TEXT_MESSAGE_END"[^\n]*\n\n/, '');
  await rejects(broken, /RUN_FINISHED|open|progress/i);
});

test('a golden transcript missing its RUN_STARTED', async () => {
  const broken = transcript('tool_call').replace(/^data: \{"type":"RUN_STARTED"[^\n]*\n\n/, '');
  await rejects(broken, /RUN_STARTED/);
});

test('a golden transcript whose STEP_STARTED is never finished', async () => {
  const broken = transcript('tool_call').replace(/data: \{"type":"STEP_FINISHED","stepName":"step_2"\}\n\n/, '');
  await rejects(broken, /step/i);
});

test('an interrupt outcome with no interrupts', async () => {
  await rejects(sse(started, { ...finished, outcome: { type: 'interrupt', interrupts: [] } }), /interrupt|least|too_small|Array/i);
});
