// The official `openai` npm client's `responses` against a live `agentwire serve` (started by
// ../../agentwire-server.mjs on the scripted agents of ../agents.mjs): text with and without a
// stream (raw events and the SDK's strict `responses.stream()` accumulator), a function tool the
// client runs (`function_call` → `function_call_output` with `previous_response_id`), three
// turns chained by `previous_response_id`, the agent's own tool as an `mcp_call`, background +
// retrieve + a resumed stream, a stream cut short and resumed, cancel, and OpenAI's error shape.

import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { startAgentwire } from '../../agentwire-server.mjs';
import { ANSWER, FILE, WEATHER_ARGS, config, scripts, weatherTool } from '../agents.mjs';

let server;
let client;

before(async () => {
  server = await startAgentwire({ config, files: scripts, dirs: ['ws'] });
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});
after(() => server?.stop());

/** The events of a raw stream, checked: gapless sequence numbers from 0, created first. */
async function collect(stream) {
  const events = [];
  for await (const event of stream) events.push(event);
  assert.deepEqual(events.map((event) => event.sequence_number), events.map((_, i) => i));
  assert.equal(events[0].type, 'response.created');
  return events;
}

describe('openai npm client against agentwire serve', () => {
  test('a response without a stream', async () => {
    const response = await client.responses.create({ model: 'talker', input: 'hello' });
    assert.equal(response.object, 'response');
    assert.equal(response.status, 'completed');
    assert.equal(response.model, 'talker');
    assert.equal(response.output_text, ANSWER.join(''));
    assert.deepEqual(response.output.map((item) => item.type), ['reasoning', 'message']);
    assert.equal(response.output[0].summary[0].text, 'The user says hello.');
    assert.equal(response.usage.input_tokens, 3);
    assert.equal(response.usage.output_tokens, 4);
    assert.equal(response.usage.total_tokens, 7);
  });

  test('a streamed response, raw and through responses.stream()', async () => {
    const events = await collect(await client.responses.create({ model: 'talker', input: 'hello', stream: true }));
    const deltas = events.filter((event) => event.type === 'response.output_text.delta').map((event) => event.delta);
    assert.deepEqual(deltas, ANSWER);
    assert.deepEqual(
      [...new Set(events.map((event) => event.type))],
      [
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.reasoning_summary_part.added',
        'response.reasoning_summary_text.delta',
        'response.reasoning_summary_text.done',
        'response.reasoning_summary_part.done',
        'response.output_item.done',
        'response.content_part.added',
        'response.output_text.delta',
        'response.output_text.done',
        'response.content_part.done',
        'response.completed',
      ],
    );
    const stream = client.responses.stream({ model: 'talker', input: 'hello' });
    const texts = [];
    stream.on('response.output_text.delta', (event) => texts.push(event.snapshot));
    const final = await stream.finalResponse();
    assert.equal(final.output_text, ANSWER.join(''));
    assert.equal(texts.at(-1), ANSWER.join(''));
  });

  test('a function tool the client runs, answered with previous_response_id', async () => {
    const first = await client.responses.create({ model: 'asker', input: 'weather?', tools: [weatherTool] });
    assert.equal(first.status, 'completed');
    const call = first.output.find((item) => item.type === 'function_call');
    assert.ok(call, 'the response ends with the call');
    assert.equal(call.name, 'get_weather');
    assert.deepEqual(JSON.parse(call.arguments), WEATHER_ARGS);
    assert.equal(first.output_text, 'Let me look.');
    // The client runs the tool and streams the answer through the SDK's strict accumulator.
    const stream = client.responses.stream({
      model: 'asker',
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: JSON.stringify({ sky: 'sunny' }) }],
      tools: [weatherTool],
    });
    const second = await stream.finalResponse();
    assert.notEqual(second.id, first.id);
    assert.equal(second.previous_response_id, first.id);
    assert.equal(second.status, 'completed');
    assert.equal(second.output_text, 'It is sunny in Paris.');
    assert.ok(!second.output.some((item) => item.type === 'function_call'), 'the client output is not sent back');
    // Both parts of the run can be read again.
    assert.equal((await client.responses.retrieve(first.id)).output_text, 'Let me look.');
    assert.equal((await client.responses.retrieve(second.id)).output_text, 'It is sunny in Paris.');
  });

  test('three turns chained by previous_response_id share one session', async () => {
    let previous;
    const ids = [];
    for (const text of ['one', 'two', 'three']) {
      const response = await client.responses.create({ model: 'talker', input: text, previous_response_id: previous });
      assert.equal(response.output_text, ANSWER.join(''));
      ids.push(response.id);
      previous = response.id;
    }
    const runs = await Promise.all(ids.map((id) => fetch(`${server.url}/v1/runs/${id}`).then((res) => res.json())));
    const sessions = new Set(runs.map((body) => body.run.session_id));
    assert.equal(sessions.size, 1);
    const session = await fetch(`${server.url}/v1/sessions/${[...sessions][0]}`).then((res) => res.json());
    assert.deepEqual(session.messages.map((message) => message.role), ['user', 'assistant', 'user', 'assistant', 'user', 'assistant']);
  });

  test("the agent's own tool is an mcp_call with its output", async () => {
    const stream = client.responses.stream({ model: 'writer', input: 'write it' });
    const final = await stream.finalResponse();
    const call = final.output.find((item) => item.type === 'mcp_call');
    assert.ok(call);
    assert.equal(call.name, 'write_file');
    assert.equal(call.server_label, 'writer');
    assert.equal(call.status, 'completed');
    assert.deepEqual(JSON.parse(call.arguments), FILE);
    assert.equal(final.output_text, 'Written.');
    assert.equal(readFileSync(path.join(server.dir, 'ws', FILE.path), 'utf8'), FILE.content);
  });

  test('background, retrieve, and a stream resumed after a sequence number', async () => {
    const queued = await client.responses.create({ model: 'slow', input: 'go', background: true });
    assert.ok(['queued', 'in_progress'].includes(queued.status), queued.status);
    assert.equal(queued.background, true);
    const resumed = await collectResumed(queued.id, 5);
    assert.equal(resumed[0].sequence_number, 6);
    assert.equal(resumed.at(-1).type, 'response.completed');
    let done = await client.responses.retrieve(queued.id);
    for (let i = 0; done.status !== 'completed' && i < 100; i += 1) {
      done = await client.responses.retrieve(queued.id);
    }
    assert.equal(done.status, 'completed');
    assert.equal(done.output_text, Array.from({ length: 40 }, (_, i) => `w${i} `).join(''));
    assert.equal(resumed.at(-1).response.output_text ?? done.output_text, done.output_text);
  });

  test('a stream cut short is resumed after the last event seen', async () => {
    const stream = await client.responses.create({ model: 'slow', input: 'go', stream: true });
    const seen = [];
    for await (const event of stream) {
      seen.push(event);
      // Leaving the loop aborts the request: the connection is cut mid-answer.
      if (seen.length === 8) break;
    }
    assert.equal(seen[0].type, 'response.created');
    const resumed = await collectResumed(seen[0].response.id, seen.at(-1).sequence_number);
    assert.equal(resumed.at(-1).type, 'response.completed');
    const text = [...seen, ...resumed]
      .filter((event) => event.type === 'response.output_text.delta')
      .map((event) => event.delta)
      .join('');
    assert.equal(text, Array.from({ length: 40 }, (_, i) => `w${i} `).join(''));
  });

  test('cancel', async () => {
    const queued = await client.responses.create({ model: 'slow', input: 'go', background: true });
    const canceled = await client.responses.cancel(queued.id);
    assert.equal(canceled.id, queued.id);
    assert.equal(canceled.status, 'cancelled');
  });

  test("errors in OpenAI's shape", async () => {
    await assert.rejects(client.responses.create({ model: 'nobody', input: 'hi' }), (error) => {
      assert.ok(error instanceof OpenAI.NotFoundError);
      assert.equal(error.code, 'model_not_found');
      assert.equal(error.param, 'model');
      assert.equal(error.type, 'invalid_request_error');
      return true;
    });
    await assert.rejects(client.responses.retrieve('run_nothing'), OpenAI.NotFoundError);
    await assert.rejects(client.responses.create({ model: 'talker', input: 'hi', temperature: 7 }), (error) => {
      assert.ok(error instanceof OpenAI.BadRequestError);
      assert.equal(error.param, 'temperature');
      return true;
    });
  });
});

/** The events of `retrieve(id, {stream: true, starting_after})`. */
async function collectResumed(id, startingAfter) {
  const stream = await client.responses.retrieve(id, { stream: true, starting_after: startingAfter });
  const events = [];
  for await (const event of stream) events.push(event);
  assert.deepEqual(events.map((event) => event.sequence_number), events.map((_, i) => i + startingAfter + 1));
  return events;
}
