// @ts-check
// A multi-rank job as the widget shows it: which ranks the timeline lays out, the rank x step
// grid of compute / wait / bubble (report.distributed.steps), the straggler
// (report.distributed.stragglers[0]) and one collective instance on every rank (the kernel's
// "collective" reply). Numbers come from Python; this only arranges and spells them (format.js).
// No DOM; unit-tested.

import { formatFraction, formatInstant, formatTime, num } from "./format.js";

/** @typedef {import("./lanes.js").Lane} Lane */
/**
 * One cell of the rank x step grid: shares of the step's window (0..1, null when unknown).
 * @typedef {{rank: number, step: number | null, compute: number | null, wait: number | null,
 *   bubble: number | null, computeNs: number | null, waitNs: number | null, windowNs: number | null,
 *   text: string, title: string}} StepCell
 */
/**
 * The grid: ranks (rows), steps (columns: their label and window), cells[row][column], the mean
 * per rank, how many steps there are in all, and the straggler's rank (or null).
 * @typedef {{ranks: number[], steps: {step: number | null, label: string, windowNs: number | null}[],
 *   cells: StepCell[][], means: StepCell[], totalSteps: number, straggler: number | null,
 *   clock: string}} RankStepGrid
 */
/**
 * A rank's part in one collective instance, as Python sends it (widget/collectives.py).
 * @typedef {{rank: number, id: number, lane: number, row?: number, start_ns: number | null,
 *   dur_ns: number | null, arrival_ns: number, end_ns: number, wait_ns: number, last: boolean}} CollectiveRank
 */
/**
 * @typedef {{instance: number, group: string, name: string, bytes: number, last_rank: number | null,
 *   max_wait_ns: number, ranks: CollectiveRank[]}} CollectiveInfo
 */

/** A job of more ranks than this starts with every rank collapsed to one row. */
export const RANKS_COLLAPSED_OVER = 8;

/**
 * The ranks a timeline starts with collapsed: all of them past RANKS_COLLAPSED_OVER (one row
 * per rank reads as the job's picture), else none.
 * @param {number[]} ranks
 * @returns {number[]}
 */
export function initiallyCollapsed(ranks) {
  return ranks.length > RANKS_COLLAPSED_OVER ? [...ranks] : [];
}

/** More steps than this: the grid shows the first ones and the mean of all. */
export const MAX_STEP_COLUMNS = 24;

/**
 * The distinct ranks of the lanes, in display order.
 * @param {Lane[]} lanes
 * @returns {number[]}
 */
export function laneRanks(lanes) {
  /** @type {number[]} */
  const out = [];
  const seen = new Set();
  for (const lane of lanes) {
    const r = lane.rank;
    if (typeof r === "number" && !seen.has(r)) {
      seen.add(r);
      out.push(r);
    }
  }
  return out;
}

/**
 * The straggler to mark: the first of report.distributed.stragglers when it caused any wait.
 * @param {any} summary the report
 * @returns {{rank: number, waitCausedNs: number, arrivedLast: number | null, cause: string} | null}
 */
export function stragglerOf(summary) {
  const first = summary?.distributed?.stragglers?.[0];
  const rank = num(first?.rank);
  const caused = num(first?.wait_caused_ns);
  if (rank === null || caused === null || caused <= 0) return null;
  const cause = first.cause;
  return {
    rank,
    waitCausedNs: caused,
    arrivedLast: num(first.arrived_last),
    cause: typeof cause === "string" ? cause : cause == null ? "" : JSON.stringify(cause),
  };
}

/**
 * @param {number | null} part
 * @param {number | null} whole
 */
function share(part, whole) {
  return part === null || whole === null || !(whole > 0) ? null : Math.min(1, Math.max(0, part / whole));
}

/**
 * @param {number} rank
 * @param {number | null} step
 * @param {number | null} computeNs
 * @param {number | null} waitNs
 * @param {number | null} windowNs
 * @param {number | null} bubble
 * @returns {StepCell}
 */
function cell(rank, step, computeNs, waitNs, windowNs, bubble) {
  const compute = share(computeNs, windowNs);
  const wait = share(waitNs, windowNs);
  const b = bubble === null ? (compute === null ? null : 1 - compute) : Math.min(1, Math.max(0, bubble));
  const where = step === null ? `rank ${rank}` : `rank ${rank}, step ${step}`;
  return {
    rank,
    step,
    compute,
    wait,
    bubble: b,
    computeNs,
    waitNs,
    windowNs,
    text: `${formatFraction(compute, 0)} / ${formatFraction(wait, 0)} / ${formatFraction(b, 0)}`,
    title: `${where}: compute ${formatFraction(compute)} (${formatTime(computeNs)}), ` +
      `wait ${formatFraction(wait)} (${formatTime(waitNs)}), bubble ${formatFraction(b)} of ${formatTime(windowNs)}`,
  };
}

/**
 * The rank x step grid of report.distributed.steps (null for a one-rank report or none given):
 * per rank and step the compute, wait and bubble shares of the step's window, the first
 * `maxSteps` steps as columns, and per rank the mean over all steps (times summed, shares of
 * the summed windows; the bubble the mean of the steps' bubble fractions, as the report's).
 * @param {any} summary the report
 * @param {number} [maxSteps]
 * @returns {RankStepGrid | null}
 */
export function rankStepGrid(summary, maxSteps = MAX_STEP_COLUMNS) {
  const job = summary?.distributed;
  /** @type {any[]} */
  const steps = Array.isArray(job?.steps) ? job.steps : [];
  if (!job || !steps.length) return null;
  /** @type {Set<number>} */
  const rankSet = new Set();
  for (const s of steps) for (const r of s?.ranks ?? []) if (num(r?.rank) !== null) rankSet.add(Number(r.rank));
  for (const r of job.ranks_present ?? []) if (num(r) !== null) rankSet.add(Number(r));
  const ranks = [...rankSet].sort((a, b) => a - b);
  const shown = steps.slice(0, maxSteps);
  const columns = shown.map((/** @type {any} */ s) => {
    const step = num(s?.step);
    const start = num(s?.start_ns);
    const end = num(s?.end_ns);
    return { step, label: step === null ? "trace" : `step ${step}`, windowNs: start === null || end === null ? null : end - start };
  });
  /** @type {Map<number, {compute: number, wait: number, window: number, bubble: number, n: number, known: boolean}>} */
  const totals = new Map(ranks.map((r) => [r, { compute: 0, wait: 0, window: 0, bubble: 0, n: 0, known: true }]));
  /** @type {Map<number, Map<number, any>>} per step index: rank -> its row */
  const byStep = new Map();
  steps.forEach((/** @type {any} */ s, /** @type {number} */ i) => {
    /** @type {Map<number, any>} */
    const rows = new Map();
    for (const r of s?.ranks ?? []) if (num(r?.rank) !== null) rows.set(Number(r.rank), r);
    byStep.set(i, rows);
    const start = num(s?.start_ns);
    const end = num(s?.end_ns);
    for (const rank of ranks) {
      const t = /** @type {NonNullable<ReturnType<typeof totals.get>>} */ (totals.get(rank));
      const row = rows.get(rank);
      const c = num(row?.compute_ns);
      const w = num(row?.wait_ns);
      const b = num(row?.bubble_fraction);
      if (!row || c === null || w === null || b === null || start === null || end === null) {
        t.known = false;
        continue;
      }
      t.compute += c;
      t.wait += w;
      t.window += end - start;
      t.bubble += b;
      t.n += 1;
    }
  });
  const cells = ranks.map((rank) =>
    columns.map((col, i) => {
      const row = /** @type {Map<number, any>} */ (byStep.get(i)).get(rank);
      return cell(rank, col.step, num(row?.compute_ns), num(row?.wait_ns), col.windowNs, num(row?.bubble_fraction));
    }),
  );
  const means = ranks.map((rank) => {
    const t = /** @type {NonNullable<ReturnType<typeof totals.get>>} */ (totals.get(rank));
    return t.n
      ? cell(rank, null, t.compute, t.wait, t.window, t.bubble / t.n)
      : cell(rank, null, null, null, null, null);
  });
  const straggler = stragglerOf(summary);
  const clock = job.clock ?? {};
  const residual = num(clock.residual_ns);
  return {
    ranks,
    steps: columns,
    cells,
    means,
    totalSteps: steps.length,
    straggler: straggler ? straggler.rank : null,
    clock: `clocks: ${clock.method ?? "unknown"}${residual === null ? "" : `, residual ${formatTime(residual)}`}`,
  };
}

/**
 * One collective instance as the details panel lists it: a heading, and per rank (by rank) its
 * arrival, wait and whether it came last, with the event to jump to (null when the rank's event
 * is not on the timeline).
 * @param {CollectiveInfo | null | undefined} info
 */
export function collectiveRows(info) {
  if (!info || !Array.isArray(info.ranks) || !info.ranks.length) return null;
  const ranks = [...info.ranks].sort((a, b) => a.rank - b.rank);
  const firstArrival = Math.min(...ranks.map((r) => Number(r.arrival_ns)));
  const lastRank = num(info.last_rank);
  const group = info.group ? ` in ${info.group}` : "";
  return {
    heading: `${info.name}${group}: ${ranks.length} ranks` +
      (lastRank === null ? "" : `; rank ${lastRank} arrived last, ${formatTime(info.max_wait_ns)} after the first`),
    rows: ranks.map((r) => ({
      rank: r.rank,
      last: Boolean(r.last),
      text: `rank ${r.rank}${r.last ? " (last)" : ""}`,
      meta: `arrived ${formatInstant(r.arrival_ns)} (+${formatTime(Number(r.arrival_ns) - firstArrival)}) · waited ${formatTime(r.wait_ns)}`,
      ev: r.id >= 0 && r.start_ns !== null && r.dur_ns !== null
        ? { id: r.id, lane: r.lane, row: r.row ?? 0, start_ns: r.start_ns, dur_ns: r.dur_ns }
        : null,
    })),
  };
}

/**
 * The links the timeline draws for a collective instance: from each rank's event to the event of
 * the rank that arrived last (the one they waited for), or, with no last rank known, between
 * consecutive ranks.
 * @param {CollectiveInfo | null | undefined} info
 * @returns {[import("./source.js").EventRef, import("./source.js").EventRef][]}
 */
export function collectiveLinks(info) {
  const rows = collectiveRows(info);
  if (!rows) return [];
  const evs = rows.rows.filter((r) => r.ev).map((r) => ({ ...r, ev: /** @type {import("./source.js").EventRef} */ (r.ev) }));
  const last = evs.find((r) => r.last);
  /** @type {[import("./source.js").EventRef, import("./source.js").EventRef][]} */
  const out = [];
  if (last) {
    for (const r of evs) if (r !== last) out.push([r.ev, last.ev]);
  } else {
    for (let i = 1; i < evs.length; i++) out.push([evs[i - 1].ev, evs[i].ev]);
  }
  return out;
}
