// Runs AG-UI SSE transcripts through the real @ag-ui/client 1.0.0 `HttpAgent`, exactly as an
// application does: the agent POSTs its RunAgentInput to a local HTTP server (port 0), which
// answers `200 text/event-stream` with the transcript. Everything between the bytes and the
// messages — SSE parsing, the zod enforcement of every event, the ordering verifier, chunk
// expansion and the reducer that builds `agent.messages` — is the client's own code.
//
// As a command: `node agent.mjs FILE|-` prints one line of JSON
// {"messages", "events", "error", "warnings", "pendingInterrupts"} and exits 0 (even when the
// client rejects the stream: `error` then says why); bad arguments exit 2.

import { readFileSync } from 'node:fs';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { HttpAgent } from '@ag-ui/client';

/**
 * Serves one response per POST, in order (the last one repeats), and records each request body.
 * Calls `fn(url, requests)` and closes the server when it settles.
 */
export async function withServer(responses, fn) {
  const requests = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      requests.push({ method: req.method, headers: req.headers, body });
      const sse = responses[Math.min(requests.length, responses.length) - 1];
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      // Several writes, so the client's parser sees frames split across reads.
      const bytes = Buffer.from(sse, 'utf8');
      const step = Math.max(1, Math.ceil(bytes.length / 7));
      for (let at = 0; at < bytes.length; at += step) res.write(bytes.subarray(at, at + step));
      res.end();
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  try {
    return await fn(`http://127.0.0.1:${port}/agent`, requests);
  } finally {
    server.closeAllConnections?.();
    await new Promise((resolve) => server.close(resolve));
  }
}

/**
 * Runs `agent.runAgent(params)` and returns what the client made of the response:
 * {messages, newMessages, events (as the subscriber saw them, after enforcement and
 * verification), custom (CUSTOM events), finished (the onRunFinishedEvent params), error (the
 * rejection's message, or null), warnings (console.warn lines), pendingInterrupts}.
 */
export async function run(agent, params = {}) {
  const events = [];
  const custom = [];
  let finished = null;
  const warnings = [];
  const { warn, error: logError } = console;
  console.warn = (...args) => warnings.push(args.map(String).join(' '));
  console.error = () => {}; // the client logs the rejection it also throws
  let error = null;
  let newMessages = [];
  try {
    const result = await agent.runAgent(params, {
      onEvent: ({ event }) => {
        events.push(structuredClone(event));
      },
      onCustomEvent: ({ event }) => {
        custom.push(structuredClone(event));
      },
      onRunFinishedEvent: (finishedParams) => {
        const { messages, state, agent: _agent, input, ...rest } = finishedParams;
        finished = structuredClone(rest);
      },
    });
    newMessages = result.newMessages;
  } catch (err) {
    error = err instanceof Error ? err.message : String(err);
  } finally {
    console.warn = warn;
    console.error = logError;
  }
  return {
    messages: structuredClone(agent.messages),
    newMessages,
    events,
    custom,
    finished,
    error,
    warnings,
    pendingInterrupts: structuredClone(agent.pendingInterrupts),
  };
}

/** A fresh HttpAgent on `url` holding `initialMessages`, for thread `ses_1`. */
export function agentFor(url, { initialMessages = [], threadId = 'ses_1' } = {}) {
  return new HttpAgent({ url, threadId, initialMessages });
}

/** Serves `sse` once and runs an agent on it: the whole round in one call. */
export async function runTranscript(sse, { initialMessages, params = { runId: 'run_1' } } = {}) {
  return withServer([sse], async (url, requests) => {
    const agent = agentFor(url, { initialMessages });
    const out = await run(agent, params);
    return { ...out, requests };
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const file = process.argv[2];
  if (!file || process.argv.length > 3) {
    console.error('usage: node agent.mjs FILE|-');
    process.exit(2);
  }
  let sse;
  try {
    sse = readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (err) {
    console.error(`cannot read ${file}: ${err.message}`);
    process.exit(2);
  }
  const { messages, events, error, warnings, pendingInterrupts } = await runTranscript(sse);
  console.log(JSON.stringify({ messages, events, error, warnings, pendingInterrupts }));
}
