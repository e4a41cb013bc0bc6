// @ts-check
// The client state of one run, built from its native events, as the core crate's
// `Accumulator` builds it: messages whose parts grow as deltas arrive. Each event is applied
// once and tells the view what changed, so the page updates only that part: streaming stays
// O(total bytes) (a delta is appended once, never re-parsed or re-rendered).
//
// Like the Rust one it is strict: an event that does not fit the stream so far (a delta without
// its start, a part out of order, a sequence number that goes back) throws an `Error` naming
// it, and leaves the state as it was.
//
// A sub-agent's run streams inside its parent's: its events carry a `namespace`, the path of run
// ids from the top run's child down. Each such run gets an accumulator of its own, a child of its
// parent's (`children`), created at its `run_created`, as in the core crate; its changes come
// back wrapped in a `nested` change that names the run.
//
// The session's shared state (`state_snapshot`, `state_delta`) is one for the whole tree,
// whichever run changes it: the top accumulator keeps it (`state`), as the core crate's does.

import { applyPatch } from './state.js';

/** @typedef {import('./state.js').Operation} Operation */
/**
 * @typedef {{type: string, [key: string]: any}} Part
 * @typedef {{id?: string, role: string, parts: Part[], metadata?: any, created_at?: number}} Message
 * @typedef {{seq: number, event: string, [key: string]: any}} RunEvent
 * @typedef {{code: string, message: string}} ErrorInfo
 * @typedef {{status: string, awaiting?: string}} RunStatus
 *
 * What an applied event changed, for the view (`nested`: a change of the sub-agent's run at
 * `path`, run ids from the top run's child down, whose accumulator is `run`):
 * @typedef {{kind: 'run', runId: string, sessionId?: string, agent?: string, parentRunId?: string, parentToolCallId?: string}
 *   | {kind: 'status', status: RunStatus, error?: ErrorInfo}
 *   | {kind: 'message_start', message: Message}
 *   | {kind: 'part_start', message: Message, index: number}
 *   | {kind: 'part_delta', message: Message, index: number, delta: string}
 *   | {kind: 'part_complete', message: Message, index: number}
 *   | {kind: 'message_complete', message: Message}
 *   | {kind: 'error', error: ErrorInfo}
 *   | {kind: 'input', input: {client_message_id: string, outcome: string, step?: number, reason?: string}}
 *   | {kind: 'nested', path: string[], run: Accumulator, change: Change}
 *   | {kind: 'state', state: any}
 *   | {kind: 'state_patch', ops: Operation[], state: any}
 *   | {kind: 'none'}} Change
 */

/** The events this accumulator knows; others (a newer server's) are skipped wherever they are. */
const KNOWN = new Set(['run_created', 'run_status', 'message_start', 'part_start', 'part_delta', 'part_complete', 'message_complete', 'input', 'error']);

/** The statuses after which a run changes no more. */
export const TERMINAL = new Set(['completed', 'failed', 'canceled', 'rejected', 'incomplete']);

/** True when a run with this status waits for the client or has ended: its stream is over. */
export function settled(/** @type {RunStatus | undefined} */ status) {
  return !!status && (status.status === 'awaiting' || TERMINAL.has(status.status));
}

export class Accumulator {
  constructor() {
    /** @type {Message[]} every message, in the order they started */
    this.messages = [];
    /** @type {Map<string, {message: Message, streaming: Set<number>, complete: boolean}>} */
    this.byId = new Map();
    /** The last event's `seq`: where a resumed stream starts. */
    this.lastSeq = 0;
    /** @type {string | undefined} */
    this.runId = undefined;
    /** @type {RunStatus | undefined} */
    this.status = undefined;
    /** @type {any} tokens used so far */
    this.usage = undefined;
    /** @type {ErrorInfo[]} */
    this.errors = [];
    /** @type {string | undefined} the agent whose run this is */
    this.agent = undefined;
    /** @type {string | undefined} a sub-agent's run: the parent's call it answers */
    this.parentToolCallId = undefined;
    /** @type {Map<string, Accumulator>} sub-agents' runs, by id, in the order they were created */
    this.children = new Map();
    /** @type {any} the session's shared state as the stream built it (`null` before any) */
    this.state = null;
  }

  /** The nested run at `path` (run ids from this run's child down); this run for `[]`. @param {string[]} path */
  descendant(path) {
    /** @type {Accumulator | undefined} */
    let run = this;
    for (const id of path) run = run?.children.get(id);
    return run;
  }

  /**
   * Applies the next event and says what changed.
   * @param {RunEvent} event
   * @returns {Change}
   */
  push(event) {
    if (event.event === 'heartbeat') return { kind: 'none' };
    this.checkOrder(event);
    const path = event.namespace ?? [];
    /** @type {Change} */
    let change;
    if (event.event === 'state_snapshot' || event.event === 'state_delta') change = this.applyState(event);
    else if (path.length > 0 && KNOWN.has(event.event)) change = this.nested(path, event);
    else change = this.apply(event);
    this.lastSeq = event.seq;
    return change;
  }

  /** A change of the shared state, whichever run of the tree made it. @param {RunEvent} event @returns {Change} */
  applyState(event) {
    if (event.event === 'state_snapshot') {
      this.state = event.state ?? null;
      return { kind: 'state', state: this.state };
    }
    const { document, applied } = applyPatch(this.state, event.patch ?? []);
    this.state = document;
    return { kind: 'state_patch', ops: applied, state: document };
  }

  /** Throws unless `event` may come next: its `seq` grows, and the run has not ended. @param {RunEvent} event */
  checkOrder(event) {
    const { seq } = event;
    if (!(seq > this.lastSeq)) throw new Error(`event ${seq} came after event ${this.lastSeq}: sequence numbers must grow`);
    if (this.status && TERMINAL.has(this.status.status)) {
      throw new Error(`event ${seq} (${event.event}) came after the run ended as ${this.status.status}`);
    }
  }

  /**
   * Applies a nested run's event to its accumulator, creating it at its `run_created`.
   * @param {string[]} path @param {RunEvent} event @returns {Change}
   */
  nested(path, event) {
    /** @type {Accumulator | undefined} */
    let parent = this;
    for (let depth = 0; parent && depth < path.length - 1; depth++) parent = parent.children.get(path[depth]);
    if (!parent) throw new Error(`event ${event.seq} belongs to run ${path.join('/')}, whose parent was not created`);
    const id = path[path.length - 1];
    const known = parent.children.get(id);
    if (known) known.checkOrder(event);
    else if (event.event !== 'run_created' || event.run_id !== id) {
      throw new Error(`event ${event.seq} (${event.event}) belongs to run ${id}, which was not created`);
    }
    const run = known ?? new Accumulator();
    const change = run.apply(event);
    run.lastSeq = event.seq;
    if (!known) parent.children.set(id, run);
    return { kind: 'nested', path, run, change };
  }

  /** @param {RunEvent} event @returns {Change} */
  apply(event) {
    switch (event.event) {
      case 'run_created':
        if (this.runId) throw new Error(`run ${event.run_id} was already created`);
        this.runId = event.run_id;
        this.agent = event.agent;
        this.parentToolCallId = event.parent_tool_call_id;
        return { kind: 'run', runId: event.run_id, sessionId: event.session_id, agent: event.agent, parentRunId: event.parent_run_id, parentToolCallId: event.parent_tool_call_id };
      case 'run_status': {
        /** @type {RunStatus} */
        const status = { status: event.status };
        if (event.awaiting) status.awaiting = event.awaiting;
        this.status = status;
        if (event.usage) this.usage = event.usage;
        if (event.error) this.errors.push(event.error);
        return { kind: 'status', status, error: event.error };
      }
      case 'message_start': {
        if (this.byId.has(event.message_id)) throw new Error(`message ${event.message_id} started twice`);
        /** @type {Message} */
        const message = { id: event.message_id, role: event.role, parts: [], metadata: event.metadata ?? {} };
        if (event.created_at != null) message.created_at = event.created_at;
        this.byId.set(event.message_id, { message, streaming: new Set(), complete: false });
        this.messages.push(message);
        return { kind: 'message_start', message };
      }
      case 'part_start': {
        const entry = this.open(event.message_id);
        this.expectNext(entry.message, event.index, event.message_id);
        /** @type {Part} */
        const part =
          event.type === 'tool_call'
            ? { type: 'tool_call', tool_call_id: event.tool_call_id, tool_name: event.tool_name, args: {}, args_text: '' }
            : { type: event.type, text: '' };
        entry.message.parts.push(part);
        entry.streaming.add(event.index);
        return { kind: 'part_start', message: entry.message, index: event.index };
      }
      case 'part_delta': {
        const entry = this.open(event.message_id);
        const part = entry.message.parts[event.index];
        if (!part) throw new Error(`delta for part ${event.index} of message ${event.message_id}, which was not started`);
        if (!entry.streaming.has(event.index)) {
          throw new Error(`delta for part ${event.index} of message ${event.message_id}, which is complete`);
        }
        if (part.type === 'tool_call') part.args_text += event.delta;
        else part.text += event.delta;
        return { kind: 'part_delta', message: entry.message, index: event.index, delta: event.delta };
      }
      case 'part_complete': {
        const entry = this.open(event.message_id);
        const streamed = entry.message.parts[event.index];
        if (streamed) {
          if (!entry.streaming.has(event.index)) {
            throw new Error(`part ${event.index} of message ${event.message_id} completed twice`);
          }
          if (streamed.type !== event.part.type) {
            throw new Error(`completion of part ${event.index} of message ${event.message_id} is a ${event.part.type} part, but a ${streamed.type} part streamed`);
          }
          entry.streaming.delete(event.index);
        } else {
          this.expectNext(entry.message, event.index, event.message_id);
        }
        entry.message.parts[event.index] = event.part;
        return { kind: 'part_complete', message: entry.message, index: event.index };
      }
      case 'message_complete': {
        const id = event.message?.id;
        if (!id) throw new Error('message_complete carries a message without an id');
        let entry = this.byId.get(id);
        if (entry?.complete) throw new Error(`message ${id} is already complete`);
        if (entry && entry.streaming.size > 0) {
          throw new Error(`message ${id} completed while part ${[...entry.streaming][0]} is still streaming`);
        }
        if (!entry) {
          // A message that was whole when produced arrives as message_complete alone.
          entry = { message: event.message, streaming: new Set(), complete: true };
          this.byId.set(id, entry);
          this.messages.push(event.message);
          return { kind: 'message_start', message: event.message };
        }
        entry.complete = true;
        // The final metadata comes with the completion; the parts are those completed before.
        entry.message.metadata = event.message.metadata ?? entry.message.metadata;
        return { kind: 'message_complete', message: entry.message };
      }
      case 'input':
        // What became of a message sent into the session while the run worked; a delivered
        // steer's message follows as a user `message_complete`.
        return { kind: 'input', input: { client_message_id: event.client_message_id, outcome: event.outcome, step: event.step, reason: event.reason } };
      case 'error':
        this.errors.push({ code: event.code, message: event.message });
        return { kind: 'error', error: { code: event.code, message: event.message } };
      default:
        // An event a newer server sends: skipped, as the Rust decoders skip it.
        return { kind: 'none' };
    }
  }

  /** The started, incomplete message. @param {string} id */
  open(id) {
    const entry = this.byId.get(id);
    if (!entry) throw new Error(`message ${id} was not started`);
    if (entry.complete) throw new Error(`message ${id} is already complete`);
    return entry;
  }

  /** @param {Message} message @param {number} index @param {string} id */
  expectNext(message, index, id) {
    if (index !== message.parts.length) {
      throw new Error(`part ${index} of message ${id} is out of order: the next part is ${message.parts.length}`);
    }
  }
}
