// @ts-check
// Roofline geometry, without the DOM: log-log scales, decade ticks, the roofs of a Hardware
// (report["hardware"]) as polylines with their ridge points, which points can be drawn, their
// radius by time and their class by bound. Unit-tested; js/views/roofline.js draws the result.
//
// Units: x = arithmetic intensity (FLOP/byte), y = FLOP/s. The memory roof is y = bandwidth * x;
// a compute roof is y = peak; they meet at the ridge, x = peak / bandwidth.

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
/**
 * report.hardware: the roofs (DRAM bandwidth, peak FLOP/s per precision) and their source.
 * @typedef {Partial<import("./report_types.js").HardwareRoofs>} Hardware
 */
/** @typedef {{key: string, precisions: string[], peak: number, ridge: number | null}} ComputeRoof */
/** @typedef {[number, number]} Pair a [lo, hi] domain, or an [x, y] point in data space */

/**
 * A log10 scale from [d0, d1] (positive) onto [r0, r1] pixels; r1 < r0 flips the axis.
 * @param {Pair} domain
 * @param {Pair} range
 */
export function logScale(domain, range) {
  const [d0, d1] = domain;
  const [r0, r1] = range;
  const l0 = Math.log10(d0);
  const span = Math.log10(d1) - l0 || 1;
  return {
    domain: [d0, d1],
    range: [r0, r1],
    /** @param {number} v */
    map: (v) => r0 + ((Math.log10(v) - l0) / span) * (r1 - r0),
    /** @param {number} px */
    invert: (px) => 10 ** (l0 + ((px - r0) / (r1 - r0)) * span),
  };
}

/**
 * The powers of ten in [lo, hi], as {value, exp}.
 * @param {number} lo
 * @param {number} hi
 * @returns {{value: number, exp: number}[]}
 */
export function decadeTicks(lo, hi) {
  if (!(lo > 0) || !(hi >= lo)) return [];
  const ticks = [];
  // A hair of tolerance so 1e3 computed as 999.9999 still counts as inside.
  for (let e = Math.ceil(Math.log10(lo) - 1e-9); e <= Math.floor(Math.log10(hi) + 1e-9); e++) {
    ticks.push({ value: 10 ** e, exp: e });
  }
  return ticks;
}

const SUPERSCRIPT = Object.fromEntries([..."-0123456789"].map((c, i) => [c, "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"[i]]));

/**
 * x-axis label: plain decimals from 0.001 to 10000, else 10 with a superscript exponent.
 * @param {number} exp
 * @returns {string}
 */
export function intensityTickLabel(exp) {
  if (exp >= -3 && exp <= 4) return exp < 0 ? (10 ** exp).toFixed(-exp) : String(10 ** exp);
  return `10${[...String(exp)].map((c) => SUPERSCRIPT[c]).join("")}`;
}

/**
 * y-axis label: an SI-prefixed FLOP/s ("1 TFLOP/s", "100 GFLOP/s").
 * @param {number} exp
 * @returns {string}
 */
export function flopsTickLabel(exp) {
  return formatFlopsPerS(10 ** exp).replace(/\.0+(?= )/, "");
}

/**
 * Whether a point can sit on log-log axes, and if not, why (for the "not plotted" list).
 * @param {RooflinePoint | null | undefined} point
 * @returns {{plotted: boolean, reason: string}}
 */
export function plotStatus(point) {
  const flops = num(point && point.flops);
  const bytes = num(point && point.bytes);
  const intensity = num(point && point.intensity);
  const achieved = num(point && point.achieved_flops_per_s);
  if (flops === null) return { plotted: false, reason: "no FLOP count" };
  if (bytes === null) return { plotted: false, reason: "no byte count" };
  if (flops === 0) return { plotted: false, reason: "0 FLOPs (data movement only)" };
  if (bytes === 0) return { plotted: false, reason: "0 bytes" };
  if (intensity === null || intensity <= 0) return { plotted: false, reason: "no intensity" };
  if (achieved === null || achieved <= 0) return { plotted: false, reason: "no measured time" };
  return { plotted: true, reason: "" };
}

/**
 * Why no point can go on the chart, in one line (the chart is then left out), or null when
 * some point can.
 * @param {(RooflinePoint | null | undefined)[] | null | undefined} points
 * @param {{plotted: boolean}[]} [statuses] plotStatus of each point, when already computed
 * @param {string | null} [missingFlops] what the trace's format lacks for FLOPs
 *     (report.roofline.missing_flops)
 * @returns {string | null}
 */
export function emptyChartReason(points, statuses, missingFlops) {
  const all = points || [];
  const status = statuses ?? all.map(plotStatus);
  if (status.some((st) => st.plotted)) return null;
  const why = `(${missingFlops || "FLOPs need recorded input shapes and an op with a known formula"})`;
  // Without kernels, only ops with a FLOP count are points: none means none has one.
  if (!all.length) return `Nothing to plot: no op or kernel has a FLOP count ${why}.`;
  const n = `${all.length === 1 ? "the one op or kernel" : `the ${formatCount(all.length)} ops and kernels`} in the report`;
  if (!all.some((p) => (num(p && p.flops) ?? 0) > 0)) return `Nothing to plot: none of ${n} has a FLOP count ${why}.`;
  return `Nothing to plot: of ${n}, those with a FLOP count have no byte count or no measured time.`;
}

/**
 * The roofs to draw from report["hardware"]: the memory roof (DRAM bandwidth) and one compute
 * roof per distinct peak, precisions with equal peaks sharing a line ("fp16/bf16"), lowest peak
 * first. `ridge` is null without bandwidth. `complete` says both kinds of roof are there;
 * `missing` says in words what is not.
 * @param {Hardware | null | undefined} hardware
 * @returns {{memory: {bandwidth: number} | null, compute: ComputeRoof[], complete: boolean, missing: string[]}}
 */
export function roofsOf(hardware) {
  /** @type {Hardware} */
  const hw = hardware || {};
  const bandwidth = num(hw.dram_bytes_per_s);
  const memory = bandwidth !== null && bandwidth > 0 ? { bandwidth } : null;
  /** @type {Map<number, string[]>} */
  const byPeak = new Map();
  for (const [precision, value] of Object.entries(hw.peak_flops || {})) {
    const peak = num(value);
    if (peak === null || peak <= 0) continue;
    let precisions = byPeak.get(peak);
    if (!precisions) byPeak.set(peak, (precisions = []));
    precisions.push(precision);
  }
  const compute = [...byPeak.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([peak, precisions]) => ({
      key: precisions.join("/"),
      precisions,
      peak,
      ridge: memory ? peak / memory.bandwidth : null,
    }));
  const unknownSource = hw.source === "unknown" || hw.source === undefined;
  const missing = [];
  if (unknownSource) missing.push("the hardware is unknown");
  else {
    if (!memory) missing.push("no DRAM bandwidth");
    if (!compute.length) missing.push("no peak FLOP/s");
  }
  return {
    memory: unknownSource ? null : memory,
    compute: unknownSource ? [] : compute,
    complete: !missing.length,
    missing,
  };
}

/**
 * One roof as a polyline in data space, clipped to the domains: up the memory slope from where
 * it enters the plot to the ridge, then flat to the right edge. Without bandwidth: flat only.
 * Returns [] when the roof lies outside the plot.
 * @param {number} peak
 * @param {number | null | undefined} bandwidth
 * @param {Pair} xDomain
 * @param {Pair} yDomain
 * @returns {Pair[]}
 */
export function roofPolyline(peak, bandwidth, xDomain, yDomain) {
  const [x0, x1] = xDomain;
  const [y0, y1] = yDomain;
  if (!(peak > 0)) return [];
  if (!bandwidth || !(bandwidth > 0)) return peak >= y0 && peak <= y1 ? [[x0, peak], [x1, peak]] : [];
  const ridge = peak / bandwidth;
  /** @type {Pair[]} */
  const out = [];
  // The slope enters at the left edge or the bottom and leaves at the ridge, the right edge or
  // the top, whichever comes first.
  const slopeStart = Math.max(x0, y0 / bandwidth);
  const slopeEnd = Math.min(ridge, x1, y1 / bandwidth);
  if (slopeStart < slopeEnd) {
    // At the ridge the slope's height is the peak; bandwidth * (peak / bandwidth) may not be.
    const yEnd = slopeEnd === ridge ? peak : bandwidth * slopeEnd;
    out.push([slopeStart, bandwidth * slopeStart], [slopeEnd, yEnd]);
  }
  if (peak >= y0 && peak <= y1 && ridge < x1) {
    const flatStart = Math.max(ridge, x0);
    if (!(out.length && out[out.length - 1][0] === flatStart)) out.push([flatStart, peak]);
    out.push([x1, peak]);
  }
  return out;
}

/**
 * The memory roof alone (no compute roof known): the slope across the whole x domain, clipped
 * to the y domain.
 * @param {number} bandwidth
 * @param {Pair} xDomain
 * @param {Pair} yDomain
 * @returns {Pair[]}
 */
export function memoryPolyline(bandwidth, xDomain, yDomain) {
  const [x0, x1] = xDomain;
  const [y0, y1] = yDomain;
  if (!(bandwidth > 0)) return [];
  const a = Math.max(x0, y0 / bandwidth);
  const b = Math.min(x1, y1 / bandwidth);
  return a < b ? [[a, bandwidth * a], [b, bandwidth * b]] : [];
}

/**
 * [lo, hi] widened to whole decades, at least `minDecades` wide (grown around the middle).
 * @param {number[]} values
 * @param {number} [minDecades]
 * @returns {Pair}
 */
export function decadeDomain(values, minDecades = 2) {
  const finite = values.filter((v) => Number.isFinite(v) && v > 0);
  if (!finite.length) return [10 ** 0, 10 ** minDecades];
  let lo = Math.floor(Math.log10(Math.min(...finite)) + 1e-9);
  let hi = Math.ceil(Math.log10(Math.max(...finite)) - 1e-9);
  if (hi === lo) hi += 1;
  while (hi - lo < minDecades) {
    if ((hi - lo) % 2 === 0) hi += 1;
    else lo -= 1;
  }
  return [10 ** lo, 10 ** hi];
}

/**
 * The plot's domains: every plotted point and every ridge inside, every roof's peak below the
 * top. Points' achieved FLOP/s bound the bottom (roofs never do: the slope is clipped there).
 * @param {RooflinePoint[] | null | undefined} points
 * @param {{compute?: ComputeRoof[]} | null | undefined} roofs
 * @returns {{x: Pair, y: Pair}}
 */
export function rooflineDomains(points, roofs) {
  /** @type {number[]} */
  const xs = [];
  /** @type {number[]} */
  const ys = [];
  for (const p of points || []) {
    if (!plotStatus(p).plotted) continue;
    xs.push(Number(p.intensity));
    ys.push(Number(p.achieved_flops_per_s));
  }
  for (const r of (roofs && roofs.compute) || []) {
    ys.push(r.peak);
    if (r.ridge !== null) xs.push(r.ridge);
  }
  return { x: decadeDomain(xs, 3), y: decadeDomain(ys, 3) };
}

/**
 * Radius in px by time: area proportional to time_ns, the heaviest at `rMax`, none smaller than
 * `rMin` so light points stay clickable.
 * @param {unknown} timeNs
 * @param {unknown} maxTimeNs
 * @param {number} [rMin]
 * @param {number} [rMax]
 * @returns {number}
 */
export function pointRadius(timeNs, maxTimeNs, rMin = 3, rMax = 16) {
  const t = num(timeNs);
  const m = num(maxTimeNs);
  if (t === null || m === null || m <= 0 || t <= 0) return rMin;
  return Math.max(rMin, rMax * Math.sqrt(Math.min(1, t / m)));
}

/**
 * "memory" | "compute" | "unknown" (anything else is unknown), for the point's CSS class.
 * @param {RooflinePoint | null | undefined} point
 * @returns {"memory" | "compute" | "unknown"}
 */
export function boundOf(point) {
  const b = point && point.bound;
  return b === "memory" || b === "compute" ? b : "unknown";
}

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

// A point above the DRAM roof (the text report says the same, report/text.py).
export const ABOVE_DRAM =
  "above DRAM bandwidth: caches served part of the traffic (minimal bytes are a lower bound, " +
  "and L2 can deliver more than DRAM bandwidth)";

/**
 * A point's numbers as [label, text] rows, for its hover card and its details box. Unknown
 * numbers print as "–"; rows that make no sense for the point (shapes of a kernel) are left out.
 * @param {RooflinePoint} p
 * @returns {[string, string][]}
 */
export function pointFacts(p) {
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
  const pct = num(p.pct_of_roof);
  if (pct !== null && pct > 100 && p.roof === "dram") add("above the roof", ABOVE_DRAM);
  add("saved at the roof", formatTime(p.saved_ns));
  const bound = boundOf(p);
  add("bound", bound === "unknown" ? "unknown" : `${bound} (${p.roof ?? "–"} roof)`);
  if (p.precision) add("precision", `${p.precision}${p.tensor_cores ? ", tensor cores" : ""}`);
  return rows;
}

/**
 * The levels ("op", "kernel", ...) of the plottable points, "op" first: the chart draws one at
 * a time. Points without a level count as "".
 * @param {RooflinePoint[] | null | undefined} points
 * @param {{plotted: boolean}[]} [statuses] plotStatus of each point, when already computed
 * @returns {string[]}
 */
export function levelsOf(points, statuses) {
  const all = points || [];
  const status = statuses ?? all.map(plotStatus);
  /** @type {Set<string>} */
  const seen = new Set();
  all.forEach((p, i) => {
    if (status[i].plotted) seen.add(p.level ?? "");
  });
  /** @param {string} l */
  const rank = (l) => (l === "op" ? 0 : l === "kernel" ? 1 : 2);
  return [...seen].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
}
