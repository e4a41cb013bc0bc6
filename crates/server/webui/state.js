// @ts-check
// The session's shared state: a JSON document the runs change with `state_snapshot` (whole)
// and `state_delta` (RFC 6902 operations), shown live beside the conversation.
//
// Both the document and its view change one operation at a time, never whole: a model that
// streams a large state into `update_state` sends thousands of small operations, and redrawing
// the document for each would cost its size per operation. Each operation touches the node at
// its path, and what it adds is drawn once, so the view stays O(total bytes).

/** @typedef {{op: string, path: string, from?: string, value?: any}} Operation */

/**
 * The tokens of a JSON pointer (`/a/b~1c` → `["a", "b/c"]`).
 * @param {string} pointer @returns {string[]}
 */
export function tokens(pointer) {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) throw new Error(`"${pointer}" is not a JSON pointer`);
  return pointer
    .slice(1)
    .split('/')
    .map((token) => token.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/** @param {any} value */
function isContainer(value) {
  return value !== null && typeof value === 'object';
}

/**
 * The index an array token names: `-` (the end) where `end` allows it.
 * @param {any[]} array @param {string} token @param {boolean} end
 */
function arrayIndex(array, token, end) {
  if (end && token === '-') return array.length;
  if (!/^(0|[1-9][0-9]*)$/.test(token)) throw new Error(`"${token}" is not an array index`);
  const index = Number(token);
  if (index > array.length || (!end && index === array.length)) throw new Error(`index ${index} is out of the array`);
  return index;
}

/**
 * Applies RFC 6902 operations to a document, all or none: on a failing operation the document
 * is as it was, and the error says which. Returns the document (a new root when an operation
 * replaced the whole of it) and each operation as applied, array ends (`-`) made indexes.
 * @param {any} document @param {Operation[]} ops
 * @returns {{document: any, applied: Operation[]}}
 */
export function applyPatch(document, ops) {
  /** @type {(() => void)[]} */
  const undo = [];
  /** @type {Operation[]} */
  const applied = [];
  let root = document;
  const holder = { root };
  try {
    for (const op of ops) applied.push(applyOne(holder, op, undo));
  } catch (error) {
    for (const step of undo.reverse()) step();
    const message = error instanceof Error ? error.message : String(error);
    throw new Error(`state_delta does not apply: ${message}`);
  }
  root = holder.root;
  return { document: root, applied };
}

/**
 * @param {{root: any}} holder @param {Operation} op @param {(() => void)[]} undo
 * @returns {Operation}
 */
function applyOne(holder, op, undo) {
  switch (op.op) {
    case 'add':
      return { ...op, path: add(holder, op.path, op.value, undo) };
    case 'remove':
      remove(holder, op.path, undo);
      return op;
    case 'replace': {
      remove(holder, op.path, undo);
      add(holder, op.path, op.value, undo);
      return op;
    }
    case 'move': {
      const value = get(holder.root, op.from ?? '');
      remove(holder, op.from ?? '', undo);
      return { ...op, path: add(holder, op.path, value, undo) };
    }
    case 'copy':
      return { ...op, path: add(holder, op.path, structuredClone(get(holder.root, op.from ?? '')), undo) };
    case 'test':
      if (JSON.stringify(get(holder.root, op.path)) !== JSON.stringify(op.value)) throw new Error(`test at "${op.path}" failed`);
      return op;
    default:
      throw new Error(`unknown operation "${op.op}"`);
  }
}

/** The value at `pointer`. @param {any} root @param {string} pointer */
export function get(root, pointer) {
  let value = root;
  for (const token of tokens(pointer)) {
    if (Array.isArray(value)) value = value[arrayIndex(value, token, false)];
    else if (isContainer(value) && Object.hasOwn(value, token)) value = value[token];
    else throw new Error(`nothing at "${pointer}"`);
  }
  return value;
}

/**
 * Adds `value` at `pointer`; returns the pointer with an array end made an index.
 * @param {{root: any}} holder @param {string} pointer @param {any} value @param {(() => void)[]} undo
 */
function add(holder, pointer, value, undo) {
  const path = tokens(pointer);
  if (path.length === 0) {
    const before = holder.root;
    holder.root = value;
    undo.push(() => (holder.root = before));
    return pointer;
  }
  const last = /** @type {string} */ (path.pop());
  const parent = get(holder.root, path.map(escape).map((token) => `/${token}`).join(''));
  if (Array.isArray(parent)) {
    const index = arrayIndex(parent, last, true);
    parent.splice(index, 0, value);
    undo.push(() => parent.splice(index, 1));
    return `${path.map((token) => `/${escape(token)}`).join('')}/${index}`;
  }
  if (!isContainer(parent)) throw new Error(`"${pointer}" is inside a value that is not a container`);
  const had = Object.hasOwn(parent, last);
  const before = parent[last];
  parent[last] = value;
  undo.push(() => {
    if (had) parent[last] = before;
    else delete parent[last];
  });
  return pointer;
}

/** @param {{root: any}} holder @param {string} pointer @param {(() => void)[]} undo */
function remove(holder, pointer, undo) {
  const path = tokens(pointer);
  if (path.length === 0) {
    const before = holder.root;
    holder.root = null;
    undo.push(() => (holder.root = before));
    return;
  }
  const last = /** @type {string} */ (path.pop());
  const parent = get(holder.root, path.map((token) => `/${escape(token)}`).join(''));
  if (Array.isArray(parent)) {
    const index = arrayIndex(parent, last, false);
    const [removed] = parent.splice(index, 1);
    undo.push(() => parent.splice(index, 0, removed));
    return;
  }
  if (!isContainer(parent) || !Object.hasOwn(parent, last)) throw new Error(`nothing at "${pointer}"`);
  const before = parent[last];
  delete parent[last];
  undo.push(() => (parent[last] = before));
}

/** A token as a pointer writes it. @param {string} token */
function escape(token) {
  return token.replaceAll('~', '~0').replaceAll('/', '~1');
}

/**
 * A JSON document drawn as a tree, changed one operation at a time.
 * Each value is an element: a container's children are kept by key (objects) or in order
 * (arrays), so an operation finds its node in O(depth).
 */
export class StateView {
  /** @param {HTMLElement} host */
  constructor(host) {
    this.host = host;
    /** @type {ViewNode | undefined} */
    this.root = undefined;
  }

  /** Draws `document` whole (a snapshot). @param {any} document */
  reset(document) {
    this.host.replaceChildren();
    this.root = undefined;
    if (document === null || document === undefined) return;
    this.root = draw(document);
    this.host.append(this.root.el);
  }

  /** Applies operations already applied to the document (as `applyPatch` gave them back). @param {Operation[]} ops @param {any} document */
  patch(ops, document) {
    for (const op of ops) {
      try {
        this.one(op, document);
      } catch {
        // A view that lost its way draws the document again.
        this.reset(document);
        return;
      }
    }
  }

  /** @param {Operation} op @param {any} document */
  one(op, document) {
    switch (op.op) {
      case 'add':
        this.insert(op.path, op.value);
        break;
      case 'remove':
        this.delete(op.path);
        break;
      case 'replace':
        this.delete(op.path);
        this.insert(op.path, op.value);
        break;
      case 'move':
      case 'copy':
        if (op.op === 'move') this.delete(op.from ?? '');
        this.insert(op.path, get(document, op.path));
        break;
      default:
        break;
    }
  }

  /** @param {string} pointer @param {any} value */
  insert(pointer, value) {
    const path = tokens(pointer);
    if (path.length === 0 || !this.root) {
      this.reset(path.length === 0 ? value : undefined);
      return;
    }
    const last = /** @type {string} */ (path.pop());
    const parent = this.node(path);
    const child = draw(value);
    if (parent.kind === 'array') {
      const items = /** @type {ViewNode[]} */ (parent.items);
      const index = Number(last);
      const item = document.createElement('li');
      item.append(child.el);
      child.row = item;
      const after = items[index]?.row;
      if (after) parent.list?.insertBefore(item, after);
      else parent.list?.append(item);
      items.splice(index, 0, child);
    } else if (parent.kind === 'object') {
      const keys = /** @type {Map<string, ViewNode>} */ (parent.keys);
      const old = keys.get(last);
      const row = entry(last, child.el);
      child.row = row;
      if (old?.row) old.row.replaceWith(row);
      else parent.list?.append(row);
      keys.set(last, child);
    } else {
      throw new Error('a scalar has no children');
    }
  }

  /** @param {string} pointer */
  delete(pointer) {
    const path = tokens(pointer);
    if (path.length === 0) {
      this.reset(undefined);
      return;
    }
    const last = /** @type {string} */ (path.pop());
    const parent = this.node(path);
    if (parent.kind === 'array') {
      const items = /** @type {ViewNode[]} */ (parent.items);
      const [removed] = items.splice(Number(last), 1);
      removed?.row?.remove();
    } else if (parent.kind === 'object') {
      const keys = /** @type {Map<string, ViewNode>} */ (parent.keys);
      keys.get(last)?.row?.remove();
      keys.delete(last);
    }
  }

  /** The node at `path`. @param {string[]} path @returns {ViewNode} */
  node(path) {
    let node = this.root;
    for (const token of path) {
      if (!node) break;
      node = node.kind === 'array' ? node.items?.[Number(token)] : node.keys?.get(token);
    }
    if (!node) throw new Error(`no node at /${path.join('/')}`);
    return node;
  }
}

/**
 * @typedef {{kind: 'object' | 'array' | 'scalar', el: HTMLElement, list?: HTMLElement,
 *   keys?: Map<string, ViewNode>, items?: ViewNode[], row?: HTMLElement}} ViewNode
 */

/** Draws a value. @param {any} value @returns {ViewNode} */
function draw(value) {
  if (Array.isArray(value)) {
    const list = document.createElement('ol');
    list.className = 'state-array';
    list.start = 0;
    /** @type {ViewNode} */
    const node = { kind: 'array', el: list, list, items: [] };
    for (const item of value) {
      const child = draw(item);
      const row = document.createElement('li');
      row.append(child.el);
      child.row = row;
      list.append(row);
      node.items?.push(child);
    }
    return node;
  }
  if (isContainer(value)) {
    const list = document.createElement('dl');
    list.className = 'state-object';
    /** @type {ViewNode} */
    const node = { kind: 'object', el: list, list, keys: new Map() };
    for (const [key, item] of Object.entries(value)) {
      const child = draw(item);
      const row = entry(key, child.el);
      child.row = row;
      list.append(row);
      node.keys?.set(key, child);
    }
    return node;
  }
  const el = document.createElement('span');
  el.className = `state-scalar state-${value === null ? 'null' : typeof value}`;
  el.textContent = typeof value === 'string' ? value : JSON.stringify(value);
  return { kind: 'scalar', el };
}

/** A key and its value, as a row of an object. @param {string} key @param {HTMLElement} value */
function entry(key, value) {
  const row = document.createElement('div');
  row.className = 'state-entry';
  const name = document.createElement('dt');
  name.textContent = key;
  const body = document.createElement('dd');
  body.append(value);
  row.append(name, body);
  return row;
}
