// @ts-check
// Building the page: elements from DOM calls (text is always a text node, so nothing said in a
// message can become markup), and the Copy buttons messages and code blocks share.

/**
 * An element with classes, attributes and children.
 * @param {string} tag @param {Record<string, any>} [attrs] @param {(Node | string | null | undefined)[]} [children]
 * @returns {HTMLElement}
 */
export function h(tag, attrs = {}, children = []) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value == null || value === false) continue;
    if (name === 'class') el.className = value;
    else if (name === 'text') el.textContent = value;
    else if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children) if (child != null) el.append(child);
  return el;
}

/**
 * A button that puts `text()` on the clipboard and says how that went; null where there is no
 * clipboard API (it is there on https and localhost only).
 * @param {string} label what the button is for, e.g. "Copy the answer" @param {() => string} text
 */
export function copyButton(label, text) {
  if (!navigator.clipboard) return null;
  const button = h('button', { type: 'button', class: 'copy', text: 'Copy', 'aria-label': label });
  button.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(text());
      button.textContent = 'Copied';
    } catch {
      button.textContent = 'Copy failed';
    }
    setTimeout(() => (button.textContent = 'Copy'), 1500);
  });
  return button;
}
