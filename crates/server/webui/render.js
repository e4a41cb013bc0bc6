// @ts-check
// The conversation on the page: a view per message and per part, each updated in place as
// events arrive (a delta goes to its part only: text to its Markdown, which renders again no
// more than its open block; arguments to a text node).
// Tool results, errors, approval requests and answers join the card of the call they belong to
// (found by id, across messages), so a call reads as one thing that goes from "preparing" to
// "running" to its result or error. A sub-agent's run is a transcript of its own inside the card
// of the call that started it (`subrun.js`), its parts shown by the same views. Everything is
// built with DOM calls, never from HTML text: what a model or tool says cannot become markup.

import { TERMINAL } from './accumulator.js';
import { copyButton, h } from './dom.js';
import { Markdown } from './markdown.js';
import { timelineView } from './timeline.js';

/** @typedef {import('./accumulator.js').Part} Part */
/** @typedef {import('./accumulator.js').Message} Message */
/** @typedef {import('./accumulator.js').RunStatus} RunStatus */
/** @typedef {import('./accumulator.js').ErrorInfo} ErrorInfo */
/**
 * What the page asks of the app: answering an approval, taking the conversation up again from a
 * message of the user's with new parts (edit, regenerate), and finding a call the page lacks.
 * Each says whether it could.
 * @typedef {{
 *   approve: (approvalId: string, approved: boolean) => Promise<boolean>,
 *   resend: (messageId: string, parts: Part[]) => Promise<boolean>,
 *   findCall: (toolCallId: string) => Promise<Part | undefined>,
 * }} Actions
 */

/** JSON for people: a string as itself, a short value on one line, a longer one indented. @param {any} value */
function pretty(value) {
  if (typeof value === 'string') return value;
  // Formatting newlines are the only raw newlines in JSON text (a string's are escaped).
  const line = (JSON.stringify(value, null, 1) ?? String(value)).replace(/\n */g, ' ');
  return line.length <= 72 ? line : JSON.stringify(value, null, 2);
}

/** What a view of one part does as the part streams. */
class PartView {
  /** @param {HTMLElement | null} el */
  constructor(el) {
    this.el = el;
  }
  /** @param {string} _delta */
  append(_delta) {}
  /** @param {Part} _part */
  complete(_part) {}
}

/**
 * Text, refusals and reasoning. Text and reasoning are Markdown, rendered as they stream (see
 * markdown.js); a refusal is plain text, its deltas appended to one text node.
 */
class TextView extends PartView {
  /** @param {Part} part @param {boolean} streaming */
  constructor(part, streaming) {
    const body = h('div', { class: 'body' });
    let el;
    if (part.type === 'reasoning') {
      // Open while it streams, so it can be watched; folded once complete.
      el = h('details', { class: 'part reasoning', open: streaming }, [h('summary', { text: streaming ? 'Thinking…' : 'Reasoning' }), body]);
    } else {
      el = h('div', { class: `part ${part.type}`, 'data-part': part.type }, [body]);
      if (part.type === 'refusal') el.prepend(h('div', { class: 'label', text: 'Refused' }));
    }
    super(el);
    this.body = body;
    /** What streamed, to check the complete text against. */
    this.streamed = '';
    /** @type {Markdown | null} */
    this.markdown = part.type === 'refusal' ? null : new Markdown(body);
    this.node = document.createTextNode('');
    if (!this.markdown) body.append(this.node);
    if (streaming) {
      el.classList.add('streaming');
      this.append(part.text ?? '');
    } else this.complete(part);
  }
  /** @param {string} delta */
  append(delta) {
    this.streamed += delta;
    if (this.markdown) this.markdown.append(delta);
    else this.node.appendData(delta);
  }
  /** @param {Part} part */
  complete(part) {
    const el = /** @type {HTMLElement} */ (this.el);
    el.classList.remove('streaming');
    if (!this.markdown) this.node.data = part.text;
    else if (part.text === this.streamed) this.markdown.end();
    else {
      // Not what streamed (or nothing did): the whole text, once.
      this.body.replaceChildren();
      this.markdown = Markdown.render(this.body, part.text);
    }
    if (part.type === 'reasoning') {
      el.removeAttribute('open');
      const summary = el.querySelector('summary');
      if (summary) summary.textContent = 'Reasoning';
    }
  }
}

// Every state has words, streaming ones included: a bare spinner says nothing.
const TOOL_STATES = {
  preparing: 'streaming arguments',
  running: 'running',
  approval: 'awaiting approval',
  waiting: 'waiting for the client',
  question: 'waiting for your answer',
  nested: 'waiting for an answer below',
  done: 'done',
  error: 'error',
  denied: 'denied',
  unfinished: 'not run',
};

/**
 * A tool call's card: name, status, arguments as they stream, then its result or error. A call
 * the page has not seen (only its approval request came) gets a card with what the request
 * says, filled in (`fill`) once the server tells the call. A sub-agent's call holds the run it
 * started (`attachRun`) between its arguments and its result.
 */
export class ToolView extends PartView {
  /** @param {Part} part @param {boolean} streaming @param {Transcript} transcript the run the call is of */
  constructor(part, streaming, transcript) {
    const status = h('span', { class: 'status', role: 'status' });
    const args = h('pre', { class: 'args' });
    const name = h('span', { class: 'name', text: part.tool_name ?? part.tool_call_id });
    const el = h('section', { class: 'part tool', 'data-tool-call-id': part.tool_call_id, 'aria-label': `tool call ${part.tool_name ?? part.tool_call_id}` }, [
      h('header', {}, [h('span', { class: 'icon', 'aria-hidden': 'true', text: '⚙' }), name, status]),
      h('details', { class: 'args-box', open: streaming }, [h('summary', { text: 'Arguments' }), args]),
    ]);
    super(el);
    this.transcript = transcript;
    this.nameEl = name;
    this.statusEl = status;
    this.argsEl = args;
    this.argsNode = document.createTextNode('');
    args.append(this.argsNode);
    this.streaming = streaming;
    /** @type {'result' | 'error' | null} */
    this.outcome = null;
    /** @type {Part | null} */
    this.approval = null;
    /** @type {boolean | null} */
    this.approved = null;
    /** @type {HTMLElement | null} */
    this.approvalEl = null;
    /** @type {HTMLElement | null} the reason and the buttons, until answered */
    this.questionEl = null;
    /** @type {HTMLElement | null} an `ask_user` call's question */
    this.questionText = null;
    /** @type {HTMLElement | null} the arguments on the approval */
    this.argsListEl = null;
    /** @type {any} the arguments, once complete */
    this.args = undefined;
    /** @type {Transcript | null} the sub-agent's run this call started */
    this.subrun = null;
    if (streaming) {
      this.argsNode.data = part.args_text ?? '';
      this.refresh();
    } else this.complete(part);
  }
  /** @param {string} delta */
  append(delta) {
    this.argsNode.appendData(delta);
  }
  /** @param {Part} part */
  complete(part) {
    this.streaming = false;
    this.args = part.args;
    this.argsNode.data = pretty(part.args);
    this.argsEl.parentElement?.removeAttribute('open');
    // `ask_user`: the agent's question to the user, shown as a question card; the next message
    // sent answers it.
    if (part.tool_name === 'ask_user' && typeof part.args?.question === 'string' && !this.questionText) {
      const el = /** @type {HTMLElement} */ (this.el);
      el.classList.add('question-card');
      this.questionText = h('p', { class: 'question', text: part.args.question });
      this.argsEl.parentElement?.before(this.questionText);
    }
    this.refresh();
  }
  /** The call, as the server tells it, for a card made from its approval request. @param {Part} call */
  fill(call) {
    const el = /** @type {HTMLElement} */ (this.el);
    this.nameEl.textContent = call.tool_name;
    el.setAttribute('aria-label', `tool call ${call.tool_name}`);
    this.args = call.args;
    this.argsNode.data = pretty(call.args);
    const list = argsList(call.args);
    this.argsListEl?.replaceWith(list);
    this.argsListEl = list;
  }
  /** A result or error for this call. @param {Part} part */
  attachOutcome(part) {
    const el = /** @type {HTMLElement} */ (this.el);
    if (part.type === 'tool_result') {
      this.outcome = part.is_error ? 'error' : 'result';
      el.append(h('div', { class: `outcome ${part.is_error ? 'failed' : 'ok'}` }, [h('div', { class: 'label', text: part.is_error ? 'Error' : 'Result' }), h('pre', { text: pretty(part.result) })]));
    } else {
      this.outcome = 'error';
      el.append(h('div', { class: 'outcome failed', 'data-error-type': part.error_type }, [h('div', { class: 'label', text: `${part.error_type === 'VALIDATION' ? 'Validation error' : 'Error'}` }), h('p', { text: part.message })]));
    }
    this.refresh();
  }
  /** The run asks a person to approve this call. @param {Part} part */
  attachApproval(part) {
    this.approval = part;
    const approve = h('button', { type: 'button', class: 'approve', text: 'Approve', 'aria-label': `approve ${part.tool_call_id}`, onclick: () => this.answer(true) });
    const deny = h('button', { type: 'button', class: 'deny', text: 'Deny', 'aria-label': `deny ${part.tool_call_id}`, onclick: () => this.answer(false) });
    this.buttons = [approve, deny];
    this.questionEl = h('div', { class: 'question' }, [h('p', { text: part.reason ?? 'This call needs your approval.' }), h('div', { class: 'buttons' }, [approve, deny])]);
    // What is approved is shown on the card, unfolded, above the buttons (and stays after the
    // answer, as the record of what was allowed); the folded box would only repeat it.
    this.argsListEl = argsList(this.args);
    this.approvalEl = h('div', { class: 'approval', role: 'group', 'aria-label': 'approval' }, [this.argsListEl, this.questionEl]);
    const box = this.argsEl.parentElement;
    if (box) box.hidden = true;
    /** @type {HTMLElement} */ (this.el).append(this.approvalEl);
    this.refresh();
  }
  /** @param {boolean} approved */
  async answer(approved) {
    if (!this.approval || this.approved != null) return;
    for (const button of this.buttons ?? []) button.setAttribute('disabled', '');
    const ok = await this.transcript.actions.approve(this.approval.approval_id, approved);
    if (!ok) this.refresh();
  }
  /**
   * The sub-agent's run this call started, shown in the card before its result (a run followed
   * again from the start replaces the one shown).
   * @param {Transcript} run @param {HTMLElement} el
   */
  attachRun(run, el) {
    const card = /** @type {HTMLElement} */ (this.el);
    this.subrun = run;
    card.classList.add('agent-call');
    const outcome = card.querySelector(':scope > .outcome');
    if (outcome) outcome.before(el);
    else card.append(el);
    this.refresh();
  }
  /** The person's answer, as the run recorded it. @param {Part} part */
  attachAnswer(part) {
    this.approved = part.approved;
    this.questionEl?.replaceWith(h('p', { class: part.approved ? 'approved' : 'denied', text: part.approved ? '✓ Approved' : '✕ Denied' }));
    this.refresh();
  }
  refresh() {
    /** @type {keyof TOOL_STATES} */
    let state;
    const run = this.transcript.runStatus;
    const live = !!run && !TERMINAL.has(run.status);
    if (this.streaming) state = 'preparing';
    // A denied call's error only says it did not run: "denied" is the news.
    else if (this.approved === false) state = 'denied';
    else if (this.outcome) state = this.outcome === 'result' ? 'done' : 'error';
    // A sub-agent's run that ended: its answer joins the card when the run that called it goes
    // on (after a wait, with the next message), but the call is over.
    else if (this.subrun?.runStatus && TERMINAL.has(this.subrun.runStatus.status)) state = this.subrun.runStatus.status === 'completed' ? 'done' : 'error';
    else if (this.approval && this.approved == null) state = live ? 'approval' : 'unfinished';
    else if (live && run?.status === 'awaiting' && run.awaiting === 'function_output') state = 'waiting';
    else if (live && run?.status === 'awaiting' && run.awaiting === 'input' && this.questionText) state = 'question';
    else if (live && this.subrun?.runStatus?.status === 'awaiting') state = 'nested';
    else state = live ? 'running' : 'unfinished';
    const el = /** @type {HTMLElement} */ (this.el);
    el.dataset.state = state;
    this.statusEl.textContent = TOOL_STATES[state];
    // Approvals are answered through the top run (the runtime hands the answer down), once it
    // waits: a sub-agent's request shows at once, its buttons work when its whole tree waits.
    const canAnswer = state === 'approval' && this.transcript.top.runStatus?.awaiting === 'approval';
    for (const button of this.buttons ?? []) button.toggleAttribute('disabled', !canAnswer);
  }
}

/** Values longer than this are folded on an approval card, with a button to show them whole. */
const FOLD = 300;

/**
 * A call's arguments for a person to approve: one row per argument, strings as written (a file's
 * content reads as the file), other values as indented JSON, long ones folded.
 * @param {any} args
 */
function argsList(args) {
  if (args === undefined) return h('p', { class: 'args-list empty', text: 'The arguments are not known.' });
  const entries = args && typeof args === 'object' && !Array.isArray(args) ? Object.entries(args) : [['arguments', args]];
  if (entries.length === 0) return h('p', { class: 'args-list empty', text: 'No arguments.' });
  return h('dl', { class: 'args-list', 'aria-label': 'arguments' }, entries.flatMap(([name, value]) => [h('dt', { text: name }), h('dd', {}, [valueView(value)])]));
}

/** @param {any} value */
function valueView(value) {
  const text = typeof value === 'string' ? value : JSON.stringify(value, null, 2) ?? String(value);
  const pre = h('pre', { class: typeof value === 'string' ? 'value string' : 'value json', text: text.length > FOLD ? `${text.slice(0, FOLD)}…` : text });
  if (text.length <= FOLD) return pre;
  const more = h('button', { type: 'button', class: 'more-value', text: `Show all ${text.length} characters`, 'aria-expanded': 'false' });
  more.addEventListener('click', () => {
    const open = more.getAttribute('aria-expanded') !== 'true';
    pre.textContent = open ? text : `${text.slice(0, FOLD)}…`;
    more.textContent = open ? 'Show less' : `Show all ${text.length} characters`;
    more.setAttribute('aria-expanded', String(open));
  });
  return h('div', { class: 'folded' }, [pre, more]);
}

/** A part that is whole when it arrives. @param {Part} part */
function wholePart(part) {
  switch (part.type) {
    case 'step_start':
      return h('div', { class: 'part step', role: 'separator', 'aria-label': 'step' }, [h('span', { text: part.step_name ?? 'step' })]);
    case 'file':
      return fileView(part);
    case 'data':
      return h('details', { class: 'part data' }, [h('summary', {}, ['Data ', h('code', { text: part.name })]), h('pre', { text: pretty(part.data) })]);
    case 'artifact':
      return h('section', { class: 'part artifact', 'aria-label': `artifact ${part.title}` }, [
        h('header', {}, [h('span', { class: 'icon', 'aria-hidden': 'true', text: '▤' }), h('span', { class: 'name', text: part.title }), part.version != null ? h('span', { class: 'badge', text: `v${part.version}` }) : null]),
        part.preview ? h('pre', { class: 'preview', text: part.preview }) : null,
      ]);
    case 'plan_update':
      return planView(part);
    case 'source':
      return h('div', { class: 'part source' }, [h('a', { href: part.url, target: '_blank', rel: 'noopener noreferrer', text: part.title ?? part.url })]);
    case 'tool_result':
    case 'tool_error':
      // An outcome whose call is not on the page (a client tool's output, say).
      return h('section', { class: `part tool orphan`, 'data-state': part.type === 'tool_error' ? 'error' : 'done' }, [
        h('header', {}, [h('span', { class: 'icon', 'aria-hidden': 'true', text: '⚙' }), h('span', { class: 'name', text: part.tool_name ?? part.tool_call_id }), h('span', { class: 'status', text: part.type === 'tool_error' ? 'error' : 'result' })]),
        h('pre', { text: part.type === 'tool_error' ? `${part.error_type}: ${part.message}` : pretty(part.result) }),
      ]);
    case 'approval_response':
      return h('div', { class: 'part note', text: part.approved ? '✓ Approved' : '✕ Denied' });
    default:
      return h('details', { class: 'part data' }, [h('summary', { text: part.type }), h('pre', { text: pretty(part) })]);
  }
}

/** @param {Part} part */
function fileView(part) {
  const src = part.url ?? (part.data != null ? `data:${part.media_type};base64,${part.data}` : '');
  const name = part.filename ?? part.media_type;
  if (String(part.media_type).startsWith('image/') && src) {
    return h('figure', { class: 'part file image' }, [h('img', { src, alt: part.filename ?? 'image', loading: 'lazy' }), part.filename ? h('figcaption', { text: part.filename }) : null]);
  }
  return h('div', { class: 'part file' }, [h('a', { href: src, download: part.filename ?? true, target: '_blank', rel: 'noopener noreferrer' }, [h('span', { 'aria-hidden': 'true', text: '📄 ' }), name])]);
}

/** @param {Part} part */
function planView(part) {
  const details = part.details;
  /** @type {HTMLElement | null} */
  let body = null;
  // `steps`, or `plan` as the built-in `update_plan` writes it ({step, status}).
  const steps = details && Array.isArray(details.steps) ? details.steps : details && Array.isArray(details.plan) ? details.plan : null;
  if (steps) {
    body = h('div', {}, [
      h('ol', {}, steps.map((/** @type {any} */ step) => {
        const done = typeof step === 'object' && step && (step.done || step.status === 'completed' || step.status === 'done');
        const active = typeof step === 'object' && step && step.status === 'in_progress';
        return h('li', { class: done ? 'done' : active ? 'active' : '' }, [typeof step === 'string' ? step : step?.title ?? step?.text ?? step?.step ?? pretty(step)]);
      })),
      typeof details.explanation === 'string' ? h('p', { class: 'explanation', text: details.explanation }) : null,
    ]);
  } else if (details != null) {
    body = h('pre', { text: pretty(details) });
  }
  return h('section', { class: 'part plan', 'data-action': part.action, 'aria-label': `plan ${part.plan_id}` }, [
    h('header', {}, [h('span', { class: 'icon', 'aria-hidden': 'true', text: '☰' }), h('span', { class: 'name', text: `Plan ${part.plan_id}` }), h('span', { class: `badge ${part.action}`, text: part.action })]),
    body,
  ]);
}

/** The parts a user message answers with, rather than asks: they are not a question to edit. */
const ANSWERS = new Set(['approval_response', 'tool_result', 'tool_error']);

/** A user message's question: its parts but its answers; empty when it only answers. @param {Message} message */
function question(message) {
  const parts = message.parts.filter((part) => !ANSWERS.has(part.type));
  return parts.some((part) => part.type === 'text') ? parts : [];
}

/**
 * One message on the page, with its actions: Copy on an answer, Regenerate on the last one (the
 * stylesheet shows it there only), Edit on a question of the user's. Regenerate and Edit are
 * hidden while a run goes on (`body.live`). A sub-agent's messages have no actions, and no name
 * line: their run's fold names the agent.
 */
export class MessageView {
  /** @param {Message} message @param {Transcript} transcript the run the message is of */
  constructor(message, transcript) {
    this.message = message;
    this.transcript = transcript;
    this.parts = h('div', { class: 'parts' });
    const role = message.role;
    const who = role === 'user' ? 'You' : role === 'assistant' ? message.metadata?.agent_name ?? 'Assistant' : role;
    const conversation = transcript instanceof Conversation ? transcript : null;
    this.el = h('article', { class: `message ${role}`, 'data-message-id': message.id ?? '', 'aria-label': `${who} says` }, [
      role === 'user' || !conversation ? null : h('div', { class: 'who', text: who }),
      this.parts,
    ]);
    /** @type {PartView[]} */
    this.views = [];
    /** @type {string[]} the complete text parts, by index: what Copy copies */
    this.texts = [];
    /** @type {HTMLElement | null} */
    this.copy = null;
    /** @type {HTMLElement | null} the run's timeline, once known */
    this.timeline = null;
    /** @type {(HTMLElement | null)[]} */
    let actions = [];
    if (!conversation) {
      // A sub-agent's message: no actions.
    } else if (role === 'assistant') {
      this.copy = copyButton('Copy the answer', () => this.texts.filter((text) => text != null).join('\n\n'));
      if (this.copy) this.copy.hidden = true;
      const regenerate = h('button', { type: 'button', class: 'regenerate when-idle', text: 'Regenerate', 'aria-label': 'Regenerate the answer', onclick: () => void conversation.regenerate(this) });
      actions = [this.copy, regenerate];
    } else if (role === 'user' && message.id && question(message).length > 0) {
      actions = [h('button', { type: 'button', class: 'edit when-idle', text: 'Edit', 'aria-label': 'Edit your message', onclick: () => this.edit() })];
    }
    this.actions = h('div', { class: 'actions' }, actions);
    if (actions.length > 0) this.el.append(this.actions);
  }
  /** Shows the run's timeline under the parts, when the message has one (`timeline.js`). @param {Message} message */
  showTimeline(message) {
    const timeline = timelineView(message);
    this.timeline?.remove();
    this.timeline = timeline;
    if (timeline) this.parts.after(timeline);
  }
  /** A complete text part: Copy has something to copy. @param {number} index @param {Part} part */
  noteText(index, part) {
    if (part.type !== 'text') return;
    this.texts[index] = part.text;
    if (this.copy) this.copy.hidden = false;
  }
  /** Turns the message into a box to edit it in; sending takes the conversation up again from here. */
  edit() {
    const parts = question(this.message);
    const box = /** @type {HTMLTextAreaElement} */ (h('textarea', { class: 'edit-box', 'aria-label': 'Edit your message', rows: 3 }));
    box.value = parts.filter((part) => part.type === 'text').map((part) => part.text).join('\n\n');
    const done = () => {
      form.remove();
      this.parts.hidden = false;
      this.actions.hidden = false;
    };
    const send = async () => {
      const text = box.value.trim();
      if (!text || form.inert) return;
      // The first text part becomes the new text; the others go, files and the like stay.
      let first = true;
      const edited = parts.flatMap((part) => {
        if (part.type !== 'text') return [part];
        if (!first) return [];
        first = false;
        return [{ type: 'text', text }];
      });
      form.inert = true;
      const sent = await this.transcript.actions.resend(this.message.id ?? '', edited);
      form.inert = false;
      if (sent) done();
    };
    const form = h('form', { class: 'edit' }, [
      box,
      h('div', { class: 'buttons' }, [
        h('button', { type: 'button', class: 'cancel', text: 'Cancel', onclick: done }),
        h('button', { type: 'submit', class: 'send', text: 'Send' }),
      ]),
    ]);
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      void send();
    });
    box.addEventListener('keydown', (event) => {
      // As in the composer: Enter sends, Shift+Enter is a new line; Escape gives up.
      if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        void send();
      } else if (event.key === 'Escape') done();
    });
    this.parts.hidden = true;
    this.actions.hidden = true;
    this.el.append(form);
    box.focus();
  }
  /** A part at its start (streaming) or whole. @param {number} index @param {Part} part @param {boolean} streaming */
  addPart(index, part, streaming) {
    const transcript = this.transcript;
    /** @type {PartView} */
    let view;
    if (part.type === 'text' || part.type === 'reasoning' || part.type === 'refusal') {
      view = new TextView(part, streaming);
    } else if (part.type === 'tool_call') {
      const tool = new ToolView(part, streaming, transcript);
      transcript.tools.set(part.tool_call_id, tool);
      view = tool;
    } else if (part.type === 'approval_request' && !transcript.tools.has(part.tool_call_id)) {
      view = transcript.approvalCard(part);
    } else {
      view = new PartView(transcript.attach(part) ? null : wholePart(part));
    }
    this.views[index] = view;
    if (view.el) this.parts.append(view.el);
    if (!streaming) this.noteText(index, part);
  }
  /** @param {number} index @param {string} delta */
  append(index, delta) {
    this.views[index]?.append(delta);
  }
  /** @param {number} index @param {Part} part */
  complete(index, part) {
    const view = this.views[index];
    if (view) {
      view.complete(part);
      this.noteText(index, part);
    } else this.addPart(index, part, false);
  }
}

/**
 * The messages of one run on the page, and what ties their parts together: the calls and
 * approvals by id (ids are a run's own: a sub-agent's calls may reuse its parent's ids), and the
 * run's status, which its calls' cards follow. The conversation is one; a sub-agent's run
 * (`subrun.js`) is another, inside its call's card.
 */
export class Transcript {
  /** @param {HTMLElement} root where its messages go @param {Actions} actions */
  constructor(root, actions) {
    this.root = root;
    this.actions = actions;
    /** @type {Map<string, ToolView>} calls by id */
    this.tools = new Map();
    /** @type {Map<string, ToolView>} calls by the id of their approval request */
    this.approvals = new Map();
    /** @type {Map<string, MessageView>} */
    this.views = new Map();
    /** @type {RunStatus | undefined} the status of the run that is shown live, if any */
    this.runStatus = undefined;
  }
  /** The conversation this transcript is in: the run approvals are answered through. @returns {Transcript} */
  get top() {
    return this;
  }
  /** A whole message (history, or the input just sent). @param {Message} message */
  add(message) {
    if (message.id && this.views.has(message.id)) return this.views.get(message.id);
    const view = this.start(message);
    message.parts.forEach((part, index) => view.addPart(index, part, false));
    this.ended(view, message);
    return view;
  }
  /** A message that streams. @param {Message} message */
  start(message) {
    const view = new MessageView(message, this);
    if (message.id) this.views.set(message.id, view);
    this.root.append(view.el);
    return view;
  }
  /** A message is complete. @param {MessageView} _view @param {Message} _message */
  ended(_view, _message) {}
  /** @param {string} id */
  view(id) {
    return this.views.get(id);
  }
  /**
   * Shows what an event changed in one of this run's messages.
   * @param {import('./accumulator.js').Change} change
   */
  show(change) {
    switch (change.kind) {
      case 'message_start':
        if (change.message.parts.length > 0) this.add(change.message);
        else this.start(change.message);
        break;
      case 'part_start':
        this.view(change.message.id ?? '')?.addPart(change.index, change.message.parts[change.index], true);
        break;
      case 'part_delta':
        this.view(change.message.id ?? '')?.append(change.index, change.delta);
        break;
      case 'part_complete':
        this.view(change.message.id ?? '')?.complete(change.index, change.message.parts[change.index]);
        break;
      case 'message_complete': {
        const view = this.view(change.message.id ?? '');
        if (view) this.ended(view, change.message);
        break;
      }
      default:
        break;
    }
  }
  /**
   * The card of call `toolCallId` in `messages` (this run's, as its accumulator holds them), or
   * else the last card of that id here.
   * @param {Message[]} messages @param {string | undefined} toolCallId
   */
  callView(messages, toolCallId) {
    if (!toolCallId) return undefined;
    for (let at = messages.length - 1; at >= 0; at--) {
      const message = messages[at];
      const index = message.parts.findIndex((part) => part.type === 'tool_call' && part.tool_call_id === toolCallId);
      if (index < 0) continue;
      const view = this.view(message.id ?? '')?.views[index];
      if (view instanceof ToolView) return view;
    }
    return this.tools.get(toolCallId);
  }
  /**
   * A card for an approval whose call is not on the page (a session reopened without it): what
   * the request says at once, the call's name and arguments once the server tells them.
   * @param {Part} part
   */
  approvalCard(part) {
    const tool = new ToolView({ type: 'tool_call', tool_call_id: part.tool_call_id }, false, this);
    this.tools.set(part.tool_call_id, tool);
    this.approvals.set(part.approval_id, tool);
    tool.attachApproval(part);
    // The server is asked for calls of the top run only: a sub-agent's run streams whole.
    if (this.top === this) {
      void this.actions.findCall(part.tool_call_id).then((call) => {
        if (call) tool.fill(call);
      });
    }
    return tool;
  }
  /**
   * Puts an outcome or approval part on its call's card; false when the call is not here.
   * @param {Part} part
   */
  attach(part) {
    if (part.type === 'tool_result' || part.type === 'tool_error') {
      const tool = this.tools.get(part.tool_call_id);
      tool?.attachOutcome(part);
      return !!tool;
    }
    if (part.type === 'approval_request') {
      const tool = this.tools.get(part.tool_call_id);
      if (tool) this.approvals.set(part.approval_id, tool);
      tool?.attachApproval(part);
      return !!tool;
    }
    if (part.type === 'approval_response') {
      const tool = this.approvals.get(part.approval_id);
      tool?.attachAnswer(part);
      return !!tool;
    }
    return false;
  }
  /** Every call's card follows the run's status (and, for its buttons, the top run's). */
  refreshTools() {
    for (const tool of this.tools.values()) tool.refresh();
  }
  /** An error of the run, shown where the run is. @param {ErrorInfo} error */
  showError(error) {
    this.root.append(h('div', { class: 'run-error', role: 'alert' }, [h('strong', { text: error.code }), ' ', error.message]));
  }
}

/** The messages on the page: the session's conversation, and the runs of sub-agents within it. */
export class Conversation extends Transcript {
  /** @param {HTMLElement} root @param {Actions} actions */
  constructor(root, actions) {
    super(root, actions);
    /** @type {Map<string, Transcript & {el: HTMLElement}>} sub-agents' runs on the page, by run id (`subrun.js`) */
    this.subruns = new Map();
  }
  clear() {
    this.root.replaceChildren();
    this.tools.clear();
    this.approvals.clear();
    this.views.clear();
    this.subruns.clear();
    this.runStatus = undefined;
  }
  /** The run's timeline comes with its answer's completion. @param {MessageView} view @param {Message} message */
  ended(view, message) {
    view.showTimeline(message);
  }
  /** Forgets a message that was taken off the page. @param {string} id */
  forget(id) {
    this.views.delete(id);
  }
  /** Takes message `id` and everything after it off the page. @param {string} id */
  truncate(id) {
    const view = this.views.get(id);
    if (!view) return;
    for (let node = /** @type {ChildNode | null} */ (view.el); node; ) {
      const next = node.nextSibling;
      node.remove();
      node = next;
    }
    for (const map of [this.views, this.tools, this.approvals, this.subruns]) {
      for (const [key, item] of map) if (!item.el?.isConnected) map.delete(key);
    }
    this.runStatus = undefined;
  }
  /** Asks again for `answer`: its question (the user's last before it) is sent again. @param {MessageView} answer */
  async regenerate(answer) {
    for (let el = answer.el.previousElementSibling; el; el = el.previousElementSibling) {
      const view = this.views.get(el.getAttribute('data-message-id') ?? '');
      if (view?.message.role !== 'user' || !view.message.id) continue;
      const parts = question(view.message);
      if (parts.length > 0) return this.actions.resend(view.message.id, parts);
    }
    return false;
  }
  /** The live run's status changed: calls and approvals follow it. @param {RunStatus | undefined} status */
  setRunStatus(status) {
    this.runStatus = status;
    if (status && TERMINAL.has(status.status)) {
      // Parts the run left unfinished (it was stopped, or failed) stop looking alive.
      for (const el of this.root.querySelectorAll('.streaming')) el.classList.replace('streaming', 'cut');
    }
    this.refreshTools();
    // A sub-agent's approval can be answered once the top run waits.
    for (const run of this.subruns.values()) run.refreshTools();
  }
}
