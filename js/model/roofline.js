// @ts-check
// The roofline panel's pure parts: which hints name a point, points by key or index, the share
// of time without a FLOP count, and a point's numbers as rows. The chart's geometry (roofs,
// ridges, axes, which points are plotted, label places) is not here: Python lays it out once
// (gpuprofile/report/roofline_layout.py) and js/views/roofline.js draws it as given.

import {
  formatBytes,
  formatBytesPerS,
  formatCount,
  formatFlops,
  formatFlopsPerS,
  formatIntensity,
  formatPercent,
  formatTime,
  num,
} from "./format.js";

/**
 * A point of report.roofline.points (report_types.d.ts, generated from the Python Structs);
 * every field optional, as points built by hand and older saved reports may lack some.
 * @typedef {Partial<import("./report_types.js").RooflinePoint>} RooflinePoint
 */
/** @typedef {[number, number]} Pair an [x, y] point in px */
/**
 * The chart laid out by Python (summary.roofline_layout; report/roofline_layout.py, typed in
 * report_types.d.ts by the generator): px of a width x height chart; points at the indexes of
 * report["roofline"]["points"]. Label: a label as SVG draws it.
 * @typedef {import("./report_types.js").RooflineLayout} RooflineLayout
 * @typedef {import("./report_types.js").Label} Label
 */

/**
 * Indexes of the hints whose `related` lists this point key.
 * @param {({related?: unknown} | null | undefined)[] | null | undefined} hints
 * @param {string | null | undefined} key
 * @returns {number[]}
 */
export function hintsForPoint(hints, key) {
  /** @type {number[]} */
  const out = [];
  (hints || []).forEach((h, i) => {
    if (key && h && Array.isArray(h.related) && h.related.includes(key)) out.push(i);
  });
  return out;
}

/**
 * Point indexes from a mix of indexes and keys (unknown keys and bad indexes dropped).
 * @param {(RooflinePoint | null | undefined)[] | null | undefined} points
 * @param {Iterable<unknown> | null | undefined} keysOrIndexes
 * @returns {number[]}
 */
export function resolvePoints(points, keysOrIndexes) {
  /** @type {Map<unknown, number>} */
  const byKey = new Map();
  (points || []).forEach((p, i) => {
    if (p && p.key != null && !byKey.has(p.key)) byKey.set(p.key, i);
  });
  /** @type {Set<number>} */
  const out = new Set();
  for (const k of keysOrIndexes || []) {
    if (typeof k === "number") {
      if (Number.isInteger(k) && k >= 0 && k < (points || []).length) out.add(k);
    } else {
      const i = byKey.get(k);
      if (i !== undefined) out.add(i);
    }
  }
  return [...out].sort((a, b) => a - b);
}

/**
 * Share of time with no FLOP count, from report["roofline"]["coverage"]. Today the report
 * carries the covered share as a number (0..1); an object form {known_share | covered | share}
 * or {unknown_share} is read too. null when absent.
 * @param {unknown} coverage
 * @returns {number | null}
 */
export function uncoveredShare(coverage) {
  if (coverage && typeof coverage === "object") {
    const c = /** @type {Record<string, unknown>} */ (coverage);
    const unknown = num(c.unknown_share ?? c.uncovered);
    if (unknown !== null) return Math.min(1, Math.max(0, unknown));
    coverage = c.known_share ?? c.covered ?? c.share ?? c.coverage;
  }
  const known = num(coverage);
  return known === null ? null : Math.min(1, Math.max(0, 1 - known));
}

/**
 * A point's numbers as [label, text] rows, for its hover card and its details box. Unknown
 * numbers print as "–"; rows that make no sense for the point (shapes of a kernel) are left out.
 * @param {RooflinePoint} p
 * @param {string | null} [note] the layout's sentence for the point (above the DRAM roof)
 * @returns {[string, string][]}
 */
export function pointFacts(p, note) {
  /** @type {[string, string][]} */
  const rows = [];
  /**
   * @param {string} label
   * @param {string} text
   */
  const add = (label, text) => rows.push([label, text]);
  add("level", String(p.level ?? "–"));
  if (p.shapes) add("shapes", String(p.shapes));
  if (p.rank !== null && p.rank !== undefined) add("rank", String(p.rank));
  add("count", formatCount(p.count));
  add("time", formatTime(p.time_ns));
  const source = p.flops_source && p.flops_source !== "unknown" ? ` (${p.flops_source})` : "";
  add("FLOPs", `${formatFlops(p.flops)}${source}`);
  add("bytes", formatBytes(p.bytes));
  add("intensity", formatIntensity(p.intensity));
  const attainable = num(p.attainable_flops_per_s);
  add(
    "achieved",
    attainable === null
      ? formatFlopsPerS(p.achieved_flops_per_s)
      : `${formatFlopsPerS(p.achieved_flops_per_s)} of ${formatFlopsPerS(attainable)} attainable`,
  );
  add("bandwidth", formatBytesPerS(p.achieved_bytes_per_s));
  add("% of roof", formatPercent(p.pct_of_roof));
  if (note) add("above the roof", note);
  add("saved at the roof", formatTime(p.saved_ns));
  const bound = p.bound === "memory" || p.bound === "compute" ? p.bound : "unknown";
  add("bound", bound === "unknown" ? "unknown" : `${bound} (${p.roof ?? "–"} roof)`);
  if (p.precision) add("precision", `${p.precision}${p.tensor_cores ? ", tensor cores" : ""}`);
  return rows;
}
