// @ts-check
// The module view: summary.module_layout (report/module_layout.py) drawn as given, one rank's
// tree at a time: each module a row with its name indented under its parent and a bar whose
// forward and backward parts have their own colours. Clicking a row (or Enter / Space on it)
// calls onSelectModule(rank, index), which outlines its calls on the timeline and its ops on
// the roofline. Module paths come from the trace: they reach the DOM only through textContent.
//
// For browser tests: the root carries data-modules (rows drawn), data-rank (the rank drawn)
// and data-selected-module ("rank:index", "" for none); each row data-module (its index in
// summary.ranks[rank].modules) and data-path.

import "./modules.css";
import { treeFor } from "../model/modules.js";
import { button, node } from "./dom.js";
import { labelText, s } from "./roofline_roofs.js";

/** @typedef {import("./report_types.js").Report} Report */
/** @typedef {import("../model/report_types.js").ModuleTree} ModuleTree */

/**
 * The module panel, or {el: null} when the report has no module rows (then nothing is shown,
 * not even an empty box).
 * @param {Report | null | undefined} summary the summary trait: the report and its layouts
 * @param {{onSelectModule?: (rank: number, index: number) => void}} [hooks] called when the
 *   user picks a row, not on select() from code.
 */
export function createModules(summary, hooks = {}) {
  summary = summary || {};
  const layout = summary.module_layout;
  const trees = layout ? layout.trees || [] : [];
  if (!layout || !trees.length) return { el: null, select() {}, destroy() {} };

  const root = node("div", "gp-modules");
  root.dataset.selectedModule = "";
  const head = node("div", "gp-md-head");
  head.appendChild(node("span", "gp-panel-title", "Time by module"));
  const legend = node("span", "gp-md-legend");
  for (const [part, words] of [["forward", "forward"], ["backward", "backward"]]) {
    const item = node("span", "gp-md-legend-item");
    item.appendChild(node("span", `gp-md-swatch gp-md-${part}`));
    item.appendChild(document.createTextNode(words));
    legend.appendChild(item);
  }
  head.appendChild(legend);
  root.appendChild(head);

  /** @type {Map<number, HTMLButtonElement>} */
  const rankButtons = new Map();
  if (trees.length > 1) {
    const box = node("span", "gp-md-ranks");
    box.setAttribute("role", "group");
    box.setAttribute("aria-label", "rank drawn");
    for (const t of trees) {
      const b = /** @type {HTMLButtonElement} */ (button(`rank ${t.rank}`, undefined, "gp-md-rank"));
      b.dataset.moduleRank = String(t.rank);
      b.addEventListener("click", () => draw(t.rank));
      rankButtons.set(t.rank, b);
      box.appendChild(b);
    }
    head.insertBefore(box, legend);
  }
  const chart = node("div", "gp-md-chart");
  const more = node("div", "gp-muted gp-md-more");
  root.append(chart, more);

  /** @type {ModuleTree | null} */
  let tree = null;
  /** @type {Map<number, SVGElement>} */
  const rows = new Map();
  /** @type {[number, number] | null} */
  let selected = null;

  /** @param {number | null} rank */
  function draw(rank) {
    tree = treeFor(layout, rank);
    rows.clear();
    if (!tree || !layout) return;
    for (const [r, b] of rankButtons) b.setAttribute("aria-pressed", String(r === tree.rank));
    const svg = s("svg", { viewBox: `0 0 ${layout.width} ${Math.max(tree.height, 1)}`, class: "gp-md-svg", role: "list" });
    svg.style.maxWidth = `${layout.width}px`;
    for (const place of tree.rows) {
      const g = s("g", { class: "gp-md-row", role: "button", tabindex: 0, "data-module": place.index, "data-path": place.path });
      g.setAttribute("aria-label", place.title);
      g.appendChild(s("title", {}, place.title));
      g.appendChild(s("rect", { x: 0, y: place.y, width: layout.width, height: layout.row_h, class: "gp-md-hit" }));
      const barY = place.y + (layout.row_h - 12) / 2;
      for (const [part, bar] of /** @type {const} */ ([["forward", place.forward], ["backward", place.backward]])) {
        if (bar.width > 0) g.appendChild(s("rect", { x: bar.x, y: barY, width: Math.max(bar.width, 0.5), height: 12, class: `gp-md-bar gp-md-${part}` }));
      }
      g.appendChild(labelText(place.label, "gp-md-label"));
      g.appendChild(labelText(place.value, "gp-md-value"));
      svg.appendChild(g);
      rows.set(place.index, g);
    }
    chart.replaceChildren(svg);
    more.textContent = tree.more ?? "";
    more.hidden = !tree.more;
    root.dataset.modules = String(tree.rows.length);
    root.dataset.rank = String(tree.rank);
    mark();
  }

  function mark() {
    for (const [i, g] of rows) g.classList.toggle("gp-md-selected", Boolean(selected && tree && selected[0] === tree.rank && selected[1] === i));
    root.dataset.selectedModule = selected ? `${selected[0]}:${selected[1]}` : "";
  }

  /**
   * Select module row `index` of `rank` (null clears), drawing that rank's tree. Does not
   * call hooks.onSelectModule.
   * @param {number | null} rank
   * @param {number} [index]
   */
  function select(rank, index) {
    selected = rank === null || index === undefined ? null : [rank, index];
    if (selected && tree && tree.rank !== rank) draw(rank);
    mark();
  }

  /** @param {Event} ev */
  const rowOf = (ev) => {
    const t = /** @type {Element | null} */ (ev.target);
    const g = t && t.closest ? t.closest(".gp-md-row") : null;
    const i = g ? Number(g.getAttribute("data-module")) : NaN;
    return Number.isInteger(i) ? i : null;
  };
  /** @param {number} i */
  function pick(i) {
    if (!tree) return;
    select(tree.rank, i);
    if (typeof hooks.onSelectModule === "function") hooks.onSelectModule(tree.rank, i);
  }
  const listening = new AbortController();
  chart.addEventListener("click", (ev) => {
    const i = rowOf(ev);
    if (i !== null) pick(i);
  }, { signal: listening.signal });
  chart.addEventListener("keydown", (ev) => {
    const i = rowOf(ev);
    if (i !== null && (ev.key === "Enter" || ev.key === " ")) {
      ev.preventDefault();
      pick(i);
    }
  }, { signal: listening.signal });

  draw(null);
  return {
    el: root,
    select,
    destroy() {
      listening.abort();
      root.remove();
    },
  };
}
