#!/usr/bin/env node
// Decodes an AI SDK "UI message stream" (SSE) with the AI SDK's own client code
// (npm `ai`, pinned in package.json) and prints the messages the client rebuilds.
//
//   node decode.mjs [--mode chat|read] [--messages history.json] [options] FILE|-
//
// Prints one JSON object on stdout: {"messages": [...], "error": null | "...", "chunks": N}.
// Exit 0 whenever the stream was decoded, even if the client reported an error
// in-band; exit 2 on misuse (bad arguments, unreadable input, bad history).
//
// Nothing here parses, validates or orders chunks: the SSE parsing, the zod
// chunk schema and the ordering checks all run inside the SDK.

import { readFile, writeFile } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import {
  AbstractChat,
  DefaultChatTransport,
  parseJsonEventStream,
  readUIMessageStream,
  uiMessageChunkSchema,
} from 'ai';

const USAGE = `usage: node decode.mjs [--mode chat|read] [--messages HISTORY.json] [options] FILE|-

  FILE|-               the SSE bytes as a server sends them ("-" reads stdin)
  --mode chat          (default) the path useChat takes: AbstractChat + DefaultChatTransport
  --mode read          parseJsonEventStream + uiMessageChunkSchema piped into readUIMessageStream
  --messages FILE      prior history: a UIMessage[] array, or an object with a "messages" array
                       (such as a recorded request body)
chat mode only:
  --trigger T          auto (default) | submit | continue | regenerate | resume
                       auto: continue when the history ends with an assistant message, else submit
                       submit: chat.sendMessage({text}); continue: chat.sendMessage() (how the SDK
                       sends approval answers and client tool outputs); regenerate: chat.regenerate();
                       resume: chat.resumeStream() (GET {api}/{chatId}/stream)
  --text TEXT          the user message text for submit (default "hello")
  --chat-id ID         the chat id (default "chat")
  --user-id ID         submit: the id of the user message (default: generated)
  --approve ID         after the stream, answer approval ID with addToolApprovalResponse
  --deny ID            ({approved: true or false}) and continue with sendMessage()
  --next FILE          the SSE bytes of the response to that continuation (default: data: [DONE])
  --dump-request FILE  write the HTTP request the SDK made ({method, url, headers, body}) as JSON
                       (an array when it made more than one)

Output: {"messages": [UIMessage...], "error": null | "<message>", "chunks": <chunks parsed>}
Exit: 0 when decoded (even with an in-band error), 2 on misuse.`;

const TRIGGERS = new Set(['auto', 'submit', 'continue', 'regenerate', 'resume']);

export class UsageError extends Error {}

export function parseArgs(argv) {
  const opts = { mode: 'chat', trigger: 'auto', text: 'hello', chatId: 'chat', messages: null, dumpRequest: null, input: null, userId: null, approve: null, deny: null, next: null };
  const given = new Set();
  const valueFlags = {
    '--mode': 'mode',
    '--messages': 'messages',
    '--trigger': 'trigger',
    '--text': 'text',
    '--chat-id': 'chatId',
    '--dump-request': 'dumpRequest',
    '--user-id': 'userId',
    '--approve': 'approve',
    '--deny': 'deny',
    '--next': 'next',
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '-h' || arg === '--help') {
      opts.help = true;
      continue;
    }
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    const flag = eq === -1 ? arg : arg.slice(0, eq);
    if (Object.hasOwn(valueFlags, flag)) {
      let value;
      if (eq !== -1) value = arg.slice(eq + 1);
      else if (i + 1 < argv.length) value = argv[++i];
      else throw new UsageError(`${flag} needs a value`);
      opts[valueFlags[flag]] = value;
      given.add(flag);
    } else if (arg.startsWith('-') && arg !== '-') {
      throw new UsageError(`unknown option ${arg}`);
    } else if (opts.input != null) {
      throw new UsageError(`only one input file, got ${opts.input} and ${arg}`);
    } else {
      opts.input = arg;
    }
  }
  if (opts.help) return opts;
  if (opts.mode !== 'chat' && opts.mode !== 'read') throw new UsageError(`--mode must be chat or read, not ${opts.mode}`);
  if (!TRIGGERS.has(opts.trigger)) throw new UsageError(`--trigger must be one of ${[...TRIGGERS].join(', ')}`);
  if (opts.mode === 'read') {
    const chatOnly = ['--trigger', '--text', '--chat-id', '--dump-request', '--user-id', '--approve', '--deny', '--next'].filter((flag) =>
      given.has(flag),
    );
    if (chatOnly.length > 0) throw new UsageError(`${chatOnly.join(', ')}: chat mode only`);
  }
  if (opts.approve != null && opts.deny != null) throw new UsageError('--approve and --deny: one answer at a time');
  if (opts.next != null && opts.approve == null && opts.deny == null) throw new UsageError('--next needs --approve or --deny');
  if (opts.input == null) throw new UsageError('missing input FILE (or - for stdin)');
  return opts;
}

/** Accepts a UIMessage[] or an object carrying one under "messages" (a recorded request body). */
export function historyFromJson(value) {
  const messages = Array.isArray(value) ? value : value?.messages;
  if (!Array.isArray(messages)) throw new UsageError('--messages: expected a UIMessage array or an object with a "messages" array');
  for (const [i, m] of messages.entries()) {
    if (m == null || typeof m !== 'object' || typeof m.id !== 'string' || typeof m.role !== 'string' || !Array.isArray(m.parts)) {
      throw new UsageError(`--messages: message ${i} needs a string id, a string role and a parts array`);
    }
  }
  return messages;
}

function sseBody(bytes) {
  return new ReadableStream({
    start(controller) {
      if (bytes.byteLength > 0) controller.enqueue(bytes);
      controller.close();
    },
  });
}

function errorText(error) {
  if (error == null) return null;
  if (error instanceof Error) return error.message;
  return String(error);
}

/**
 * The framework-free store a Chat needs. `ai` exports only AbstractChat; the
 * framework packages subclass it with a reactive ChatState. This one is a plain
 * object that stores a copy of each message as the SDK writes it.
 */
class PlainChatState {
  constructor(messages) {
    this.status = 'ready';
    this.error = undefined;
    this.messages = messages.map((m) => structuredClone(m));
  }
  pushMessage = (message) => {
    this.messages = this.messages.concat(this.snapshot(message));
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (index, message) => {
    this.messages = [...this.messages.slice(0, index), this.snapshot(message), ...this.messages.slice(index + 1)];
  };
  snapshot = (thing) => structuredClone(thing);
}

class Chat extends AbstractChat {
  constructor({ messages = [], ...init }) {
    super({ ...init, state: new PlainChatState(messages) });
  }
}

/** DefaultChatTransport, unchanged, plus a count of the chunks its parser hands to the chat. */
class CountingChatTransport extends DefaultChatTransport {
  constructor(options) {
    super(options);
    this.chunks = 0;
  }
  processResponseStream(stream) {
    return super.processResponseStream(stream).pipeThrough(
      new TransformStream({
        transform: (chunk, controller) => {
          this.chunks++;
          controller.enqueue(chunk);
        },
      }),
    );
  }
}

function sequentialIds(prefix) {
  let n = 0;
  return () => `${prefix}${++n}`;
}

const DONE = new TextEncoder().encode('data: [DONE]\n\n');

async function decodeChat(
  bytes,
  { history = [], trigger = 'auto', text = 'hello', chatId = 'chat', userId = null, answer = null, next = DONE } = {},
) {
  const requests = [];
  const responses = [bytes, next];
  const transport = new CountingChatTransport({
    api: '/api/chat',
    fetch: async (url, init = {}) => {
      let body = init.body;
      if (typeof body === 'string') {
        try {
          body = JSON.parse(body);
        } catch {
          // keep the raw text
        }
      }
      requests.push({ method: init.method ?? 'GET', url: String(url), headers: init.headers ?? {}, body: body ?? null });
      return new Response(sseBody(responses[Math.min(requests.length - 1, 1)]), {
        status: 200,
        headers: { 'content-type': 'text/event-stream', 'x-vercel-ai-ui-message-stream': 'v1' },
      });
    },
  });
  const chat = new Chat({ id: chatId, messages: history, transport, generateId: sequentialIds('gen-') });

  let effective = trigger;
  if (effective === 'auto') effective = history.at(-1)?.role === 'assistant' ? 'continue' : 'submit';
  switch (effective) {
    case 'submit':
      await chat.sendMessage(userId == null ? { text } : { id: userId, role: 'user', parts: [{ type: 'text', text }] });
      break;
    case 'continue':
      await chat.sendMessage();
      break;
    case 'regenerate':
      await chat.regenerate();
      break;
    case 'resume':
      await chat.resumeStream();
      break;
  }
  if (answer != null) {
    // What an app does when the user clicks approve or deny, without sendAutomaticallyWhen.
    await chat.addToolApprovalResponse(answer);
    await chat.sendMessage();
  }
  return {
    result: { messages: chat.messages, error: errorText(chat.error), chunks: transport.chunks },
    requests,
  };
}

async function decodeRead(bytes, { history = [] } = {}) {
  let chunks = 0;
  let firstError = null;
  const last = history.at(-1);
  const chunkStream = parseJsonEventStream({ stream: sseBody(bytes), schema: uiMessageChunkSchema }).pipeThrough(
    new TransformStream({
      // parseJsonEventStream yields parse results; a failed one aborts the
      // response, as in DefaultChatTransport.
      transform(parsed, controller) {
        if (!parsed.success) throw parsed.error;
        chunks++;
        controller.enqueue(parsed.value);
      },
    }),
  );
  let message;
  for await (const snapshot of readUIMessageStream({
    message: last?.role === 'assistant' ? structuredClone(last) : undefined,
    stream: chunkStream,
    onError: (error) => {
      firstError ??= error;
    },
  })) {
    message = snapshot;
  }
  return { messages: message === undefined ? [] : [message], error: errorText(firstError), chunks };
}

/** Decodes SSE bytes. Returns {messages, error, chunks} (and, in chat mode, the requests made). */
export async function decode(bytes, { mode = 'chat', ...options } = {}) {
  if (mode === 'read') return { result: await decodeRead(bytes, options), requests: [] };
  return decodeChat(bytes, options);
}

async function readInput(input) {
  if (input === '-') {
    const parts = [];
    for await (const part of process.stdin) parts.push(part);
    return new Uint8Array(Buffer.concat(parts));
  }
  return new Uint8Array(await readFile(input));
}

async function main(argv) {
  let opts;
  let bytes;
  let history = [];
  try {
    opts = parseArgs(argv);
    if (opts.help) {
      process.stdout.write(`${USAGE}\n`);
      return 0;
    }
    try {
      bytes = await readInput(opts.input);
    } catch (error) {
      throw new UsageError(`cannot read ${opts.input}: ${error.message}`);
    }
    if (opts.messages != null) {
      let text;
      try {
        text = await readFile(opts.messages, 'utf8');
      } catch (error) {
        throw new UsageError(`cannot read --messages ${opts.messages}: ${error.message}`);
      }
      let json;
      try {
        json = JSON.parse(text);
      } catch (error) {
        throw new UsageError(`--messages ${opts.messages} is not JSON: ${error.message}`);
      }
      history = historyFromJson(json);
    }
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`decode.mjs: ${error.message}\n${USAGE.split('\n')[0]}\n(--help for more)\n`);
    return 2;
  }

  let next = DONE;
  if (opts.next != null) {
    try {
      next = await readInput(opts.next);
    } catch (error) {
      process.stderr.write(`decode.mjs: cannot read --next ${opts.next}: ${error.message}\n`);
      return 2;
    }
  }
  const answer =
    opts.approve != null ? { id: opts.approve, approved: true } : opts.deny != null ? { id: opts.deny, approved: false } : null;
  const { result, requests } = await decode(bytes, {
    mode: opts.mode,
    history,
    trigger: opts.trigger,
    text: opts.text,
    chatId: opts.chatId,
    userId: opts.userId,
    answer,
    next,
  });
  if (opts.dumpRequest != null) {
    await writeFile(opts.dumpRequest, `${JSON.stringify(requests.length === 1 ? requests[0] : requests, null, 2)}\n`);
  }
  process.stdout.write(`${JSON.stringify(result)}\n`);
  return 0;
}

if (process.argv[1] != null && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error) => {
      process.stderr.write(`decode.mjs: internal error: ${error?.stack ?? error}\n`);
      process.exitCode = 1;
    },
  );
}
