// @ts-check
// The report header: counts, GPU time per rank, top kernels. Every string that comes from a
// trace (kernel names, device names, paths) goes through textContent, never through HTML parsing.
// Hints are not listed here: the hints panel (views/hints.js) shows them.

import { formatBytes, formatBytesPerS, formatCount, formatFraction, formatPercent, formatTime, ratio } from "../model/format.js";
import { node } from "./dom.js";

/** @typedef {import("./report_types.js").Report} Report */
/** @typedef {import("../model/report_types.js").RankReport} RankReport */
/** @typedef {import("../model/report_types.js").Copies} Copies */
/** @typedef {"kernels" | "memcpy" | "memset" | "ops" | "runtime"} CountKey */
/** A named row of a rank's top kernels or top ops, as the report has it (a kernel's label is its short name). @typedef {{name?: unknown, label?: unknown, count?: unknown, total_ns?: unknown}} TopItem */
/** @typedef {{table: "kernels" | "ops", name: string, rank: number}} NamePick */

/** @type {readonly CountKey[]} */
export const COUNT_KEYS = ["kernels", "memcpy", "memset", "ops"];

/**
 * Sum summary.ranks[].counts over ranks for the keys the header shows.
 * @param {Report | null | undefined} summary
 * @returns {Record<CountKey, number>}
 */
export function totalCounts(summary) {
  const totals = { kernels: 0, memcpy: 0, memset: 0, ops: 0, runtime: 0 };
  for (const rank of (summary && summary.ranks) || []) {
    const counts = (rank && rank.counts) || {};
    for (const key of /** @type {CountKey[]} */ (Object.keys(totals))) {
      const v = Number(counts[key]);
      if (Number.isFinite(v)) totals[key] += v;
    }
  }
  return totals;
}

/**
 * @param {string[]} headers
 * @param {unknown[][]} rows
 * @param {number} [numericFrom] the first column of numbers (right-aligned)
 * @param {string[]} [titles] per row, what hovering its name shows (a kernel's full name)
 */
function table(headers, rows, numericFrom = 1, titles = []) {
  const t = node("table", "gp-table");
  const head = t.createTHead().insertRow();
  headers.forEach((label, i) => {
    const th = node("th", i >= numericFrom ? "gp-num" : "", label);
    head.appendChild(th);
  });
  const body = t.createTBody();
  rows.forEach((cells, r) => {
    const tr = body.insertRow();
    cells.forEach((value, i) => {
      const td = tr.insertCell();
      td.textContent = String(value);
      if (i >= numericFrom) td.className = "gp-num";
      else {
        td.className = "gp-name";
        td.title = i === 0 && titles[r] ? titles[r] : String(value);
      }
    });
  });
  return t;
}

/**
 * A row that shows its name on the timeline when clicked, or on Enter or Space.
 * @param {HTMLTableRowElement} tr
 * @param {string} label
 * @param {() => void} pick
 */
function pickable(tr, label, pick) {
  tr.tabIndex = 0;
  tr.setAttribute("role", "button");
  tr.setAttribute("aria-label", label);
  tr.classList.add("gp-pickable");
  tr.addEventListener("click", pick);
  tr.addEventListener("keydown", (e) => {
    if (e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      pick();
    }
  });
}

// `denominator` (ns) and its label give the share column: kernels against GPU busy time, ops
// against wall time. Without a denominator the column is left out (nested ops overlap, so a
// share of the listed rows' sum would mislead). Row i carries data-top "<id>:i"; with `pick`,
// it calls pick(i, row) when chosen.
/**
 * @param {string} title
 * @param {TopItem[] | null | undefined} items
 * @param {unknown} denominator ns
 * @param {string} shareLabel
 * @param {{id?: string, pick?: ((i: number, tr: HTMLTableRowElement) => void) | null}} [opts]
 * @param {number} [limit]
 */
function topTable(title, items, denominator, shareLabel, { id = "", pick = null } = {}, limit = 10) {
  const section = node("div", "gp-top");
  section.appendChild(node("div", "gp-subtitle", title));
  if (!items || items.length === 0) {
    section.appendChild(node("div", "gp-muted", "none"));
    return section;
  }
  const withShare = Number(denominator) > 0;
  const rows = items.slice(0, limit).map((k) => {
    const row = [k.label || k.name || "", formatCount(k.count), formatTime(k.total_ns)];
    if (withShare) row.push(formatFraction(ratio(k.total_ns, denominator)));
    return row;
  });
  const headers = ["name", "count", "total"];
  if (withShare) headers.push(shareLabel);
  const t = table(headers, rows, 1, items.slice(0, limit).map((k) => String(k.name ?? "")));
  const listed = items;
  [...t.tBodies[0].rows].forEach((tr, i) => {
    tr.dataset.top = `${id}:${i}`;
    const label = `show every ${listed[i].label || listed[i].name || ""} on the timeline, zoomed to the longest`;
    if (pick) pickable(tr, label, () => pick(i, tr));
  });
  section.appendChild(t);
  return section;
}

/**
 * @param {RankReport} rank one of the report's ranks
 * @param {boolean} multi whether the job has several ranks
 * @param {((pick: NamePick) => void) | undefined} onSelectName
 */
function rankSection(rank, multi, onSelectName) {
  const box = node("div", "gp-rank");
  const devices = (rank.devices || []).map((d) => (d && d.name) || "").filter(Boolean);
  const title = [multi ? `rank ${rank.rank}` : null, devices.join(", ") || null]
    .filter(Boolean)
    .join(" · ");
  if (title) box.appendChild(node("div", "gp-rank-title", title));

  const stats = node("div", "gp-stats");
  /**
   * @param {string} label
   * @param {string} value
   * @param {string} [extra]
   * @param {string} [title]
   */
  const stat = (label, value, extra, title) => {
    const s = node("div", "gp-stat");
    s.dataset.stat = label;
    if (title) s.title = title;
    s.appendChild(node("span", "gp-stat-label", label));
    s.appendChild(node("span", "gp-stat-value", value));
    if (extra) s.appendChild(node("span", "gp-stat-extra", extra));
    stats.appendChild(s);
  };
  if (Number.isFinite(Number(rank.wall_ns))) {
    const why =
      "From the first to the last event recorded on this rank. The time the live panel shows " +
      "is the cell's whole run, the profiler's own start and stop included.";
    stat("wall", formatTime(rank.wall_ns), "first to last event", why);
  }
  const gpu = rank.gpu;
  if (gpu) {
    stat("GPU window", formatTime(gpu.window_ns));
    stat("busy", formatTime(gpu.busy_ns), formatPercent(gpu.busy_pct));
    stat("idle", formatTime(gpu.idle_ns), formatFraction(ratio(gpu.idle_ns, gpu.window_ns)));
    if (gpu.compute_ns != null) stat("compute", formatTime(gpu.compute_ns));
    if (gpu.non_compute_ns != null) stat("non-compute", formatTime(gpu.non_compute_ns));
  } else {
    stat("GPU:", "no activity recorded");
  }
  box.appendChild(stats);

  const tops = node("div", "gp-tops");
  // A chosen row is marked (one at a time in the whole summary) and handed to onSelectName.
  /**
   * @param {"kernels" | "ops"} table
   * @param {TopItem[]} items
   */
  const choose = (table, items) => ({
    id: `${table}:${rank.rank}`,
    pick: typeof onSelectName === "function"
      ? (/** @type {number} */ i, /** @type {HTMLTableRowElement} */ tr) => {
        const root = /** @type {HTMLElement | null} */ (tr.closest(".gp-summary"));
        for (const other of root ? root.querySelectorAll(".gp-top-selected") : []) other.classList.remove("gp-top-selected");
        tr.classList.add("gp-top-selected");
        if (root) root.dataset.selectedTop = tr.dataset.top;
        onSelectName({ table, name: String(items[i].name ?? ""), rank: rank.rank });
      }
      : null,
  });
  tops.appendChild(topTable("Top kernels", rank.top_kernels, gpu && gpu.busy_ns, "% of busy", choose("kernels", rank.top_kernels)));
  tops.appendChild(topTable("Top ops", rank.top_ops, rank.wall_ns, "% of wall", choose("ops", rank.top_ops)));
  box.appendChild(tops);

  if (rank.copies && rank.copies.length) {
    const rows = rank.copies.map((/** @type {Copies} */ c) => [
      c.kind ?? "",
      formatCount(c.count),
      formatBytes(c.bytes),
      formatTime(c.total_ns),
      // From bytes and time: Python's gbps is rounded to 3 decimals (a slow copy's is 0).
      formatBytesPerS(ratio(c.bytes, c.total_ns, 1e9)),
    ]);
    const copies = node("div", "gp-top");
    copies.appendChild(node("div", "gp-subtitle", "Copies"));
    copies.appendChild(table(["kind", "count", "bytes", "total", "bandwidth"], rows));
    box.appendChild(copies);
  }
  return box;
}

/**
 * Build the summary element for a report dict (possibly empty). With hooks.onSelectName, a row
 * of the top kernels or top ops (click, Enter) calls it with {table: "kernels" | "ops", name,
 * rank}. For browser tests: each such row carries data-top ("kernels:rank:i"), the root
 * data-selected-top (the same, of the row chosen last).
 * @param {Report | null | undefined} summary
 * @param {{onSelectName?: (pick: NamePick) => void}} [hooks]
 */
export function renderSummary(summary, hooks = {}) {
  summary = summary || {};
  const root = node("div", "gp-summary");
  root.dataset.selectedTop = "";
  // What the program is (training or inference, engine, parallelism, execution, device), first:
  // the advice below was chosen by it. The line is worded once, in Python; the evidence opens.
  if (summary.workload_line) {
    const what = node("details", "gp-workload");
    what.appendChild(node("summary", "", summary.workload_line));
    const why = node("ul", "");
    for (const line of (summary.workload && summary.workload.evidence) || []) why.appendChild(node("li", "", line));
    what.appendChild(why);
    root.appendChild(what);
  }
  // What to know before trusting the numbers (the code raised, steps sampled, windows
  // dropped, part of the capture failed): the report words them once, for every view.
  for (const notice of summary.notices || []) {
    const banner = node("div", "gp-notice", `${String(notice.kind).toUpperCase()}: ${notice.text}`);
    banner.dataset.notice = String(notice.kind);
    root.appendChild(banner);
  }
  const counts = totalCounts(summary);
  const header = node("div", "gp-counts");
  for (const key of COUNT_KEYS) {
    const c = node("div", "gp-count");
    c.dataset.count = key;
    c.appendChild(node("span", "gp-count-value", formatCount(counts[key])));
    c.appendChild(node("span", "gp-count-label", key));
    header.appendChild(c);
  }
  const src = summary.source;
  if (src && src.path) {
    header.appendChild(node("div", "gp-source", `${src.path}${src.format ? ` (${src.format})` : ""}`));
  }
  root.appendChild(header);

  const ranks = summary.ranks || [];
  for (const rank of ranks) root.appendChild(rankSection(rank, ranks.length > 1, hooks.onSelectName));

  return root;
}

/**
 * The plain-text report, collapsed (for reading or copying), or null when there is none.
 * @param {Report | null | undefined} summary
 */
export function renderTextReport(summary) {
  if (!summary || !summary.text) return null;
  const details = node("details", "gp-text");
  details.appendChild(node("summary", "", "Text report"));
  details.appendChild(node("pre", "", summary.text));
  return details;
}
