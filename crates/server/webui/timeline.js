// @ts-check
// A run's timeline under its answer: each step, model call and tool call on one time axis, with
// its duration and tokens, so a reader sees where the time went without a tracing backend. The
// data is the message's `metadata.timeline`, which the runtime writes with the same facts as its
// OpenTelemetry spans (`chat {model}`, `execute_tool {tool}`; see crates/runtime/src/timeline.rs),
// so it is there for a live run's message once complete and for a session's history alike.

import { h } from './dom.js';

/**
 * One entry as the runtime writes it (times in milliseconds since the epoch).
 * @typedef {{kind: 'chat' | 'execute_tool', name: string, step: number, start: number, end: number,
 *   first_token?: number, input_tokens?: number, output_tokens?: number, finish_reason?: string,
 *   tool?: string, call_id?: string, error?: boolean}} Entry
 */

/**
 * A bar of the chart.
 * @typedef {{kind: 'step' | 'chat' | 'execute_tool', label: string, start: number, end: number,
 *   tokens?: string, error?: boolean, firstToken?: number}} Bar
 */

/** @param {number} ms */
export function formatDuration(ms) {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
}

/**
 * The bars of a timeline: per step, the step itself (its model call to its last tool's end),
 * then its model call and tool calls, in time order.
 * @param {Entry[]} entries
 * @returns {Bar[]}
 */
export function bars(entries) {
  /** @type {Map<number, Entry[]>} */
  const steps = new Map();
  for (const entry of entries) {
    if (typeof entry?.start !== 'number' || typeof entry?.end !== 'number') continue;
    const step = Number.isInteger(entry.step) ? entry.step : 0;
    steps.set(step, [...(steps.get(step) ?? []), entry]);
  }
  /** @type {Bar[]} */
  const out = [];
  for (const [step, group] of [...steps].sort(([a], [b]) => a - b)) {
    group.sort((a, b) => a.start - b.start);
    out.push({
      kind: 'step',
      label: `step ${step + 1}`,
      start: Math.min(...group.map((entry) => entry.start)),
      end: Math.max(...group.map((entry) => entry.end)),
    });
    for (const entry of group) {
      if (entry.kind === 'chat') {
        const input = entry.input_tokens;
        const output = entry.output_tokens;
        out.push({
          kind: 'chat',
          label: entry.name,
          start: entry.start,
          end: entry.end,
          firstToken: entry.first_token,
          tokens: input == null && output == null ? undefined : `${input ?? 0} in · ${output ?? 0} out`,
        });
      } else {
        out.push({ kind: 'execute_tool', label: entry.name, start: entry.start, end: entry.end, error: entry.error === true });
      }
    }
  }
  return out;
}

/**
 * The timeline of a message, or null when it has none.
 * @param {{metadata?: any}} message
 * @returns {HTMLElement | null}
 */
export function timelineView(message) {
  const entries = message.metadata?.timeline;
  if (!Array.isArray(entries) || entries.length === 0) return null;
  const rows = bars(entries);
  if (rows.length === 0) return null;
  const t0 = Math.min(...rows.map((bar) => bar.start));
  const t1 = Math.max(...rows.map((bar) => bar.end));
  // A run quicker than a millisecond still gets an axis to draw on.
  const span = Math.max(t1 - t0, 1);
  const percent = (/** @type {number} */ ms) => `${((ms / span) * 100).toFixed(2)}%`;
  const chart = h('ol', { class: 'timeline-bars' }, rows.map((bar) => {
    const duration = bar.end - bar.start;
    // Placed through the CSSOM: the page's policy refuses `style` attributes.
    const fill = h('span', { class: 'timeline-fill' });
    fill.style.left = percent(bar.start - t0);
    fill.style.width = percent(Math.max(duration, 0));
    const track = h('span', { class: 'timeline-track', 'aria-hidden': 'true' }, [fill]);
    if (bar.firstToken != null && bar.firstToken >= bar.start && bar.firstToken <= bar.end) {
      const mark = h('span', { class: 'timeline-first-token', title: 'first token' });
      mark.style.left = percent(bar.firstToken - t0);
      track.append(mark);
    }
    return h('li', {
      class: `timeline-bar ${bar.kind}${bar.error ? ' failed' : ''}`,
      'data-kind': bar.kind,
      'data-duration-ms': String(duration),
      'data-tokens': bar.tokens ?? null,
    }, [
      h('span', { class: 'timeline-label', text: bar.label, title: bar.label }),
      track,
      h('span', { class: 'timeline-duration', text: formatDuration(duration) }),
      h('span', { class: 'timeline-tokens', text: bar.tokens ?? '' }),
    ]);
  }));
  const total = formatDuration(t1 - t0);
  return h('details', { class: 'timeline' }, [
    h('summary', { text: `Timeline · ${total}`, 'aria-label': `Timeline of the run, ${total}` }),
    chart,
  ]);
}
