// @ts-check
// Small DOM builders shared by every view. Text goes in through textContent only.

/**
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {string | null} [className]
 * @param {string} [text]
 * @returns {HTMLElementTagNameMap[K]}
 */
export function node(tag, className, text) {
  const el = document.createElement(tag);
  if (className) el.className = className;
  if (text !== undefined) el.textContent = text;
  return el;
}

/**
 * @param {string} text
 * @param {string} [title] the tooltip and the accessible name
 * @param {string} [className]
 */
export function button(text, title, className = "gp-button") {
  const b = node("button", className, text);
  b.type = "button";
  if (title) {
    b.title = title;
    b.setAttribute("aria-label", title);
  }
  return b;
}
