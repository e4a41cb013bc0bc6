// @ts-check
// The native API over fetch: JSON requests with the key (if any), the server's errors as
// `ApiError`s carrying its `{error: {code, message}}`, and SSE streams read frame by frame
// from the response body (EventSource cannot POST or send a key).

const KEY_STORAGE = 'agentwire.key';

/** An error answer of the server, or a failure to reach it. */
export class ApiError extends Error {
  /** @param {number} status @param {string} code @param {string} message */
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** The API key kept in this browser, if any. */
export function storedKey() {
  try {
    return localStorage.getItem(KEY_STORAGE) ?? '';
  } catch {
    return '';
  }
}

/** Keeps (or, when empty, forgets) the API key. @param {string} key */
export function storeKey(key) {
  if (key) localStorage.setItem(KEY_STORAGE, key);
  else localStorage.removeItem(KEY_STORAGE);
}

/** @param {Record<string, string>} [extra] */
function headers(extra = {}) {
  const key = storedKey();
  return key ? { ...extra, authorization: `Bearer ${key}` } : extra;
}

/** The error a failed response carries. @param {Response} response */
async function errorOf(response) {
  const text = await response.text().catch(() => '');
  try {
    const { error } = JSON.parse(text);
    if (error?.code) return new ApiError(response.status, error.code, error.message ?? '');
  } catch {
    // Not the API's JSON (a proxy's page): show what came.
  }
  return new ApiError(response.status, `http_${response.status}`, text.slice(0, 300) || response.statusText);
}

/**
 * Sends a request; the answer's JSON, or throws an `ApiError`.
 * @param {string} method @param {string} path @param {any} [body]
 */
export async function request(method, path, body) {
  let response;
  try {
    response = await fetch(path, {
      method,
      headers: headers(body === undefined ? {} : { 'content-type': 'application/json' }),
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (error) {
    throw new ApiError(0, 'network_error', `cannot reach the server: ${error instanceof Error ? error.message : error}`);
  }
  if (!response.ok) throw await errorOf(response);
  return response.status === 204 ? null : response.json();
}

/**
 * Opens an SSE stream (`POST` with a body, or `GET`) and calls `onEvent` with each frame's
 * parsed `data`, in order, until the stream ends (resolves) or `signal` aborts it.
 * @param {string} method @param {string} path @param {any} body
 * @param {(event: any) => void} onEvent
 * @param {AbortSignal} signal
 */
export async function stream(method, path, body, onEvent, signal) {
  let response;
  try {
    response = await fetch(path, {
      method,
      headers: headers({ accept: 'text/event-stream', ...(body === undefined ? {} : { 'content-type': 'application/json' }) }),
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
    });
  } catch (error) {
    if (signal.aborted) return;
    throw new ApiError(0, 'network_error', `cannot reach the server: ${error instanceof Error ? error.message : error}`);
  }
  if (!response.ok) throw await errorOf(response);
  if (!response.body) throw new ApiError(0, 'no_body', 'the server sent no stream');
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  const frames = new SseFrames(onEvent);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      frames.push(value);
    }
  } catch (error) {
    if (signal.aborted) return;
    throw new ApiError(0, 'stream_broken', `the stream broke: ${error instanceof Error ? error.message : error}`);
  }
}

/**
 * SSE framing (the WHATWG rules the server's frames need): `data:` lines joined by newlines,
 * a blank line ends a frame; `event:`, `id:` and comments are not needed (the data names its
 * event and carries its `seq`). Text may arrive split anywhere; only the unfinished line is kept.
 */
export class SseFrames {
  /** @param {(data: any) => void} onData */
  constructor(onData) {
    this.onData = onData;
    this.line = '';
    /** @type {string[]} */
    this.data = [];
  }

  /** @param {string} text */
  push(text) {
    let start = 0;
    for (;;) {
      const end = text.indexOf('\n', start);
      if (end < 0) break;
      this.line += text.slice(start, end);
      this.endLine();
      start = end + 1;
    }
    this.line += text.slice(start);
  }

  endLine() {
    const line = this.line.endsWith('\r') ? this.line.slice(0, -1) : this.line;
    this.line = '';
    if (line === '') {
      if (this.data.length > 0) this.onData(JSON.parse(this.data.join('\n')));
      this.data = [];
    } else if (line.startsWith('data:')) {
      this.data.push(line.slice(line[5] === ' ' ? 6 : 5));
    }
  }
}
