// @ts-check
// The agentwire web UI: a chat over the native API. It picks an agent (`GET /v1/agents`),
// starts runs (`POST /v1/runs`, streamed), answers approvals and sends the next message
// (`POST /v1/runs/{id}/input`), stops runs (`.../cancel`), lists sessions (`GET /v1/sessions`)
// and restores one (`GET /v1/sessions/{id}`, then the events of its run if it still goes on).
// An edited question, or an answer asked for again, takes the conversation up from there in a
// copy of the session (`POST /v1/sessions/{id}/fork`), the original kept as it was.
// The open session is in the address (`#session=<id>`), so a reload comes back to it.
// While a run works, what the user sends goes into the session's inbox (`inbox.js`): queued
// for a run of its own, steered into the run, or interrupting it, as the control beside Send says.
// Sub-agents' runs show inside the calls that started them (`subrun.js`); a session reopened
// replays the logs of its runs whose agents call sub-agents, to show them again. The session's
// shared state shows in a panel above the conversation, changed as its runs change it
// (`state.js`), read whole when a session opens (`GET /v1/sessions/{id}/state`).

import { Accumulator, TERMINAL, settled } from './accumulator.js';
import { ApiError, request, storeKey, storedKey, stream } from './api.js';
import { h } from './dom.js';
import { Inbox } from './inbox.js';
import { Conversation } from './render.js';
import { StateView } from './state.js';
import { showNested } from './subrun.js';

/** @typedef {import('./accumulator.js').Message} Message */
/** @typedef {import('./accumulator.js').RunStatus} RunStatus */
/** @typedef {import('./accumulator.js').Part} Part */
/**
 * The run shown live: its accumulator, the stream that feeds it, and the messages whose events
 * are skipped (they were on the page already, from the session's history).
 * @typedef {{id: string, acc: Accumulator, abort: AbortController, skip: Set<string>}} LiveRun
 */

/** @param {string} id */
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

const ui = {
  messages: $('messages'),
  scroller: /** @type {HTMLElement} */ ($('messages').parentElement),
  jump: /** @type {HTMLButtonElement} */ ($('jump')),
  empty: $('empty'),
  form: /** @type {HTMLFormElement} */ ($('composer')),
  input: /** @type {HTMLTextAreaElement} */ ($('input')),
  send: /** @type {HTMLButtonElement} */ ($('send')),
  mode: /** @type {HTMLSelectElement} */ ($('send-mode')),
  waiting: $('waiting'),
  stop: /** @type {HTMLButtonElement} */ ($('stop')),
  attach: /** @type {HTMLButtonElement} */ ($('attach')),
  attachInput: /** @type {HTMLInputElement} */ ($('attach-input')),
  attachments: $('attachments'),
  agent: /** @type {HTMLSelectElement} */ ($('agent')),
  status: $('run-status'),
  error: $('error'),
  errorText: $('error-text'),
  sessions: $('sessions'),
  more: /** @type {HTMLButtonElement} */ ($('more-sessions')),
  sidebar: $('sidebar'),
  toggle: /** @type {HTMLButtonElement} */ ($('toggle-sessions')),
  newChat: /** @type {HTMLButtonElement} */ ($('new-chat')),
  keyButton: /** @type {HTMLButtonElement} */ ($('key-button')),
  keyDialog: /** @type {HTMLDialogElement} */ ($('key-dialog')),
  keyForm: /** @type {HTMLFormElement} */ ($('key-form')),
  keyInput: /** @type {HTMLInputElement} */ ($('key-input')),
  keyReason: $('key-reason'),
  statePanel: /** @type {HTMLDetailsElement} */ ($('state-panel')),
  state: $('state'),
};

/** How often a broken stream is picked up again before the UI gives up. */
const RECONNECTS = 5;

const state = {
  /** @type {Part[]} files attached to the next message, as `file` parts */
  attachments: [],
  /** @type {string | undefined} */
  sessionId: undefined,
  /** @type {LiveRun | undefined} */
  run: undefined,
  /** @type {string | null} where the next page of sessions starts */
  nextSessions: null,
  /** Whether the view keeps the newest content in sight: true until the reader scrolls up. */
  following: true,
  /** @type {Map<string, string[]>} each agent's sub-agents, by name (`GET /v1/agents`) */
  subagents: new Map(),
  /** Stops the replays of the open session's runs (`showSubruns`) when another opens. */
  replays: new AbortController(),
};

const conversation = new Conversation(ui.messages, { approve: answerApproval, resend, findCall });
const stateView = new StateView(ui.state);

/** Shows the session's shared state whole; the panel only while there is one. @param {any} document */
function showState(document) {
  stateView.reset(document);
  ui.statePanel.hidden = document === null || document === undefined;
}
const inbox = new Inbox(ui.waiting, {
  conversation,
  transcript: ui.messages,
  follow: (runId) => resume(runId),
  idle: () => !state.run || settled(state.run.acc.status),
  onError: showError,
});

// ---- errors and the key ----

/** Shows a failed request's error; a 401 asks for a key. @param {unknown} error */
function showError(error) {
  const apiError = error instanceof ApiError ? error : new ApiError(0, 'client_error', String(error instanceof Error ? error.message : error));
  ui.errorText.replaceChildren(h('strong', { text: apiError.code }), ' ', apiError.message);
  ui.error.hidden = false;
  if (apiError.status === 401) askKey('This server needs an API key. It is kept in this browser only.');
}

function clearError() {
  ui.error.hidden = true;
}

/** @param {string} [reason] */
function askKey(reason) {
  ui.keyReason.textContent = reason ?? 'The key this browser sends (kept here only); leave it empty to send none.';
  ui.keyInput.value = storedKey();
  if (!ui.keyDialog.open) ui.keyDialog.showModal();
  ui.keyInput.focus();
}

ui.keyForm.addEventListener('submit', () => {
  // The dialog's form closes it (method="dialog"); an empty key forgets the stored one.
  storeKey(ui.keyInput.value.trim());
  clearError();
  void start();
});

// ---- the status line and the buttons ----

const STATUS_TEXT = {
  created: 'Starting…',
  queued: 'Queued…',
  in_progress: 'Working…',
  completed: 'Completed',
  failed: 'Failed',
  canceled: 'Stopped',
  rejected: 'Rejected',
  incomplete: 'Incomplete',
};

/** @param {RunStatus | undefined} status */
function statusText(status) {
  if (!status) return '';
  if (status.status === 'awaiting') {
    return status.awaiting === 'approval' ? 'Waiting for your approval' : status.awaiting === 'input' ? 'Waiting for your message' : 'Waiting for a tool’s output';
  }
  return STATUS_TEXT[/** @type {keyof STATUS_TEXT} */ (status.status)] ?? status.status;
}

/** Puts the status line and the buttons in step with the live run. */
function refreshControls() {
  const status = state.run?.acc.status;
  const live = !!state.run && !(status && TERMINAL.has(status.status));
  ui.status.textContent = statusText(status);
  ui.status.dataset.status = status?.status ?? '';
  document.body.classList.toggle('running', live && status?.status !== 'awaiting');
  // Editing or regenerating starts a run: not while one goes on.
  document.body.classList.toggle('live', live);
  ui.stop.hidden = !live;
  // The next message goes as the run's input when it waits for one, else into the session's
  // inbox while the run works, else it starts a run; a run that waits for something else (an
  // approval) must be answered or stopped first.
  const canSend = !live || busy() || (status?.status === 'awaiting' && status.awaiting === 'input');
  ui.send.disabled = !canSend;
  ui.input.setAttribute('aria-disabled', String(!canSend));
  ui.mode.hidden = !busy();
  ui.empty.hidden = ui.messages.childElementCount + ui.waiting.childElementCount > 0;
}

/** Whether a message sent now goes into the session's inbox: a run works, or messages wait. */
function busy() {
  const status = state.run?.acc.status;
  const works = !!state.run && !(status && (TERMINAL.has(status.status) || status.status === 'awaiting'));
  return !!state.sessionId && (works || inbox.pending > 0);
}

// ---- running ----

/**
 * Applies one event to the live run and its views.
 * @param {LiveRun} run @param {any} event
 */
function apply(run, event) {
  const change = run.acc.push(event);
  switch (change.kind) {
    case 'nested':
      showNested(conversation, run.acc, change);
      break;
    case 'run':
      if (change.sessionId && change.sessionId !== state.sessionId) {
        setSession(change.sessionId);
        // A new chat is listed at once, not only when its run ends.
        void loadSessions();
      }
      break;
    case 'status':
      conversation.setRunStatus(change.status);
      if (change.error) conversation.showError(change.error);
      if (TERMINAL.has(change.status.status)) void loadSessions();
      break;
    case 'message_start': {
      const id = change.message.id ?? '';
      // Already on the page (from the session's history): its events change nothing.
      if (conversation.view(id)) run.skip.add(id);
      else conversation.show(change);
      break;
    }
    case 'part_start':
    case 'part_delta':
    case 'part_complete':
    case 'message_complete':
      if (!run.skip.has(change.message.id ?? '')) conversation.show(change);
      break;
    case 'error':
      conversation.showError(change.error);
      break;
    case 'input':
      inbox.note(change.input);
      break;
    case 'state':
      showState(change.state);
      break;
    case 'state_patch':
      stateView.patch(change.ops, change.state);
      ui.statePanel.hidden = change.state === null || change.state === undefined;
      break;
    default:
      break;
  }
  refreshControls();
}

/**
 * Reads a run's stream into the page until the run is settled, picking a broken stream up
 * again after the last event seen.
 * @param {LiveRun} run @param {() => Promise<void>} open the first stream
 */
async function follow(run, open) {
  let next = open;
  for (let attempt = 0; ; attempt++) {
    try {
      await next();
      if (run.abort.signal.aborted || settled(run.acc.status)) break;
    } catch (error) {
      if (run.abort.signal.aborted) break;
      // A refused request (4xx) will be refused again; a broken connection may come back.
      if (!(error instanceof ApiError) || (error.status >= 400 && error.status < 500) || attempt >= RECONNECTS) {
        showError(error);
        break;
      }
    }
    if (attempt >= RECONNECTS) break;
    await new Promise((resolve) => setTimeout(resolve, 250 * 2 ** attempt));
    next = () => stream('GET', `/v1/runs/${encodeURIComponent(run.id)}/events?after=${run.acc.lastSeq}`, undefined, (event) => apply(run, event), run.abort.signal);
  }
  if (state.run === run) refreshControls();
}

/** Follows a run already going (or waiting) from the start of its log. @param {string} runId */
function resume(runId) {
  const run = newRun(runId);
  return follow(run, () => stream('GET', `/v1/runs/${encodeURIComponent(runId)}/events?after=${run.acc.lastSeq}`, undefined, (event) => apply(run, event), run.abort.signal));
}

/** @param {string} id @returns {LiveRun} */
function newRun(id) {
  state.run?.abort.abort();
  const run = { id, acc: new Accumulator(), abort: new AbortController(), skip: new Set() };
  state.run = run;
  return run;
}

/** A fresh message id, so the message sent and the one stored are known to be the same. */
function newMessageId() {
  return `msg_${crypto.randomUUID().replaceAll('-', '')}`;
}

/**
 * Reads the files chosen with the paperclip into `file` parts (inline base64 data) for the next
 * message; the server checks their media types against the agent's schema.
 * @param {FileList | null} files
 */
async function attach(files) {
  for (const file of Array.from(files ?? [])) {
    const url = await new Promise((resolve, reject) => {
      const reader = new FileReader();
      reader.onload = () => resolve(String(reader.result));
      reader.onerror = () => reject(reader.error);
      reader.readAsDataURL(file);
    });
    const data = /** @type {string} */ (url).slice(/** @type {string} */ (url).indexOf(',') + 1);
    state.attachments.push({ type: 'file', media_type: file.type || 'application/octet-stream', data, filename: file.name });
  }
  showAttachments();
  ui.input.focus();
}

/** The attachments strip above the composer: one chip per file, each with a remove button. */
function showAttachments() {
  ui.attachments.replaceChildren(
    ...state.attachments.map((part, index) =>
      h('span', { class: 'chip' }, [
        `📎 ${part.filename ?? part.media_type}`,
        h('button', {
          type: 'button',
          'aria-label': `Remove ${part.filename ?? 'the file'}`,
          text: '✕',
          onclick: () => {
            state.attachments.splice(index, 1);
            showAttachments();
          },
        }),
      ]),
    ),
  );
  ui.attachments.hidden = state.attachments.length === 0;
}

/** Sends what the composer holds: the run's input when it waits for one, else a new run. */
async function send() {
  const text = ui.input.value.trim();
  if ((!text && state.attachments.length === 0) || ui.send.disabled) return;
  clearError();
  const attached = state.attachments;
  /** @type {Part[]} */
  const parts = text ? [{ type: 'text', text }, ...attached] : [...attached];
  /** @type {Message} */
  const message = { id: newMessageId(), role: 'user', parts };
  const toInbox = busy();
  const waiting = !toInbox && state.run && state.run.acc.status?.status === 'awaiting' ? state.run : undefined;
  ui.input.value = '';
  state.attachments = [];
  showAttachments();
  autosize();
  if (toInbox && state.sessionId) {
    setFollowing(true);
    const sent = await inbox.send(state.sessionId, message, ui.mode.value, ui.agent.value || undefined);
    if (!sent) {
      ui.input.value = text;
      state.attachments = attached;
      showAttachments();
      autosize();
    }
    refreshControls();
    return;
  }
  if (!waiting) {
    if (!(await startRun(message))) {
      // Refused (the error shows why): the message was not sent; it goes back to the composer.
      ui.input.value = text;
      state.attachments = attached;
      showAttachments();
      autosize();
    }
    return;
  }
  conversation.add(message);
  refreshControls();
  setFollowing(true);
  try {
    await request('POST', `/v1/runs/${encodeURIComponent(waiting.id)}/input`, message);
    await follow(waiting, () => stream('GET', `/v1/runs/${encodeURIComponent(waiting.id)}/events?after=${waiting.acc.lastSeq}`, undefined, (event) => apply(waiting, event), waiting.abort.signal));
  } catch (error) {
    showError(error);
  } finally {
    refreshControls();
  }
}

/**
 * Shows `message` and starts a run on it in the open session (a new one when none is open),
 * following it to where it settles. False when the server refused it: the message is taken off
 * the page again.
 * @param {Message} message
 */
async function startRun(message) {
  const sent = conversation.add(message);
  // Whoever sends wants to see the answer.
  setFollowing(true);
  const run = newRun('');
  /** @type {any} */
  const body = { agent: ui.agent.value || undefined, input: [message] };
  if (state.sessionId) body.session_id = state.sessionId;
  refreshControls();
  try {
    await follow(run, () =>
      stream('POST', '/v1/runs', body, (event) => {
        if (event.event === 'run_created') run.id = event.run_id;
        apply(run, event);
      }, run.abort.signal),
    );
  } catch (error) {
    showError(error);
  }
  const refused = !run.acc.runId && state.run === run;
  if (refused) {
    state.run = undefined;
    sent?.el.remove();
    conversation.forget(message.id ?? '');
  }
  refreshControls();
  return !refused;
}

/**
 * Takes the conversation up again from the user's message `messageId` with `parts` instead (an
 * edited question, or the same one asked again): a copy of the session holding what came before
 * that message becomes the open session, the page drops the message and what followed it, and
 * a run starts there. The session it came from stays as it was, in the list.
 * @param {string} messageId @param {Part[]} parts
 */
async function resend(messageId, parts) {
  const from = state.sessionId;
  const live = state.run && !TERMINAL.has(state.run.acc.status?.status ?? '');
  if (!from || live) return false;
  clearError();
  let fork;
  try {
    fork = await request('POST', `/v1/sessions/${encodeURIComponent(from)}/fork`, { before: messageId });
  } catch (error) {
    showError(error);
    return false;
  }
  state.run = undefined;
  conversation.truncate(messageId);
  setSession(fork.id);
  void loadSessions();
  await startRun({ id: newMessageId(), role: 'user', parts });
  return true;
}

/**
 * The call `toolCallId` of the live run, as the server has it (its output), for an approval
 * whose call is not on the page.
 * @param {string} toolCallId
 * @returns {Promise<Part | undefined>}
 */
async function findCall(toolCallId) {
  const run = state.run;
  if (!run?.id) return undefined;
  try {
    const { output } = await request('GET', `/v1/runs/${encodeURIComponent(run.id)}`);
    const parts = /** @type {Message[]} */ (output).flatMap((message) => message.parts);
    return parts.find((part) => part.type === 'tool_call' && part.tool_call_id === toolCallId);
  } catch {
    return undefined;
  }
}

/**
 * Answers an approval of the live run, then follows the run on.
 * @param {string} approvalId @param {boolean} approved
 */
async function answerApproval(approvalId, approved) {
  const run = state.run;
  if (!run) return false;
  clearError();
  try {
    await request('POST', `/v1/runs/${encodeURIComponent(run.id)}/input`, {
      id: newMessageId(),
      role: 'user',
      parts: [{ type: 'approval_response', approval_id: approvalId, approved }],
    });
  } catch (error) {
    showError(error);
    return false;
  }
  // The buttons give way to the answer: the keyboard goes back to the composer.
  ui.input.focus();
  void follow(run, () => stream('GET', `/v1/runs/${encodeURIComponent(run.id)}/events?after=${run.acc.lastSeq}`, undefined, (event) => apply(run, event), run.abort.signal));
  return true;
}

/** Stops the live run; its stream ends on the `canceled` status. */
async function stop() {
  const run = state.run;
  if (!run?.id) return;
  ui.stop.disabled = true;
  try {
    await request('POST', `/v1/runs/${encodeURIComponent(run.id)}/cancel`);
    // A run that was waiting has no stream open: read its end.
    if (run.acc.status?.status === 'awaiting') {
      await follow(run, () => stream('GET', `/v1/runs/${encodeURIComponent(run.id)}/events?after=${run.acc.lastSeq}`, undefined, (event) => apply(run, event), run.abort.signal));
    }
  } catch (error) {
    showError(error);
  } finally {
    ui.stop.disabled = false;
    ui.input.focus();
  }
}

// ---- sessions ----

/** @param {string | undefined} id */
function setSession(id) {
  state.sessionId = id;
  const hash = id ? `#session=${encodeURIComponent(id)}` : '';
  if (location.hash !== hash) history.replaceState(null, '', hash || location.pathname);
  for (const item of ui.sessions.querySelectorAll('[data-session-id]')) {
    item.toggleAttribute('aria-current', item.getAttribute('data-session-id') === id);
  }
}

/**
 * Shows again the sub-agents' runs of a reopened session's ended runs: the session keeps the top
 * runs' conversation only, their sub-agents' runs are in the runs' logs. The logs of the runs
 * (the newest 100) whose agents call sub-agents are replayed, oldest first, when the history
 * holds such a call; only their nested events are shown (the rest is the history on the page).
 * @param {string} sessionId @param {Message[]} messages @param {string | undefined} live the run `resume` follows
 */
async function showSubruns(sessionId, messages, live) {
  const calls = (/** @type {Message} */ message) => state.subagents.get(message.metadata?.agent_name ?? '') ?? [];
  if (!messages.some((message) => message.parts.some((part) => part.type === 'tool_call' && calls(message).includes(part.tool_name)))) return;
  const signal = state.replays.signal;
  try {
    const { runs } = await request('GET', `/v1/runs?session_id=${encodeURIComponent(sessionId)}&limit=100`);
    for (const run of /** @type {any[]} */ (runs).reverse()) {
      if (signal.aborted) return;
      if (run.id === live || !TERMINAL.has(run.status) || !state.subagents.get(run.agent)?.length) continue;
      const acc = new Accumulator();
      await stream('GET', `/v1/runs/${encodeURIComponent(run.id)}/events`, undefined, (event) => {
        const change = acc.push(event);
        if (change.kind === 'nested') showNested(conversation, acc, change);
      }, signal);
    }
  } catch (error) {
    if (!signal.aborted) showError(error);
  }
}

/** Stops replaying the logs of the session that was open. */
function stopReplays() {
  state.replays.abort();
  state.replays = new AbortController();
}

/** Opens a stored session: its history, then its run's events if it still goes on. @param {string} id */
async function openSession(id) {
  state.run?.abort.abort();
  state.run = undefined;
  stopReplays();
  conversation.clear();
  showState(null);
  inbox.reset();
  clearError();
  setSession(id);
  closeSidebar();
  refreshControls();
  try {
    const session = await request('GET', `/v1/sessions/${encodeURIComponent(id)}`);
    showState(await request('GET', `/v1/sessions/${encodeURIComponent(id)}/state`).catch(() => null));
    for (const message of session.messages) conversation.add(message);
    const last = session.last_run;
    if (last?.agent && [...ui.agent.options].some((option) => option.value === last.agent)) ui.agent.value = last.agent;
    conversation.setRunStatus(last ? { status: last.status, awaiting: last.awaiting } : undefined);
    refreshControls();
    // A session opens at its end, where it goes on.
    setFollowing(true);
    const live = last && !TERMINAL.has(last.status) ? last.id : undefined;
    void showSubruns(id, session.messages, live);
    if (live) await resume(live);
  } catch (error) {
    showError(error);
    if (error instanceof ApiError && error.status === 404) setSession(undefined);
  }
  refreshControls();
}

function newChat() {
  state.run?.abort.abort();
  state.run = undefined;
  stopReplays();
  conversation.clear();
  showState(null);
  inbox.reset();
  clearError();
  setSession(undefined);
  closeSidebar();
  refreshControls();
  setFollowing(true);
  ui.input.focus();
}

/** @param {number} millis */
function ago(millis) {
  const seconds = Math.max(0, (Date.now() - millis) / 1000);
  if (seconds < 60) return 'just now';
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  return new Date(millis).toLocaleDateString();
}

/** Loads the first page of sessions (or, with `more`, the next one). @param {boolean} [more] */
async function loadSessions(more = false) {
  try {
    const after = more && state.nextSessions ? `&before=${encodeURIComponent(state.nextSessions)}` : '';
    const page = await request('GET', `/v1/sessions?limit=30${after}`);
    if (!more) ui.sessions.replaceChildren();
    for (const session of page.sessions) {
      const live = session.last_run && !TERMINAL.has(session.last_run.status);
      const button = h('button', { type: 'button', class: 'session', 'data-session-id': session.id, 'aria-current': session.id === state.sessionId, onclick: () => openSession(session.id) }, [
        h('span', { class: 'title', text: session.title ?? 'Untitled' }),
        h('span', { class: 'meta' }, [live ? h('span', { class: 'live', text: '● ' }) : null, [session.agent, ago(session.updated_at)].filter(Boolean).join(' · ')]),
      ]);
      ui.sessions.append(h('li', {}, [button]));
    }
    state.nextSessions = page.next;
    ui.more.hidden = !page.next;
  } catch (error) {
    showError(error);
  }
}

// ---- layout and keys ----

// The view follows the newest content while the reader is at the end, whatever grows it (a
// delta, a tall card, an image loading, a folded part): a resize observer, not each event, puts
// it back at the end. Scrolling up stops following; scrolling back to the end, or the "Jump to
// latest" button, starts again.

const scroller = ui.scroller;
let lastTop = 0;

/** How far the end is below what is shown, in pixels. */
const belowEnd = () => scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight;

/** Starts or stops following; starting goes to the end. @param {boolean} on @param {ScrollBehavior} [behavior] */
function setFollowing(on, behavior = 'instant') {
  state.following = on;
  if (on) scroller.scrollTo({ top: scroller.scrollHeight, behavior });
  ui.jump.hidden = on || belowEnd() < 2;
}

const follower = new ResizeObserver(() => {
  if (state.following) scroller.scrollTop = scroller.scrollHeight;
  else ui.jump.hidden = belowEnd() < 2;
});
follower.observe(ui.messages);
follower.observe(ui.waiting);
// The composer growing shrinks the view: that too keeps the end in sight.
follower.observe(scroller);
scroller.addEventListener('scroll', () => {
  // Content growing never moves scrollTop up; only the reader (or content shrinking, which
  // leaves the view at the end) does.
  if (belowEnd() < 8) state.following = true;
  else if (scroller.scrollTop < lastTop) state.following = false;
  lastTop = scroller.scrollTop;
  ui.jump.hidden = state.following;
}, { passive: true });
// A wheel turned up means "stop" at once, before the next resize could pull the view back.
scroller.addEventListener('wheel', (event) => {
  if (event.deltaY < 0) state.following = false;
}, { passive: true });
ui.jump.addEventListener('click', () => setFollowing(true, 'smooth'));

function autosize() {
  ui.input.style.height = 'auto';
  ui.input.style.height = `${Math.min(ui.input.scrollHeight, 200)}px`;
}

function closeSidebar() {
  document.body.classList.remove('sidebar-open');
  ui.toggle.setAttribute('aria-expanded', 'false');
}

ui.form.addEventListener('submit', (event) => {
  event.preventDefault();
  void send();
});
ui.input.addEventListener('keydown', (event) => {
  // Enter sends, Shift+Enter is a new line (and so is Enter while composing with an IME).
  if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    void send();
  }
});
ui.input.addEventListener('input', autosize);
ui.stop.addEventListener('click', () => void stop());
ui.attach.addEventListener('click', () => ui.attachInput.click());
ui.attachInput.addEventListener('change', () => {
  void attach(ui.attachInput.files).catch(showError).finally(() => {
    // The same file may be chosen again.
    ui.attachInput.value = '';
  });
});
ui.newChat.addEventListener('click', newChat);
ui.more.addEventListener('click', () => void loadSessions(true));
ui.keyButton.addEventListener('click', () => askKey());
$('error-close').addEventListener('click', clearError);
$('key-cancel').addEventListener('click', () => ui.keyDialog.close());
ui.toggle.addEventListener('click', () => {
  const open = document.body.classList.toggle('sidebar-open');
  ui.toggle.setAttribute('aria-expanded', String(open));
  if (open) ui.newChat.focus();
});
document.addEventListener('keydown', (event) => {
  if (event.key === 'Escape' && document.body.classList.contains('sidebar-open')) {
    closeSidebar();
    ui.toggle.focus();
  }
});
window.addEventListener('hashchange', () => {
  const id = sessionFromHash();
  if (id && id !== state.sessionId) void openSession(id);
});

function sessionFromHash() {
  const found = /^#session=(.+)$/.exec(location.hash);
  return found ? decodeURIComponent(found[1]) : undefined;
}

/** Loads the agents and sessions, then the session in the address, if any. */
async function start() {
  try {
    const { agents } = await request('GET', '/v1/agents');
    state.subagents = new Map(agents.map((/** @type {any} */ agent) => [agent.name, agent.subagents ?? []]));
    const chosen = ui.agent.value;
    ui.agent.replaceChildren(...agents.map((/** @type {any} */ agent) => h('option', { value: agent.name, title: agent.description ?? '', text: agent.name })));
    if (chosen) ui.agent.value = chosen;
    ui.agent.disabled = agents.length === 0;
  } catch (error) {
    showError(error);
    return;
  }
  await loadSessions();
  const id = sessionFromHash();
  if (id) await openSession(id);
  refreshControls();
  ui.input.focus();
}

refreshControls();
void start();
