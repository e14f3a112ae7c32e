// @ts-check
// A profile against its baseline, as the widget shows it: report.baseline is the diff
// (gpuprofile.diff/1, a: the baseline, b: this profile). This arranges it into before/after bars,
// the kernels and ops that moved most, and the hints fixed / new / kept, and spells the numbers
// (format.js). No DOM; unit-tested.

import { formatCount, formatDeltaTime, formatSI, formatTime, num } from "./format.js";

/** @typedef {import("./report_types.js").DiffChange} DiffChange */
/** @typedef {import("./report_types.js").DiffIdleChange} DiffIdleChange */
/** @typedef {import("./report_types.js").DiffRow} DiffRow */
/** @typedef {import("./report_types.js").DiffRun} DiffRun */

/**
 * One before/after bar: widths are shares (0..1) of the larger of the two; tone says whether
 * the time grew ("worse"), shrank ("better") or stayed ("").
 * @typedef {{key: string, label: string, a: number | null, b: number | null, aWidth: number,
 *   bWidth: number, aText: string, bText: string, deltaText: string, ratioText: string,
 *   tone: string}} Bar
 */
/**
 * One row of a delta table (kernels or ops).
 * @typedef {{name: string, matched: string, aText: string, bText: string, deltaText: string,
 *   countText: string, delta: number, tone: string}} DeltaRow
 */
/**
 * One hint with its mark.
 * @typedef {{group: "fixed" | "new" | "kept" | "unjudged", kind: string, title: string, gainText: string}} HintMark
 */
/**
 * @typedef {{baseline: string, bars: Bar[], kernels: DeltaRow[], ops: DeltaRow[],
 *   kernelsTotal: number, opsTotal: number, hints: HintMark[],
 *   counts: {fixed: number, new: number, kept: number, unjudged: number}, notes: string[],
 *   noise: {verdict: string, text: string} | null}} BaselineView
 */

/** Rows of each delta table shown (the diff sorts them by |delta|). */
export const TOP_ROWS = 8;
const SUMMARY_BARS = /** @type {const} */ ([
  ["wall_ns", "wall"],
  ["busy_ns", "GPU busy"],
  ["idle_ns", "GPU idle"],
  ["step_ns", "step (median)"],
]);
// unjudged: hints of a that b's run cannot judge (another vendor labels what they read
// differently): never "fixed".
const GROUPS = /** @type {const} */ (["fixed", "new", "kept", "unjudged"]);

/**
 * @param {unknown} delta
 * @returns {string}
 */
function tone(delta) {
  const d = num(delta);
  // Every figure here is a duration: more of it is worse.
  return d === null || d === 0 ? "" : d > 0 ? "worse" : "better";
}

/**
 * @param {string} key
 * @param {string} label
 * @param {DiffChange | DiffIdleChange} change a step's change is a DiffChange and more
 * @returns {Bar}
 */
function bar(key, label, change) {
  const a = num(change.a);
  const b = num(change.b);
  const top = Math.max(a ?? 0, b ?? 0);
  const ratio = "ratio" in change ? num(change.ratio) : null; // an idle cause has none
  return {
    key,
    label,
    a,
    b,
    aWidth: top > 0 ? (a ?? 0) / top : 0,
    bWidth: top > 0 ? (b ?? 0) / top : 0,
    aText: formatTime(a),
    bText: formatTime(b),
    deltaText: formatDeltaTime(change.delta),
    ratioText: ratio === null ? "" : `${formatSI(ratio)}x`,
    tone: tone(change.delta),
  };
}

/**
 * @param {DiffRow[]} rows the diff's kernels or ops
 * @returns {DeltaRow[]}
 */
function deltaRows(rows) {
  return rows
    .filter((r) => num(r.delta_ns))
    .slice(0, TOP_ROWS)
    .map((r) => ({
      name: r.name,
      // Matched by position (another vendor or library): b's own name; else only in a / b.
      matched: r.matched_by === "position" ? (r.b_name ?? "") : r.matched_by === "name" ? "" : r.matched_by,
      aText: formatTime(r.a_ns),
      bText: formatTime(r.b_ns),
      deltaText: formatDeltaTime(r.delta_ns),
      countText: `${formatCount(r.a_count)} → ${formatCount(r.b_count)}`,
      delta: Number(r.delta_ns),
      tone: tone(r.delta_ns),
    }));
}

/**
 * A recorded run as the history names it: "run 1a2b3c4d (label)"; "" when not recorded.
 * @param {DiffRun | null | undefined} side the diff's a or b
 * @returns {string}
 */
export function runName(side) {
  const run = side?.run;
  if (!run || !run.id) return "";
  return `run ${run.id}${run.label ? ` (${run.label})` : ""}`;
}

/**
 * The baseline panel's content, or null when the report holds no baseline.
 * @param {import("./report_types.js").Summary | null | undefined} summary the summary trait
 * @returns {BaselineView | null}
 */
export function baselineView(summary) {
  // The diff document (gpuprofile.diff/1, typed from report/diff_schema.py).
  const diff = summary?.baseline;
  if (!diff || !diff.summary) return null;
  const s = diff.summary;
  const bars = [];
  for (const [key, label] of SUMMARY_BARS) {
    const change = s[key];
    if (change) bars.push(bar(key, label, change));
  }
  for (const [cause, change] of Object.entries(s.idle_by_cause || {})) {
    if (num(change.a) || num(change.b)) bars.push(bar(`idle:${cause}`, `idle: ${cause}`, change));
  }
  /** @type {HintMark[]} */
  const hints = [];
  const counts = { fixed: 0, new: 0, kept: 0, unjudged: 0 };
  for (const group of GROUPS) {
    const entries = diff.hints?.[group] ?? [];
    counts[group] = entries.length;
    for (const e of entries) {
      hints.push({
        group,
        kind: e.kind,
        title: e.title,
        gainText: `gain ${formatTime(e.a_gain_ns)} → ${formatTime(e.b_gain_ns)}`,
      });
    }
  }
  const a = diff.a;
  const kernels = diff.kernels ?? [];
  const ops = diff.ops ?? [];
  return {
    baseline: `${[runName(a), a?.path].filter(Boolean).join(", ") || "a capture"}${a?.format ? ` (${a.format})` : ""}`,
    bars,
    kernels: deltaRows(kernels),
    ops: deltaRows(ops),
    kernelsTotal: kernels.length,
    opsTotal: ops.length,
    hints,
    counts,
    notes: diff.notes ?? [],
    // Python words the verdict once (report/diff_text.py step_noise_view); shown as given.
    noise: noiseOf(summary?.step_noise),
  };
}

/**
 * The widget data's step verdict and sentence, or null.
 * @param {import("./report_types.js").StepNoise | null | undefined} noise summary.step_noise
 * @returns {{verdict: string, text: string} | null}
 */
function noiseOf(noise) {
  if (!noise || typeof noise.text !== "string") return null;
  return { verdict: String(noise.verdict ?? ""), text: noise.text };
}
