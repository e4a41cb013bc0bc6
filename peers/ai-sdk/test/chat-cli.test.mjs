// `agentwire chat` against a real AI SDK server: a node http server whose /api/chat is the AI
// SDK's own `streamText(…).toUIMessageStreamResponse()` over a mock model from `ai/test` (reasoning,
// a tool call the server executes, then a text that repeats what the user typed). The chat's
// request must pass the SDK's own `validateUIMessages` and `convertToModelMessages`, and its
// terminal output must show every part the stream carried.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { convertToModelMessages, simulateReadableStream, stepCountIs, streamText, tool, validateUIMessages } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { z } from 'zod';
import { binaryPath } from '../../agentwire-server.mjs';

const usage = {
  inputTokens: { total: 3, noCache: 3, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

/** The model's answer to one call: a tool call first, then text quoting the user. */
function answer(prompt) {
  const toolDone = prompt.some((message) => message.role === 'tool');
  if (!toolDone) {
    return [
      { type: 'reasoning-start', id: 'r1' },
      { type: 'reasoning-delta', id: 'r1', delta: 'Checking the weather.' },
      { type: 'reasoning-end', id: 'r1' },
      { type: 'tool-call', toolCallId: 'call-1', toolName: 'weather', input: JSON.stringify({ city: 'Oslo' }) },
      { type: 'finish', finishReason: { unified: 'tool-calls', raw: undefined }, usage },
    ];
  }
  const user = prompt.filter((message) => message.role === 'user').at(-1);
  const said = user.content.map((part) => part.text ?? '').join('');
  return [
    { type: 'text-start', id: 't1' },
    { type: 'text-delta', id: 't1', delta: 'You said: ' },
    { type: 'text-delta', id: 't1', delta: `${said}.` },
    { type: 'text-end', id: 't1' },
    { type: 'finish', finishReason: { unified: 'stop', raw: undefined }, usage },
  ];
}

const tools = {
  weather: tool({
    description: 'The weather in a city',
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => ({ city, celsius: -3 }),
  }),
};

let server;
let url;
const bodies = [];

before(async () => {
  server = http.createServer(async (request, response) => {
    try {
      let text = '';
      for await (const chunk of request) text += chunk;
      const body = JSON.parse(text);
      bodies.push(body);
      const messages = await validateUIMessages({ messages: body.messages });
      const model = new MockLanguageModelV4({
        doStream: async ({ prompt }) => ({ stream: simulateReadableStream({ chunks: answer(prompt), chunkDelayInMs: 5 }) }),
      });
      const result = streamText({ model, messages: await convertToModelMessages(messages), tools, stopWhen: stepCountIs(3) });
      const web = result.toUIMessageStreamResponse();
      response.writeHead(web.status, Object.fromEntries(web.headers));
      for await (const chunk of web.body) response.write(chunk);
      response.end();
    } catch (error) {
      response.writeHead(500, { 'content-type': 'text/plain' });
      response.end(String(error?.stack ?? error));
    }
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  url = `http://127.0.0.1:${server.address().port}/api/chat`;
});
after(() => server?.close());

/** Runs `agentwire chat URL` with these stdin lines; its stdout, stderr and exit code. */
async function chat(lines) {
  const child = spawn(binaryPath(), ['chat', url], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  child.stdin.end(lines.map((line) => `${line}\n`).join(''));
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  const [code] = await once(child, 'exit');
  clearTimeout(timer);
  return { stdout, stderr, code };
}

test('chat renders a real AI SDK stream: reasoning, a tool call and its result, text', async () => {
  const { stdout, stderr, code } = await chat(['hello there', 'and again']);
  assert.equal(code, 0, stderr);
  assert.match(stdout, /\(ai-sdk\)/);
  assert.match(stdout, /Checking the weather\./);
  assert.match(stdout, /▸ weather \{"city":"Oslo"\}/);
  assert.match(stdout, /✓ weather → \{"city":"Oslo","celsius":-3\}/);
  assert.match(stdout, /You said: hello there\./);
  assert.match(stdout, /You said: and again\./);
  // The second request carried the whole conversation, as useChat sends it.
  assert.equal(bodies.length, 2);
  const roles = bodies[1].messages.map((message) => message.role);
  assert.deepEqual(roles, ['user', 'assistant', 'user']);
  assert.equal(bodies[1].trigger, 'submit-message');
  const toolPart = bodies[1].messages[1].parts.find((part) => part.type === 'tool-weather');
  assert.equal(toolPart.state, 'output-available');
  assert.deepEqual(toolPart.output, { city: 'Oslo', celsius: -3 });
});
