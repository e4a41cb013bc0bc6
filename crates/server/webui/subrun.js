// @ts-check
// Sub-agents' runs on the page. A run whose agent calls another agent streams the child's run
// inside its own (each event tagged with its `namespace`, see accumulator.js); the page shows
// that run inside the card of the call that started it: a fold titled with the agent's name and
// what the run is doing (working, waiting, done, failed), holding its messages, shown by the same
// views as the conversation's, its own sub-agents' runs nested in its calls the same way.
// Parallel calls' runs are stacked in their cards, each updated as its events come.
//
// A fold closes once its run is done (unless the reader opened or closed it), and opens, with the
// folds around it, when its run waits for an answer: an approval inside shows its buttons, which
// answer through the top run. Following a run again from its start (a reload) builds the same
// view: a run that is on the page already is replaced by the one built again.

import { TERMINAL } from './accumulator.js';
import { h } from './dom.js';
import { Transcript } from './render.js';

/** @typedef {import('./accumulator.js').Accumulator} Accumulator */
/** @typedef {import('./accumulator.js').Change} Change */
/** @typedef {import('./accumulator.js').RunStatus} RunStatus */
/** @typedef {import('./render.js').Conversation} Conversation */
/** @typedef {import('./render.js').ToolView} ToolView */

/** What a sub-agent's run is doing, in a word or three. @param {RunStatus | undefined} status */
function doing(status) {
  switch (status?.status) {
    case undefined:
    case 'created':
    case 'queued':
    case 'in_progress':
      return 'working';
    case 'awaiting':
      return status.awaiting === 'approval' ? 'waiting for approval' : status.awaiting === 'input' ? 'waiting for your answer' : 'waiting for the client';
    case 'completed':
      return 'done';
    case 'canceled':
      return 'stopped';
    default:
      return 'failed';
  }
}

/** A sub-agent's run: a fold in its call's card, holding the run's messages. */
export class SubRun extends Transcript {
  /** @param {Conversation} conversation @param {string} runId @param {string} agent */
  constructor(conversation, runId, agent) {
    const messages = h('div', { class: 'subrun-messages' });
    super(messages, conversation.actions);
    this.conversation = conversation;
    this.statusEl = h('span', { class: 'status', role: 'status', text: doing(undefined) });
    const summary = h('summary', {}, [h('span', { class: 'agent', text: agent }), this.statusEl]);
    this.el = /** @type {HTMLDetailsElement} */ (h('details', { class: 'subrun', open: true, 'data-run-id': runId, 'data-agent': agent, 'data-status': 'created', 'aria-label': `agent ${agent}` }, [summary, messages]));
    /** Whether the reader opened or closed the fold: it is left as they want it. */
    this.touched = false;
    summary.addEventListener('click', () => (this.touched = true));
    /** @type {ToolView | undefined} the card of the call that started the run */
    this.card = undefined;
  }
  get top() {
    return this.conversation;
  }
  /** @param {RunStatus} status */
  setRunStatus(status) {
    this.runStatus = status;
    this.el.dataset.status = status.status;
    this.statusEl.textContent = doing(status);
    if (TERMINAL.has(status.status)) {
      for (const el of this.el.querySelectorAll('.streaming')) el.classList.replace('streaming', 'cut');
      if (status.status === 'completed' && !this.touched) this.el.open = false;
    } else if (status.status === 'awaiting') {
      // Someone must answer: the fold and those around it open.
      for (let fold = /** @type {Element | null} */ (this.el); fold; fold = fold.parentElement?.closest('details.subrun') ?? null) {
        /** @type {HTMLDetailsElement} */ (fold).open = true;
      }
    }
    this.refreshTools();
    this.card?.refresh();
  }
}

/**
 * Shows a change of a sub-agent's run (a `nested` change of the top run's accumulator `top`) on
 * the page of `conversation`.
 * @param {Conversation} conversation @param {Accumulator} top @param {{path: string[], run: Accumulator, change: Change}} nested
 */
export function showNested(conversation, top, { path, run, change }) {
  const id = path[path.length - 1];
  if (change.kind === 'run') {
    const parentPath = path.slice(0, -1);
    const parent = parentPath.length === 0 ? conversation : conversation.subruns.get(parentPath[parentPath.length - 1]);
    const subrun = new SubRun(conversation, id, run.agent ?? 'agent');
    conversation.subruns.get(id)?.el.remove();
    conversation.subruns.set(id, subrun);
    const card = parent?.callView(top.descendant(parentPath)?.messages ?? [], change.parentToolCallId);
    if (card) {
      subrun.card = card;
      card.attachRun(subrun, subrun.el);
    } else {
      // The call is not on the page: the run goes where its parent's messages go.
      (parent ?? conversation).root.append(subrun.el);
    }
    return;
  }
  const subrun = /** @type {SubRun | undefined} */ (conversation.subruns.get(id));
  if (!subrun) return;
  switch (change.kind) {
    case 'status':
      subrun.setRunStatus(change.status);
      if (change.error) subrun.showError(change.error);
      break;
    case 'error':
      subrun.showError(change.error);
      break;
    default:
      subrun.show(change);
  }
}
