// @ts-check
// Messages sent while the agent works (`POST /v1/sessions/{id}/messages`): each shows at once,
// with a chip saying where it stands (queued, steered at step N, delivered, not delivered), and
// waits below the transcript until it takes its place there. A steer takes it when its run says
// so (an `input` event, just before the message itself); a queued or interrupting message when
// its own run starts, which the UI then streams, one run after another, in the order sent.

import { request } from './api.js';
import { h } from './dom.js';

/** @typedef {import('./accumulator.js').Message} Message */
/** @typedef {import('./render.js').Conversation} Conversation */
/**
 * An inbox entry as the server shows it (or an `input` event's fields).
 * @typedef {{client_message_id: string, outcome: string, run_id?: string, step?: number, reason?: string}} Entry
 */
/**
 * What the inbox needs of the page.
 * @typedef {{
 *   conversation: Conversation,
 *   transcript: HTMLElement,
 *   follow: (runId: string) => Promise<void>,
 *   idle: () => boolean,
 *   onError: (error: unknown) => void,
 * }} Host
 */

/** How often a queued message's entry is read while it waits for its run. */
const POLL_MS = 400;
/** How long a started run waits for the one before it to end on the page before it is shown. */
const HANDOVER_MS = 5000;

const sleep = (/** @type {number} */ ms) => new Promise((resolve) => setTimeout(resolve, ms));

export class Inbox {
  /** @param {HTMLElement} waiting where sent messages wait for their place @param {Host} host */
  constructor(waiting, host) {
    this.waiting = waiting;
    this.host = host;
    /** @type {Map<string, {mode: string, chip: HTMLElement, el: HTMLElement, done: boolean}>} by client message id */
    this.sent = new Map();
    /** Runs of queued messages are followed one after another, in the order sent. */
    this.chain = Promise.resolve();
    /** Bumped when the page leaves the session: what was waiting for it stops. */
    this.generation = 0;
  }

  /** Messages sent here that have not found their place yet. */
  get pending() {
    return [...this.sent.values()].filter((item) => !item.done).length;
  }

  /** The page shows another session (or none): forget this one's messages. */
  reset() {
    this.generation++;
    this.sent.clear();
    this.waiting.replaceChildren();
    this.chain = Promise.resolve();
  }

  /**
   * Sends `message` (its id is its client message id) into the busy session; false when the
   * server refused it (the error is shown), and then nothing is left on the page.
   * @param {string} sessionId @param {Message} message @param {string} mode @param {string | undefined} agent
   */
  async send(sessionId, message, mode, agent) {
    const id = message.id ?? '';
    const view = this.host.conversation.add(message);
    if (!view) return false;
    const chip = h('span', { class: 'inbox-chip', role: 'status', 'data-outcome': 'sending', text: 'sending…' });
    // Under the message itself, above its actions.
    view.parts.after(chip);
    view.el.classList.add('inbox');
    this.waiting.append(view.el);
    const item = { mode, chip, el: view.el, done: false };
    this.sent.set(id, item);
    /** @type {Entry} */
    let entry;
    try {
      entry = await request('POST', `/v1/sessions/${encodeURIComponent(sessionId)}/messages`, { message, mode, client_message_id: id, agent });
    } catch (error) {
      this.sent.delete(id);
      view.el.remove();
      this.host.conversation.forget(id);
      this.host.onError(error);
      return false;
    }
    this.note(entry);
    // A steer is placed by its run's `input` event; anything else (a steer too, when the run
    // ended first) starts a run of its own.
    if (entry.outcome !== 'steering' && !item.done) {
      const generation = this.generation;
      this.chain = this.chain.then(() => this.await(sessionId, id, generation)).catch(this.host.onError);
    }
    return true;
  }

  /**
   * What became of a message: an entry read from the server or an `input` event of a run.
   * @param {Entry} entry
   */
  note(entry) {
    const item = this.sent.get(entry.client_message_id);
    if (!item) return;
    const { outcome } = entry;
    item.chip.dataset.outcome = outcome;
    if (outcome === 'delivered') {
      // Step 0 is a run's own input; a later step is a steer joining a run under way.
      item.chip.textContent = entry.step ? `steered at step ${entry.step}` : 'delivered';
      if (entry.step) this.place(item);
    } else if (outcome === 'not_delivered') {
      item.chip.textContent = `not delivered: ${entry.reason ?? 'unknown reason'}`;
      // It stays where it waited, greyed, so the user can see what did not go.
      item.done = true;
    } else {
      item.chip.textContent = outcome === 'steering' ? 'steering…' : outcome === 'starting' ? 'starting…' : 'queued';
    }
  }

  /** Moves a delivered message to the end of the transcript: where the conversation has it. @param {{el: HTMLElement, done: boolean}} item */
  place(item) {
    if (item.done) return;
    item.done = true;
    item.el.classList.remove('inbox');
    this.host.transcript.append(item.el);
  }

  /**
   * Waits for message `id`'s run, then shows it once the run before it has ended on the page.
   * @param {string} sessionId @param {string} id @param {number} generation
   */
  async await(sessionId, id, generation) {
    const path = `/v1/sessions/${encodeURIComponent(sessionId)}/messages/${encodeURIComponent(id)}`;
    for (;;) {
      if (generation !== this.generation) return;
      const item = this.sent.get(id);
      if (!item || (item.done && item.chip.dataset.outcome === 'not_delivered')) return;
      /** @type {Entry} */
      const entry = await request('GET', path);
      if (generation !== this.generation) return;
      this.note(entry);
      if (entry.outcome === 'not_delivered') return;
      if (entry.outcome === 'delivered' && entry.run_id) {
        // The run before it ends on the server as this one starts; its last events (an
        // interrupted run's `canceled`) are let in before the page turns to this one.
        for (let waited = 0; !this.host.idle() && waited < HANDOVER_MS; waited += 100) await sleep(100);
        if (generation !== this.generation) return;
        this.place(item);
        await this.host.follow(entry.run_id);
        return;
      }
      await sleep(POLL_MS);
    }
  }
}
