// A live `agentwire serve` for the npm peers' tests: the binary the workspace built, started on
// port 0 with an agentwire.toml and scripted brains written into a temporary directory.
//
//   const server = await startAgentwire({ config, files: { 'talker.json': script }, dirs: ['ws'] });
//   server.url   // http://127.0.0.1:PORT, from the `agentwire listening on` line
//   server.dir   // the temporary directory (config, scripts, workspaces, data)
//   await server.stop();
//
// `dir` starts it in the directory of an earlier one instead (its data: a restart; or beside it
// on one `databaseUrl`: a second node sharing its workspaces), `stop({ keep: true })` leaves the
// directory, and `kill()` ends it with SIGKILL, leaving the directory.
//
// The binary is $AGENTWIRE_BIN, else $CARGO_TARGET_DIR/debug/agentwire, else target/debug/agentwire
// of the repository; `scripts/test` has built it (cargo test builds the CLI's binary) before the
// peers run. Nothing here builds it, so several suites cost nothing more; a missing binary, or one
// older than a source in cargo's dep-info file for it, fails with the command that makes it.
// `stop` sends SIGTERM (SIGKILL after 5 s) and removes the directory; the server is killed if the
// test process exits first.
//
// `waitFor(what, check)` polls until a condition holds (a deadline, never a fixed sleep);
// `getSession(url, id)` reads a session (`GET /v1/sessions/{id}`), `getHistory(url, id)` its
// history as `role: text` lines, and `getInbox(url, id)` the messages sent into it
// (`GET /v1/sessions/{id}/messages`).
// Only node's own modules are used, so any peer can import this file.

import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BUILD = 'cargo build -p agentwire-cli';

let schemas = 0;

/**
 * A PostgreSQL schema of the caller's own on the test server that scripts/postgres.sh starts
 * ($AGENTWIRE_TEST_DATABASE_URL), as a URL agentwire opens; undefined without that server.
 * Nodes of one test share it; tests do not: runs of one would be swept by another's nodes as a
 * dead node's, and a checkout with a newer migration would break every other.
 * @returns {string | undefined}
 */
export function postgresSchemaUrl() {
  const base = process.env.AGENTWIRE_TEST_DATABASE_URL;
  if (!base) return undefined;
  const schema = `test_${process.pid}_${Date.now()}_${schemas++}`;
  execFileSync('psql', [base, '-qc', `CREATE SCHEMA ${schema}`]);
  return `${base}${base.includes('?') ? '&' : '?'}options[search_path]=${schema}`;
}

/** The agentwire binary the tests run. */
export function binaryPath() {
  if (process.env.AGENTWIRE_BIN) return process.env.AGENTWIRE_BIN;
  const target = path.resolve(repoRoot, process.env.CARGO_TARGET_DIR ?? 'target');
  return path.join(target, 'debug', process.platform === 'win32' ? 'agentwire.exe' : 'agentwire');
}

/**
 * Refuses a missing binary, or one older than a source it is built from: the sources cargo lists
 * in its dep-info file beside the binary.
 */
function checkFresh(binary) {
  if (!existsSync(binary)) throw new Error(`${binary} is missing: build it first with \`${BUILD}\``);
  const depInfo = `${binary}.d`;
  if (!existsSync(depInfo)) return;
  const built = statSync(binary).mtimeMs;
  const sources = readFileSync(depInfo, 'utf8').split(': ').slice(1).join(': ').split(/\s+/);
  for (const source of sources) {
    if (source && existsSync(source) && statSync(source).mtimeMs > built) {
      throw new Error(`${binary} is older than ${source}: rebuild it with \`${BUILD}\``);
    }
  }
}

const running = new Set();
// Also on a crash of the test process itself, never leave a server behind.
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * Starts `agentwire serve` on `config` (the TOML text) with `files` (name → text, or a value
 * written as JSON) and empty `dirs` beside it. Resolves once it listens.
 */
export async function startAgentwire({ config, files = {}, dirs = [], dir: reused, databaseUrl }) {
  const binary = binaryPath();
  checkFresh(binary);
  const dir = reused ?? mkdtempSync(path.join(tmpdir(), 'agentwire-peer-serve-'));
  for (const [name, content] of Object.entries(files)) {
    writeFileSync(path.join(dir, name), typeof content === 'string' ? content : JSON.stringify(content));
  }
  for (const name of dirs) mkdirSync(path.join(dir, name), { recursive: true });
  writeFileSync(path.join(dir, 'agentwire.toml'), config);
  const env = { ...process.env };
  for (const name of ['AGENTWIRE_ADDR', 'AGENTWIRE_DATABASE_URL', 'OPENAI_API_KEY', 'ANTHROPIC_API_KEY']) delete env[name];
  const args = ['serve', '--config', path.join(dir, 'agentwire.toml'), '--addr', '127.0.0.1:0', '--data-dir', path.join(dir, 'data')];
  if (databaseUrl) args.push('--database-url', databaseUrl);
  const child = spawn(binary, args, { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });

  const end = async (signal) => {
    if (child.exitCode == null && child.signalCode == null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    running.delete(child);
  };
  const stop = async ({ keep = false } = {}) => {
    await end('SIGTERM');
    if (!keep) rmSync(dir, { recursive: true, force: true });
  };
  const kill = () => end('SIGKILL');

  try {
    const url = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no "agentwire listening on" line within 20 s; stderr: ${stderr}`)), 20_000);
      const lines = createInterface({ input: child.stdout });
      lines.on('line', (line) => {
        const found = /^agentwire listening on (http:\/\/\S+)$/.exec(line.trim());
        if (found) {
          clearTimeout(timer);
          resolve(found[1]);
        }
      });
      child.on('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      child.on('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`agentwire serve exited (${code ?? signal}) before listening; stderr: ${stderr}`));
      });
    });
    return { url, dir, stop, kill, stderr: () => stderr };
  } catch (error) {
    await stop({ keep: reused != null });
    throw error;
  }
}

/**
 * Polls `check` (sync or async) every 20 ms until it returns a truthy value, and resolves to
 * that value; fails naming `what` after `timeout` ms. The default is generous: the machines the
 * tests run on are slow and shared, and a poll costs nothing once the condition holds.
 */
export async function waitFor(what, check, { timeout = 30_000 } = {}) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`waited ${timeout} ms for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * The session `id` of the server at `url` as `GET /v1/sessions/{id}` answers it (`messages`, the
 * history; `last_run`), or undefined while it does not exist.
 */
export async function getSession(url, id) {
  const response = await fetch(`${url}/v1/sessions/${encodeURIComponent(id)}`);
  if (response.status === 404) return undefined;
  if (!response.ok) throw new Error(`GET /v1/sessions/${id}: ${response.status} ${await response.text()}`);
  return response.json();
}

/** The history of session `id` as one `role: text` line per message (its text parts joined). */
export async function getHistory(url, id) {
  const session = await getSession(url, id);
  if (!session) throw new Error(`no session ${id}`);
  return session.messages.map((message) => {
    const text = message.parts.filter((part) => part.type === 'text').map((part) => part.text);
    return `${message.role}: ${text.join('')}`;
  });
}

/** The inbox of session `id`: the entries of `GET /v1/sessions/{id}/messages`, in order. */
export async function getInbox(url, id) {
  const response = await fetch(`${url}/v1/sessions/${encodeURIComponent(id)}/messages`);
  if (!response.ok) throw new Error(`GET /v1/sessions/${id}/messages: ${response.status} ${await response.text()}`);
  return (await response.json()).messages;
}
