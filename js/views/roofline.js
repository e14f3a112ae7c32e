// @ts-check
// The roofline panel: an SVG log-log chart (FLOP/byte against FLOP/s) of report["roofline"]
// points over the roofs of report["hardware"], a coverage badge, a hover card, a details box for
// the selected point with the hints that name it, and the points that cannot be plotted. Python
// lays the chart out (summary.roofline_layout: roofs, axes, which points are plotted and where,
// the sentences); roofline_chart.js draws its axes and roofs, this module its points.
// Trace strings (op and kernel names, shapes) reach the DOM only through textContent.
//
// For browser tests: the root carries data-chart ("drawn", or "none" when no point can be
// plotted: one line then says why), data-points (plotted circles), data-unplotted,
// data-selected-point (index, "" for none) and data-highlighted-points ("1,4"); each circle
// data-point (index in summary.roofline.points); each roof line data-roof (precisions or "dram").
// Only one level of points is drawn at a time (data-level "op" | "kernel"; buttons
// data-level-button switch), so data-points counts the circles of that level.

import "./roofline.css";
import { formatFraction, formatTime } from "../model/format.js";
import { whereRows } from "../model/modules.js";
import { hintsForPoint, pointFacts, resolvePoints, uncoveredShare } from "../model/roofline.js";
import { button, node } from "./dom.js";
import { buildChart } from "./roofline_chart.js";
import { s } from "./roofline_roofs.js";

/** @typedef {import("../model/roofline.js").RooflinePoint} RooflinePoint */

/** @type {Record<string, string>} */
const LEVEL_WORDS = { op: "ops", kernel: "kernels" };

/** @param {[string, string][]} rows */
function factsTable(rows) {
  const t = node("table", "gp-rl-facts");
  const body = t.createTBody();
  for (const [label, text] of rows) {
    const tr = body.insertRow();
    tr.appendChild(node("th", "", label));
    tr.appendChild(node("td", "", text));
  }
  return t;
}

/** @param {RooflinePoint} p */
function pointTitle(p) {
  return String(p.label || p.name || p.key || "point");
}

/** @param {unknown} coverage */
function coverageBadge(coverage) {
  const share = uncoveredShare(coverage);
  const badge = node("span", "gp-rl-coverage");
  if (share === null) {
    badge.textContent = "FLOP coverage unknown";
    badge.classList.add("gp-rl-coverage-unknown");
  } else if (share === 0) {
    badge.textContent = "FLOPs counted for all of the time";
  } else {
    badge.textContent = `no FLOP count for ${formatFraction(share, share < 0.1 ? 1 : 0)} of the time`;
    if (share >= 0.5) badge.classList.add("gp-rl-coverage-low");
  }
  badge.title =
    "Share of the time (GPU time on traces with kernels) spent in ops and kernels whose FLOPs " +
    "are not counted: that time is not on the chart.";
  badge.dataset.uncovered = share === null ? "unknown" : String(share);
  return badge;
}

function legend() {
  const box = node("span", "gp-rl-legend");
  const items = [["memory", "memory-bound"], ["compute", "compute-bound"], ["unknown", "bound unknown"]];
  for (const [bound, label] of items) {
    const item = node("span", "gp-rl-legend-item");
    item.appendChild(node("span", `gp-rl-swatch gp-bound-${bound}`));
    item.appendChild(document.createTextNode(label));
    box.appendChild(item);
  }
  return box;
}

/**
 * @param {import("./report_types.js").Report | null} summary the summary trait: the report
 *   and its roofline's layout
 * @param {{onSelectPoint?: (i: number) => void}} [hooks] onSelectPoint: called when the user
 *   selects a point (click, Enter), not on select() from code, so a caller that selects a point
 *   programmatically cannot loop.
 */
export function createRoofline(summary, hooks = {}) {
  summary = summary || {};
  const points = (summary.roofline && summary.roofline.points) || [];
  const hints = summary.hints || [];
  const layout = summary.roofline_layout;
  const places = layout ? layout.points : [];

  const root = node("div", "gp-roofline");
  root.dataset.selectedPoint = "";
  root.dataset.highlightedPoints = "";

  const head = node("div", "gp-rl-head");
  head.appendChild(node("span", "gp-panel-title", "Roofline"));
  head.appendChild(coverageBadge(summary.roofline && summary.roofline.coverage));
  // Nothing to plot: one line says why, in place of an empty chart (and of its legend).
  const empty = layout ? layout.empty : "Nothing to plot: the roofline was not laid out.";
  root.dataset.chart = empty ? "none" : "drawn";
  if (!empty) head.appendChild(legend());
  root.appendChild(head);

  if (layout && layout.roofs_missing) root.appendChild(node("div", "gp-rl-message", layout.roofs_missing));

  /** @type {number[]} */
  const plotted = [];
  /** @type {number[]} */
  const unplotted = [];
  places.forEach((place, i) => (place.plotted ? plotted : unplotted).push(i));
  root.dataset.unplotted = String(unplotted.length);

  // The chart: axes and roofs, and the points of one level at a time in its point layer.
  const chart = empty || !layout ? null : buildChart(layout);
  /** @type {Map<number, SVGElement>} */
  const circles = new Map();
  // Ops and the kernels they launch carry the same FLOPs, bytes and time: drawn together they
  // sit on top of each other. One level at a time; the switch shows when both are there.
  const levels = layout ? layout.levels : [];
  /** @type {string | null} */
  let level = levels[0] ?? null;
  /** @type {Set<number>} */
  let highlighted = new Set();

  function drawPoints() {
    circles.clear();
    if (chart) drawCircles(chart);
    root.dataset.points = String(circles.size);
    root.dataset.level = level ?? "";
  }
  /** @param {{pointLayer: SVGElement}} chart */
  function drawCircles({ pointLayer }) {
    pointLayer.replaceChildren();
    // Largest first, so small points stay on top and clickable.
    const order = plotted
      .filter((i) => level === null || places[i].level === level)
      .sort((a, b) => places[b].r - places[a].r);
    for (const i of order) {
      const p = points[i];
      const place = places[i];
      const c = s("circle", {
        cx: place.x,
        cy: place.y,
        r: place.r,
        class: `gp-rl-point gp-bound-${place.bound}`,
        tabindex: 0,
        role: "button",
        "data-point": i,
      });
      c.setAttribute("aria-label", `${pointTitle(p)}: ${formatTime(p.time_ns)}`);
      if (highlighted.has(i)) c.classList.add("gp-rl-highlight");
      pointLayer.appendChild(c);
      circles.set(i, c);
    }
  }
  /** @type {Map<string, HTMLButtonElement>} */
  const levelButtons = new Map();
  if (levels.length > 1) {
    const box = node("span", "gp-rl-levels");
    box.setAttribute("role", "group");
    box.setAttribute("aria-label", "points drawn");
    for (const lv of levels) {
      const b = /** @type {HTMLButtonElement} */ (button(LEVEL_WORDS[lv] ?? lv, undefined, "gp-rl-level"));
      b.dataset.levelButton = lv;
      b.addEventListener("click", () => setLevel(lv));
      levelButtons.set(lv, b);
      box.appendChild(b);
    }
    head.insertBefore(box, head.querySelector(".gp-rl-legend"));
  }
  /** @param {string | null} lv */
  function setLevel(lv) {
    level = lv;
    for (const [key, b] of levelButtons) b.setAttribute("aria-pressed", String(key === lv));
    hideTip();
    drawPoints();
    markSelected();
  }

  root.appendChild(chart ? chart.el : node("div", "gp-muted gp-rl-empty", empty ?? ""));
  const roofList = node("div", "gp-rl-roofs-list", layout ? layout.roofs_text : "");
  const citation = /** @type {{hardware?: {citation?: unknown}}} */ (summary).hardware?.citation;
  if (citation) roofList.title = String(citation);
  root.appendChild(roofList);

  const details = node("div", "gp-rl-details");
  details.hidden = true;
  root.appendChild(details);

  // Points that cannot sit on log-log axes, listed so their time is not silently dropped.
  if (unplotted.length) {
    const box = node("details", "gp-rl-unplotted");
    box.appendChild(node("summary", "", layout?.unplotted ?? ""));
    const list = node("ul", "");
    for (const i of unplotted) {
      const li = node("li", "");
      const b = button(pointTitle(points[i]), pointTitle(points[i]), "gp-rl-linklike");
      b.dataset.unplottedPoint = String(i);
      b.addEventListener("click", () => userSelect(i));
      li.appendChild(b);
      li.appendChild(node("span", "gp-muted", ` ${formatTime(points[i].time_ns)} · ${places[i].reason}`));
      list.appendChild(li);
    }
    box.appendChild(list);
    root.appendChild(box);
  }

  // Hover card.
  /** @param {number} i */
  function showTip(i) {
    const p = points[i];
    const c = circles.get(i);
    if (!p || !c || !chart) return;
    const tip = chart.tip;
    tip.replaceChildren(node("div", "gp-rl-tip-name", pointTitle(p)), factsTable([...whereRows(p), ...pointFacts(p, places[i].note)]));
    tip.hidden = false;
    const box = chart.el.getBoundingClientRect();
    const dot = c.getBoundingClientRect();
    const left = dot.right - box.left + 8;
    // Flip to the left of the point when the card would leave the chart.
    const tipWidth = tip.offsetWidth || 320;
    tip.style.left = `${left + tipWidth > box.width ? Math.max(0, dot.left - box.left - tipWidth - 8) : left}px`;
    tip.style.top = `${Math.max(0, dot.top - box.top - 8)}px`;
  }
  function hideTip() {
    if (chart) chart.tip.hidden = true;
  }

  /** @type {number | null} */
  let selected = null;
  /** @param {number | null} i */
  function renderDetails(i) {
    const p = i === null ? undefined : points[i];
    details.replaceChildren();
    if (!p || i === null) {
      details.hidden = true;
      return;
    }
    const top = node("div", "gp-rl-details-head");
    const title = node("span", "gp-rl-details-name", pointTitle(p));
    title.title = String(p.name ?? "");
    top.appendChild(title);
    const close = button("×", "clear the selection", "gp-rl-close");
    close.addEventListener("click", () => select(null));
    top.appendChild(close);
    details.appendChild(top);
    if (!places[i].plotted) details.appendChild(node("div", "gp-muted", `not plotted: ${places[i].reason}`));
    details.appendChild(factsTable([...whereRows(p), ...pointFacts(p, places[i].note)]));
    const related = hintsForPoint(hints, p.key);
    if (related.length) {
      details.appendChild(node("div", "gp-rl-subtitle", related.length === 1 ? "Hint" : "Hints"));
      const list = node("ul", "gp-rl-hints");
      for (const j of related) {
        const li = node("li", "");
        li.dataset.hint = String(j);
        li.appendChild(node("span", "gp-rl-hint-title", hints[j].title ?? hints[j].kind ?? "hint"));
        li.appendChild(node("span", "gp-muted", ` · gives back up to ${formatTime(hints[j].gain_ns)}`));
        list.appendChild(li);
      }
      details.appendChild(list);
    } else {
      details.appendChild(node("div", "gp-muted", "No hint names this point."));
    }
    details.hidden = false;
  }

  function markSelected() {
    for (const c of circles.values()) c.classList.remove("gp-rl-selected");
    const c = selected === null ? undefined : circles.get(selected);
    if (c && chart) {
      c.classList.add("gp-rl-selected");
      chart.pointLayer.appendChild(c); // on top of its neighbours
    }
  }

  /**
   * Select point k (index or key; null clears), switching to its level if it is drawn at the
   * other one. Does not call hooks.onSelectPoint.
   * @param {number | string | null | undefined} k
   */
  function select(k) {
    const [i] = k === null || k === undefined ? [] : resolvePoints(points, [k]);
    selected = i === undefined ? null : i;
    root.dataset.selectedPoint = selected === null ? "" : String(selected);
    const lv = selected === null ? null : places[selected].level;
    if (selected !== null && lv !== null && places[selected].plotted && levelButtons.has(lv) && lv !== level) setLevel(lv);
    else markSelected();
    renderDetails(selected);
  }

  /** @param {number} i */
  function userSelect(i) {
    select(i);
    if (typeof hooks.onSelectPoint === "function") hooks.onSelectPoint(i);
  }

  /**
   * Ring the given points (indexes or keys) and dim the others; [] clears.
   * @param {Iterable<unknown> | null | undefined} keysOrIndexes
   */
  function highlightPoints(keysOrIndexes) {
    highlighted = new Set(resolvePoints(points, keysOrIndexes || []));
    const lv = [...highlighted].map((i) => places[i].level).find((l) => levelButtons.has(l));
    if (lv !== undefined && lv !== level && ![...highlighted].some((i) => circles.has(i))) setLevel(lv);
    for (const [i, c] of circles) c.classList.toggle("gp-rl-highlight", highlighted.has(i));
    root.classList.toggle("gp-rl-highlighting", highlighted.size > 0);
    root.dataset.highlightedPoints = [...highlighted].join(",");
  }

  // One set of listeners on the layer, not one per circle.
  /** @param {Event} ev */
  const pointOf = (ev) => {
    const t = /** @type {SVGElement | null} */ (ev.target);
    return t && t.dataset && t.dataset.point !== undefined ? Number(t.dataset.point) : null;
  };
  /** @param {Event} ev */
  const onOver = (ev) => {
    const i = pointOf(ev);
    if (i !== null) showTip(i);
  };
  /** @param {Event} ev */
  const onOut = (ev) => {
    if (pointOf(ev) !== null) hideTip();
  };
  /** @param {Event} ev */
  const onClick = (ev) => {
    const i = pointOf(ev);
    if (i !== null) userSelect(i);
  };
  /** @param {Event} ev */
  const onKey = (ev) => {
    const i = pointOf(ev);
    const key = /** @type {KeyboardEvent} */ (ev).key;
    if (i !== null && (key === "Enter" || key === " ")) {
      ev.preventDefault();
      userSelect(i);
    }
  };
  setLevel(level);
  const listening = new AbortController(); // destroy() removes every listener at once
  const handlers = { pointerover: onOver, pointerout: onOut, focusin: onOver, focusout: onOut, click: onClick, keydown: onKey };
  if (chart) for (const [type, fn] of Object.entries(handlers)) chart.pointLayer.addEventListener(type, fn, { signal: listening.signal });

  return {
    el: root,
    select,
    highlightPoints,
    destroy() {
      listening.abort();
      root.remove();
    },
  };
}
