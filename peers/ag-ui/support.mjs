// Shared by the tests: where the golden files are, the two event validators (the client's own
// zod schemas and the official AG-UI 1.0 JSON Schema), and the canonical scenarios mapped to the
// messages an AG-UI client should hold.

import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { EventSchema } from '@ag-ui/core/schemas';
import Ajv2020 from 'ajv/dist/2020.js';

const peerDir = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(peerDir, '..', '..');
const goldenDir = path.join(repoRoot, 'crates', 'dialects', 'tests', 'golden');

/** The official schema lives beside the repository (shared/protocols); an env var overrides. */
export const schemaPath =
  process.env.AGENTWIRE_AG_UI_SCHEMA ??
  path.resolve(repoRoot, '..', 'shared', 'protocols', 'ag-ui-1.0.schema.json');

export const SCENARIOS = [
  'text',
  'reasoning',
  'tool_call',
  'tool_error',
  'parallel_tools',
  'approval',
  'client_tool',
  'rich_parts',
  'failed',
  'subagents',
  'subagent_approval',
];

export const transcript = (name) => readFileSync(path.join(goldenDir, 'ag-ui', `${name}.sse`), 'utf8');
export const scenario = (name) =>
  JSON.parse(readFileSync(path.join(goldenDir, 'scenarios', `${name}.json`), 'utf8'));

/** The JSON of each `data:` frame of an SSE body (the way the client splits it: on `\n\n`). */
export function frames(sse) {
  return sse
    .split('\n\n')
    .filter((frame) => frame.length > 0 && !frame.startsWith(':'))
    .map((frame) => {
      assert.ok(frame.startsWith('data: '), `a frame that is not one data line: ${frame}`);
      return JSON.parse(frame.slice('data: '.length));
    });
}

let officialValidator;
/** Validates one event with the official 1.0 JSON Schema (exact objects, no nulls). */
export function validateOfficial(event) {
  if (!officialValidator) {
    assert.ok(existsSync(schemaPath), `missing ${schemaPath}: set AGENTWIRE_AG_UI_SCHEMA`);
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    officialValidator = ajv.compile(JSON.parse(readFileSync(schemaPath, 'utf8')));
  }
  const ok = officialValidator(event);
  return ok ? null : JSON.stringify(officialValidator.errors);
}

/** Validates one event with the client's own zod schema; returns the zod issues or null. */
export function validateClient(event) {
  const result = EventSchema.safeParse(event);
  return result.success ? null : JSON.stringify(result.error.issues);
}

/** True when a `null` appears anywhere in a JSON value. */
export const hasNull = (value) =>
  value === null || (typeof value === 'object' && Object.values(value).some(hasNull));

/** Canonical input (user text) messages as the AG-UI messages a client starts with. */
export const agUiInput = (messages) =>
  messages.map((m) => ({ id: m.id, role: m.role, content: m.parts.map((p) => p.text).join('') }));

/**
 * The AG-UI messages one canonical assistant message should become in the client, written from
 * the mapping in the module docs (not from the encoder): AG-UI message ids are the message's own
 * id, then `<id>.1`, `<id>.2`, …; each text part is an assistant message; tool calls join the
 * message of the text or call just before them, else a new assistant message; each tool result
 * or error is a tool message (errors carry their type in metadata); reasoning is a reasoning
 * message; steps and the other parts leave no message. A sub-agent's message (`run`, its run id)
 * is the same with every id prefixed `<run>:` and every message carrying `subagentRunId`.
 */
export function agUiMessages(message, run) {
  const own = (id) => (run === undefined ? id : `${run}:${id}`);
  const tagged = (m) => (run === undefined ? m : { ...m, subagentRunId: run });
  const out = [];
  let minted = 0;
  const mint = () => own(minted++ === 0 ? message.id : `${message.id}.${minted - 1}`);
  let assistant = null;
  let last = 'other';
  for (const part of message.parts) {
    switch (part.type) {
      case 'text':
        assistant = tagged({ id: mint(), role: 'assistant', content: part.text });
        out.push(assistant);
        last = 'text';
        break;
      case 'reasoning':
        out.push(tagged({ id: mint(), role: 'reasoning', content: part.text }));
        last = 'other';
        break;
      case 'tool_call': {
        if (!(assistant && (last === 'text' || last === 'tool_call'))) {
          assistant = tagged({ id: mint(), role: 'assistant', toolCalls: [] });
          out.push(assistant);
        }
        assistant.toolCalls ??= [];
        assistant.toolCalls.push({
          id: own(part.tool_call_id),
          type: 'function',
          function: { name: part.tool_name, arguments: JSON.stringify(part.args) },
        });
        last = 'tool_call';
        break;
      }
      case 'tool_result':
        out.push(
          tagged({
            id: mint(),
            toolCallId: own(part.tool_call_id),
            role: 'tool',
            content: typeof part.result === 'string' ? part.result : JSON.stringify(part.result),
          }),
        );
        last = 'other';
        break;
      case 'tool_error':
        out.push(
          tagged({
            id: mint(),
            toolCallId: own(part.tool_call_id),
            role: 'tool',
            content: part.message,
            metadata: { agentwire: { errorType: part.error_type } },
          }),
        );
        last = 'other';
        break;
      default:
        last = 'other';
    }
  }
  return out;
}

/**
 * The client's messages grouped by the run they are of: `''` for the conversation's own (no
 * `subagentRunId`), else the sub-agent's run id. The reducer places a tool message right after
 * the message with its call, so runs interleave in the one list; within a run the order is the
 * run's.
 */
export function byRun(messages) {
  const groups = {};
  for (const message of messages) (groups[message.subagentRunId ?? ''] ??= []).push(message);
  return groups;
}

/** A scenario's expected messages, grouped as `byRun` groups the client's. */
export function expectedByRun(canonical, input) {
  const groups = { '': [...input, ...canonical.messages.flatMap((m) => agUiMessages(m))] };
  for (const run of canonical.subagents ?? []) {
    groups[run.run_id] = run.messages.flatMap((m) => agUiMessages(m, run.run_id));
  }
  return groups;
}

/**
 * Tool-call arguments are the raw text the model streamed, which JSON.stringify does not
 * reproduce byte for byte: compare them as JSON.
 */
export function normalizeArgs(messages) {
  if (!Array.isArray(messages)) {
    return Object.fromEntries(Object.entries(messages).map(([run, group]) => [run, normalizeArgs(group)]));
  }
  return messages.map((m) =>
    m.toolCalls
      ? {
          ...m,
          toolCalls: m.toolCalls.map((tc) => ({
            ...tc,
            function: { ...tc.function, arguments: JSON.parse(tc.function.arguments) },
          })),
        }
      : m,
  );
}

/** Checks `actual` against the golden JSON file `name`; UPDATE_SNAPSHOTS=1 rewrites it. */
export function checkGoldenJson(name, actual) {
  const file = path.join(goldenDir, 'ag-ui', name);
  if (process.env.UPDATE_SNAPSHOTS === '1') {
    writeFileSync(file, `${JSON.stringify(actual, null, 2)}\n`);
    return;
  }
  assert.ok(existsSync(file), `missing ${file}: run with UPDATE_SNAPSHOTS=1`);
  assert.deepEqual(actual, JSON.parse(readFileSync(file, 'utf8')), `${name} differs`);
}
