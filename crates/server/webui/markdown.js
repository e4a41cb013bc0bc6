// @ts-check
// Markdown for the text of a message, rendered while it streams. Built with DOM calls only:
// raw HTML in the text stays text, and links go only to http(s) and mailto addresses (opened
// in a new tab, without opener or referrer), so nothing a model writes becomes markup or script.
//
// How the incremental split works. Text comes in deltas and is read a line at a time: each
// complete line (ended by "\n") is read exactly once, and either continues the open block or
// ends it. A block that has ended — at a blank line, or at a line that starts another block —
// is rendered once, and its nodes are never touched again. Only the open block, with the
// unfinished last line, is rendered again after a delta, and it is small: a paragraph, a list
// or a table as it grows. An open code fence, which can be long, is not rendered again either:
// its lines are appended to a text node. So streaming costs each byte once, plus the open
// block per delta. While a block is open its last line may end mid-construct: an unclosed
// `**`, `*`, `~~` or backtick is shown as if closed, a dangling marker not at all, and an open
// fence is a code block that grows.
//
// What is read: paragraphs (a line break stays one), `#` headings, **bold**, *emphasis*,
// ~~strikethrough~~, `code`, [links](https://…) and bare URLs, ordered and unordered lists
// (nested by indentation), fenced code blocks with a Copy button, GFM pipe tables, blockquotes,
// horizontal rules and backslash escapes. Not: raw HTML (shown as written), images (shown as
// links), setext headings, indented code, reference links.

import { copyButton, h } from './dom.js';

const FENCE = /^( {0,3})(`{3,}|~{3,})[ \t]*([^`\s]*)[^`]*$/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const QUOTE = /^ {0,3}> ?(.*)$/;
const ITEM = /^( *)([-*+]|\d{1,9}[.)])(?:[ \t]+(.*)|$)/;
const DELIMITER = /^ *\|? *:?-+:? *(?:\| *:?-+:? *)*\|? *$/;
const SAFE_URL = /^(?:https?:\/\/|mailto:)/i;

/** What a line starts. @param {string} line */
function kindOf(line) {
  if (!line.trim()) return 'blank';
  if (FENCE.test(line)) return 'fence';
  if (RULE.test(line)) return 'rule';
  if (HEADING.test(line)) return 'heading';
  if (QUOTE.test(line)) return 'quote';
  if (ITEM.test(line)) return 'item';
  return 'text';
}

/**
 * A block being read: its kind and lines (a code block instead keeps its text nodes).
 * @typedef {{kind: 'paragraph' | 'list' | 'quote' | 'table', lines: string[]}} TextBlock
 * @typedef {{kind: 'code', fence: string, indent: number, lines: number, body: Text, tail: Text}} CodeBlock
 */

/** Markdown rendered into `root` as its text arrives. */
export class Markdown {
  /** @param {HTMLElement} root */
  constructor(root) {
    this.root = root;
    /** The text after the last line break: the line being written. */
    this.pending = '';
    /** @type {TextBlock | CodeBlock | null} the open block */
    this.block = null;
    /** @type {HTMLElement[]} what shows the open block and the pending line: replaced on each update */
    this.live = [];
  }

  /** Renders `text` whole. @param {HTMLElement} root @param {string} text */
  static render(root, text) {
    const markdown = new Markdown(root);
    markdown.append(text);
    markdown.end();
    return markdown;
  }

  /** More text. @param {string} delta */
  append(delta) {
    this.clearLive();
    let start = 0;
    for (let end = delta.indexOf('\n'); end >= 0; end = delta.indexOf('\n', start)) {
      this.read(this.pending + delta.slice(start, end));
      this.pending = '';
      start = end + 1;
    }
    this.pending += delta.slice(start);
    this.showOpen();
  }

  /** The text is complete: its last line is read and the open block ends. */
  end() {
    this.clearLive();
    if (this.pending) this.read(this.pending);
    this.pending = '';
    this.close();
  }

  /** Reads one complete line. @param {string} line */
  read(line) {
    const block = this.block;
    if (block?.kind === 'code') {
      if (closesFence(block, line)) this.close();
      else {
        block.body.appendData((block.lines++ > 0 ? '\n' : '') + unindent(line, block.indent));
      }
      return;
    }
    const kind = kindOf(line);
    if (block?.kind === 'paragraph' && isTableStart(block.lines, line, true)) {
      // The paragraph's last line was a table's header.
      const header = /** @type {string} */ (block.lines.pop());
      if (block.lines.length === 0) this.block = null;
      this.close();
      this.block = { kind: 'table', lines: [header, line] };
      return;
    }
    if (block && continues(block, kind, line)) {
      block.lines.push(line);
      return;
    }
    this.close();
    if (kind === 'fence') this.openFence(line);
    else if (kind === 'heading' || kind === 'rule') this.root.append(oneLine(kind, line, false));
    else if (kind === 'quote') this.block = { kind: 'quote', lines: [line] };
    else if (kind === 'item') this.block = { kind: 'list', lines: [line] };
    else if (kind === 'text') this.block = { kind: 'paragraph', lines: [line] };
  }

  /** Ends the open block: rendered for good (a code block already is). */
  close() {
    const block = this.block;
    this.block = null;
    if (!block) return;
    if (block.kind === 'code') block.tail.data = '';
    else this.root.append(renderBlock(block, false));
  }

  /** @param {string} line */
  openFence(line) {
    const [, indent, fence, lang] = /** @type {RegExpExecArray} */ (FENCE.exec(line));
    const { el, body, tail } = codeBlock(lang);
    this.root.append(el);
    this.block = { kind: 'code', fence, indent: indent.length, lines: 0, body, tail };
  }

  /** Shows the open block with the pending line, as far as they go. */
  showOpen() {
    const block = this.block;
    const line = this.pending;
    if (block?.kind === 'code') {
      // A closing fence being written is not code.
      const closing = line.trim() !== '' && closesFence(block, line.padEnd(line.length + block.fence.length, block.fence[0]));
      block.tail.data = line && !closing ? (block.lines > 0 ? '\n' : '') + unindent(line, block.indent) : '';
      return;
    }
    const kind = kindOf(line);
    /** @type {HTMLElement[]} */
    const nodes = [];
    if (block?.kind === 'paragraph' && line && isTableStart(block.lines, line, false)) {
      const header = block.lines[block.lines.length - 1];
      if (block.lines.length > 1) nodes.push(renderBlock({ kind: 'paragraph', lines: block.lines.slice(0, -1) }, false));
      nodes.push(renderBlock({ kind: 'table', lines: [header, line] }, true));
    } else if (block && kind !== 'blank' && continues(block, kind, line)) {
      nodes.push(renderBlock({ kind: block.kind, lines: [...block.lines, line] }, true));
    } else {
      if (block) nodes.push(renderBlock(block, false));
      if (kind === 'fence') nodes.push(codeBlock(FENCE.exec(line)?.[3] ?? '').el);
      else if (kind === 'heading' || kind === 'rule') nodes.push(oneLine(kind, line, true));
      else if (kind !== 'blank') {
        const started = kind === 'quote' ? 'quote' : kind === 'item' ? 'list' : 'paragraph';
        nodes.push(renderBlock({ kind: started, lines: [line] }, true));
      }
    }
    this.root.append(...nodes);
    this.live = nodes;
  }

  clearLive() {
    for (const node of this.live) node.remove();
    this.live = [];
  }
}

/** Whether a line of this kind goes on in the open block. @param {TextBlock} block @param {string} kind @param {string} line */
function continues(block, kind, line) {
  switch (block.kind) {
    case 'paragraph':
      // Of ordered items, only a list's first (`1.`) breaks a paragraph: "2024. A year" does not.
      return kind === 'text' || (kind === 'item' && /^ *\d+[.)]/.test(line) && !/^ *1[.)]/.test(line));
    case 'list':
      // Items, and lines that go on an item's text.
      return kind === 'item' || kind === 'text';
    case 'quote':
      return kind === 'quote';
    case 'table':
      return kind === 'text' && line.includes('|');
  }
}

/**
 * Whether `line` is a table's delimiter row under a header that is the paragraph's last line.
 * A complete row must have as many cells as the header; one being written, at most as many.
 * @param {string[]} lines @param {string} line @param {boolean} complete
 */
function isTableStart(lines, line, complete) {
  const header = lines[lines.length - 1];
  if (!header.includes('|') || !line.includes('|') || !DELIMITER.test(line)) return false;
  const columns = cells(header).length;
  return complete ? cells(line).length === columns : cells(line).length <= columns;
}

/** Whether `line` ends the code block. @param {CodeBlock} block @param {string} line */
function closesFence(block, line) {
  const found = /^ {0,3}(`{3,}|~{3,})[ \t]*$/.exec(line);
  return !!found && found[1][0] === block.fence[0] && found[1].length >= block.fence.length;
}

/** `line` without up to `indent` leading spaces (a fence's own indentation). @param {string} line @param {number} indent */
function unindent(line, indent) {
  let at = 0;
  while (at < indent && line[at] === ' ') at++;
  return line.slice(at);
}

/** A fenced code block: its language, a Copy button, and text nodes to append to. @param {string} lang */
function codeBlock(lang) {
  const body = document.createTextNode('');
  const tail = document.createTextNode('');
  const code = h('code', lang ? { 'data-lang': lang } : {}, [body, tail]);
  const el = h('div', { class: 'code-block' }, [
    h('div', { class: 'code-head' }, [h('span', { class: 'lang', text: lang }), copyButton('Copy the code', () => code.textContent ?? '')]),
    h('pre', { class: 'code' }, [code]),
  ]);
  return { el, body, tail };
}

/** A heading or a rule. @param {'heading' | 'rule'} kind @param {string} line @param {boolean} open */
function oneLine(kind, line, open) {
  if (kind === 'rule') return h('hr');
  const [, marks, text] = /** @type {RegExpExecArray} */ (HEADING.exec(line));
  return h(`h${marks.length}`, {}, inline(text ?? '', open));
}

/**
 * A block's nodes. `open` says its last line may still grow: unclosed markers at its end are
 * shown as closed.
 * @param {TextBlock} block @param {boolean} open
 * @returns {HTMLElement}
 */
function renderBlock(block, open) {
  switch (block.kind) {
    case 'paragraph':
      return h('p', {}, inline(block.lines.map((line) => line.trim()).join('\n'), open));
    case 'list':
      return list(block.lines, open);
    case 'table':
      return table(block.lines, open);
    case 'quote': {
      const quote = h('blockquote');
      const inner = new Markdown(quote);
      inner.append(block.lines.map((line) => QUOTE.exec(line)?.[1] ?? line).join('\n'));
      if (!open) inner.end();
      return quote;
    }
  }
}

/**
 * A list from its lines: an item's marker indented two or more spaces past its list's starts a
 * list inside the item before; a line without a marker goes on the last item's text.
 * @param {string[]} lines @param {boolean} open
 */
function list(lines, open) {
  /** @type {{indent: number, el: HTMLElement, item: HTMLElement | null}[]} the lists open, outermost first */
  const stack = [];
  /** @type {{li: HTMLElement, text: string}[]} */
  const items = [];
  let root = /** @type {HTMLElement | null} */ (null);
  for (const line of lines) {
    const found = ITEM.exec(line);
    if (!found) {
      const last = items[items.length - 1];
      if (last) last.text += `\n${line.trim()}`;
      continue;
    }
    const [, spaces, marker, text] = found;
    const indent = spaces.length;
    while (stack.length > 1 && indent < stack[stack.length - 1].indent) stack.pop();
    let top = stack[stack.length - 1];
    if (!top || (top.item && indent > top.indent + 1)) {
      const ordered = /\d/.test(marker);
      const el = h(ordered ? 'ol' : 'ul');
      const start = parseInt(marker, 10);
      if (ordered && start !== 1) el.setAttribute('start', String(start));
      if (top?.item) top.item.append(el);
      else root = el;
      top = { indent, el, item: null };
      stack.push(top);
    }
    const li = h('li');
    top.el.append(li);
    top.item = li;
    items.push({ li, text: text ?? '' });
  }
  // The text goes before the lists nested in the item.
  items.forEach(({ li, text }, i) => li.prepend(...inline(text, open && i === items.length - 1)));
  return root ?? h('ul');
}

/** A table's cells, from a row: `| a | b |` or `a | b`, with `\|` a pipe inside a cell. @param {string} row */
function cells(row) {
  let text = row.trim();
  if (text.startsWith('|')) text = text.slice(1);
  if (text.endsWith('|') && !text.endsWith('\\|')) text = text.slice(0, -1);
  return text.split(/(?<!\\)\|/).map((cell) => cell.trim().replaceAll('\\|', '|'));
}

/** A GFM pipe table: header, delimiter row (alignments), rows. @param {string[]} lines @param {boolean} open */
function table(lines, open) {
  const [header, delimiter, ...rows] = lines;
  const align = cells(delimiter).map((cell) => {
    const left = cell.startsWith(':');
    const right = cell.endsWith(':');
    return left && right ? 'center' : right ? 'right' : left ? 'left' : null;
  });
  const columns = cells(header).length;
  /** @param {string} row @param {string} tag @param {boolean} last */
  const tr = (row, tag, last) => {
    const values = cells(row);
    return h('tr', {}, Array.from({ length: columns }, (_, i) =>
      h(tag, { class: align[i] ? `align-${align[i]}` : null }, inline(values[i] ?? '', last && i === values.length - 1)),
    ));
  };
  return h('div', { class: 'table-wrap' }, [
    h('table', {}, [
      h('thead', {}, [tr(header, 'th', false)]),
      h('tbody', {}, rows.map((row, i) => tr(row, 'td', open && i === rows.length - 1))),
    ]),
  ]);
}

// Inline: the first of these that matches at the earliest place wins. Emphasis needs its
// markers against its text (`2 * 3 * 4` is arithmetic), and `_` only between non-word
// characters (snake_case stays as written).
const INLINE = new RegExp(
  [
    /\\([!-/:-@[-`{-~])/, // 1: an escaped punctuation character
    /(`+)([^`]|[^`][\s\S]*?[^`])\2(?!`)/, // 2, 3: code
    /!?\[([^\]\n]*)\]\(\s*<?([^()\s<>]*)>?(?:\s+"[^"\n]*")?\s*\)/, // 4, 5: a link (or image)
    /<((?:https?:\/\/|mailto:)[^\s<>]+)>/, // 6: an autolink
    /(https?:\/\/[^\s<>()]*[^\s<>().,;:!?'"*_~\]])/, // 7: a bare URL
    /\*\*(?!\s)([\s\S]+?)(?<!\s)\*\*/, // 8: bold
    /(?<!\w)__(?!\s)([\s\S]+?)(?<!\s)__(?!\w)/, // 9: bold
    /\*(?![\s*])([\s\S]+?)(?<![\s*])\*/, // 10: emphasis
    /(?<!\w)_(?![\s_])([\s\S]+?)(?<![\s_])_(?!\w)/, // 11: emphasis
    /~~(?!\s)([\s\S]+?)(?<!\s)~~/, // 12: strikethrough
  ]
    .map((pattern) => pattern.source)
    .join('|'),
  'g',
);

// Where an unclosed construct starts, in the text after the last complete one; or a marker
// at the very end, with nothing after it yet.
const OPENER = /(`+)(?=[^`]*$)|(\*\*|~~|(?<!\w)__)(?=\S)|(\*|(?<!\w)_)(?=[^\s*_])|(?:\*+|~+|(?<!\w)_+)$/;

/**
 * Inline Markdown as nodes. `open`: the text may be cut short, so an unclosed marker at its end
 * is shown as closed (and a marker with nothing after it yet, not at all).
 * @param {string} text @param {boolean} [open]
 * @returns {Node[]}
 */
function inline(text, open = false) {
  /** @type {Node[]} */
  const nodes = [];
  let last = 0;
  for (const match of text.matchAll(INLINE)) {
    const at = match.index ?? 0;
    if (at > last) nodes.push(document.createTextNode(text.slice(last, at)));
    nodes.push(inlineNode(match));
    last = at + match[0].length;
  }
  let rest = text.slice(last);
  const opener = open ? OPENER.exec(rest) : null;
  if (opener) {
    const at = opener.index;
    const marker = opener[0];
    const after = rest.slice(at + marker.length);
    if (at > 0) nodes.push(document.createTextNode(rest.slice(0, at)));
    if (after) {
      if (opener[1]) nodes.push(h('code', { text: after }));
      else if (marker === '~~') nodes.push(h('del', {}, inline(after, true)));
      else nodes.push(h(opener[2] ? 'strong' : 'em', {}, inline(after, true)));
    }
    rest = '';
  }
  if (rest) nodes.push(document.createTextNode(rest));
  return nodes;
}

/** @param {RegExpMatchArray} match @returns {Node} */
function inlineNode(match) {
  const [, escaped, , code, label, href, autolink, url, bold, bold2, em, em2, del] = match;
  if (escaped != null) return document.createTextNode(escaped);
  // Code keeps its spaces, except the one that pads a span starting or ending with a backtick.
  if (code != null) return h('code', { text: /^ .* $/.test(code) && code.trim() ? code.slice(1, -1) : code });
  if (label != null) return link(href ?? '', label ? inline(label) : [href ?? '']);
  if (autolink != null) return link(autolink, [autolink]);
  if (url != null) return link(url, [url]);
  if (bold != null || bold2 != null) return h('strong', {}, inline(bold ?? bold2));
  if (em != null || em2 != null) return h('em', {}, inline(em ?? em2));
  return h('del', {}, inline(del ?? ''));
}

/**
 * A link that opens in a new tab, without opener or referrer; a target that is not http(s) or
 * mailto (`javascript:`, a relative path) leaves only the label.
 * @param {string} href @param {(Node | string)[]} label
 */
function link(href, label) {
  if (!SAFE_URL.test(href)) return h('span', {}, label);
  return h('a', { href, target: '_blank', rel: 'noopener noreferrer' }, label);
}
