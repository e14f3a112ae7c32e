// @ts-check
// The baseline panel: the profile against the run it was compared with (report.baseline, the
// diff). Before/after bars of wall, GPU busy, idle (by cause) and the median step; the kernels and
// ops that moved most with their before, after and delta; the hints marked fixed, new or kept.
// The content is js/model/baseline.js's; trace names go in through textContent only.
//
// For browser tests: the root carries data-baseline="ready", data-fixed / data-new / data-kept
// (hint counts); each bar row data-bar (its key), each delta row data-delta-row ("kernels:i"),
// each hint data-mark (its group); the step-time verdict data-noise ("faster", "slower",
// "within noise", "none").

import "./baseline.css";
import { baselineView } from "../model/baseline.js";
import { node } from "./dom.js";

/** @typedef {import("../model/baseline.js").Bar} Bar */
/** @typedef {import("../model/baseline.js").DeltaRow} DeltaRow */
/** @typedef {import("../model/baseline.js").HintMark} HintMark */

/**
 * @param {import("./report_types.js").Report | null | undefined} summary the report (summary trait)
 * @returns {import("./report_types.js").Panel}
 */
export function createBaseline(summary) {
  const view = baselineView(summary);
  if (!view) return { el: null, destroy() {} };
  const el = node("div", "gp-baseline");
  el.dataset.baseline = "ready";
  for (const [group, n] of Object.entries(view.counts)) el.dataset[group] = String(n);

  const head = node("div", "gp-baseline-head");
  head.append(
    node("span", "gp-panel-title", "Against baseline"),
    node("span", "gp-baseline-source", view.baseline),
    node("span", "gp-baseline-key gp-baseline-a"), node("span", "gp-muted", "before"),
    node("span", "gp-baseline-key gp-baseline-b"), node("span", "gp-muted", "after"),
  );
  el.append(head);
  for (const note of view.notes) el.append(node("div", "gp-muted", `note: ${note}`));

  const body = node("div", "gp-baseline-body");
  const bars = node("div");
  bars.append(barsTable(view.bars));
  if (view.noise) {
    const noise = node("div", `gp-baseline-noise ${view.noise.verdict === "faster" ? "gp-baseline-better" : view.noise.verdict === "slower" ? "gp-baseline-worse" : "gp-muted"}`, view.noise.text);
    noise.dataset.noise = view.noise.verdict || "none";
    bars.append(noise);
  }
  body.append(bars);
  const tables = node("div", "gp-baseline-tables");
  /** @type {[string, string, DeltaRow[], number][]} */
  const deltas = [
    ["kernels", "Kernels", view.kernels, view.kernelsTotal],
    ["ops", "Ops", view.ops, view.opsTotal],
  ];
  for (const [key, title, rows, total] of deltas) {
    if (rows.length) tables.append(deltaTable(key, title, rows, total));
  }
  body.append(tables);
  el.append(body, hintList(view.hints));
  return {
    el,
    destroy() {
      el.remove();
    },
  };
}

/** @param {Bar[]} bars */
function barsTable(bars) {
  const t = node("table", "gp-table gp-baseline-bars");
  const head = t.createTHead().insertRow();
  for (const [label, cls] of [["", ""], ["", ""], ["before", "gp-num"], ["after", "gp-num"], ["delta", "gp-num"], ["after/before", "gp-num"]]) {
    head.append(node("th", cls, label));
  }
  const tbody = t.createTBody();
  for (const b of bars) {
    const tr = tbody.insertRow();
    tr.dataset.bar = b.key;
    tr.append(node("td", "gp-baseline-label", b.label));
    const cell = node("td", "gp-baseline-pair");
    /** @type {[string, number, string][]} */
    const pair = [["gp-baseline-a", b.aWidth, `before: ${b.aText}`], ["gp-baseline-b", b.bWidth, `after: ${b.bText}`]];
    for (const [cls, width, text] of pair) {
      const bar = node("div", `gp-baseline-bar ${cls}`);
      bar.style.width = `${(100 * width).toFixed(1)}%`;
      bar.title = text;
      cell.append(bar);
    }
    tr.append(cell);
    tr.append(node("td", "gp-num", b.aText), node("td", "gp-num", b.bText));
    tr.append(node("td", `gp-num gp-baseline-delta ${b.tone ? `gp-baseline-${b.tone}` : ""}`, b.deltaText));
    tr.append(node("td", "gp-num", b.ratioText));
  }
  return t;
}

/**
 * @param {string} key
 * @param {string} title
 * @param {DeltaRow[]} rows
 * @param {number} total
 */
function deltaTable(key, title, rows, total) {
  const section = node("div", "gp-top");
  section.append(node("div", "gp-subtitle", `${title} that moved most (${rows.length} of ${total})`));
  const t = node("table", "gp-table");
  const head = t.createTHead().insertRow();
  for (const [label, cls] of [["name", ""], ["before", "gp-num"], ["after", "gp-num"], ["delta", "gp-num"], ["count", "gp-num"]]) {
    head.append(node("th", cls, label));
  }
  const tbody = t.createTBody();
  rows.forEach((r, i) => {
    const tr = tbody.insertRow();
    tr.dataset.deltaRow = `${key}:${i}`;
    const name = node("td", "gp-name", r.name);
    name.title = r.matched ? `${r.name} (${r.matched})` : r.name;
    if (r.matched) name.append(node("span", "gp-muted", ` (${r.matched})`));
    tr.append(name, node("td", "gp-num", r.aText), node("td", "gp-num", r.bText));
    tr.append(node("td", `gp-num gp-baseline-delta ${r.tone ? `gp-baseline-${r.tone}` : ""}`, r.deltaText));
    tr.append(node("td", "gp-num", r.countText));
  });
  section.append(t);
  return section;
}

/** @param {HintMark[]} hints */
function hintList(hints) {
  const section = node("div", "gp-baseline-hints");
  if (!hints.length) {
    section.append(node("div", "gp-muted", "hints: neither run has any"));
    return section;
  }
  const list = node("ul", "gp-baseline-hintlist");
  for (const h of hints) {
    const li = node("li");
    li.dataset.mark = h.group;
    const label = h.group === "unjudged" ? "b cannot judge" : h.group;
    li.append(node("span", `gp-baseline-mark gp-baseline-mark-${h.group}`, label));
    li.append(node("span", "gp-baseline-hint-title", h.title));
    li.append(node("span", "gp-muted", ` ${h.kind} · ${h.gainText}`));
    list.append(li);
  }
  section.append(list);
  return section;
}
