// @ts-check
// Every number the widget shows is spelt here: SI units, durations and points in time,
// percentages, counts, and the one-line readings of gauges and evidence. No DOM; unit-tested,
// and format.cases.json holds the plain cases that the Python text report (units.py) must
// spell alike.
//
// Unknown numbers (null, undefined, NaN, strings that are not numbers) print as "–" so a
// panel never shows a made-up 0.

export const UNKNOWN = "–";

/**
 * One entry of report["gauges"], as Python sends it (report_types.d.ts, generated from the
 * Structs); any field may be missing, as in older saved reports.
 * @typedef {Partial<import("./report_types.js").Gauge>} Gauge
 */

/** Where a roof's numbers come from (Hardware.source, or "trace" for device properties). */
export const ROOF_SOURCE_WORDS = {
  datasheet: "datasheet",
  calibrated: "measured",
  estimated: "estimated",
  user: "given by you",
  trace: "device properties in the trace",
  unknown: "unknown",
};

const SI_PREFIXES = [
  { exp: 15, prefix: "P" },
  { exp: 12, prefix: "T" },
  { exp: 9, prefix: "G" },
  { exp: 6, prefix: "M" },
  { exp: 3, prefix: "k" },
  { exp: 0, prefix: "" },
];

/**
 * A finite number from a report field, or null (null, undefined, "" and NaN are unknown).
 * @param {unknown} x
 * @returns {number | null}
 */
export function num(x) {
  if (x === null || x === undefined || x === "" || typeof x === "boolean") return null;
  const v = Number(x);
  return Number.isFinite(v) ? v : null;
}

/**
 * part / whole (times `scale`) when both are known and whole > 0, else null: a share or a rate
 * from report fields, unknown where either field is. ratio(bytes, total_ns, 1e9) is bytes/s.
 * @param {unknown} part
 * @param {unknown} whole
 * @param {number} [scale]
 * @returns {number | null}
 */
export function ratio(part, whole, scale = 1) {
  const p = num(part);
  const w = num(whole);
  return p === null || w === null || !(w > 0) ? null : (p / w) * scale;
}

/**
 * 3 significant digits without exponent notation: 3.35, 33.5, 335, 3350, 0.000000150. The
 * decimals follow the rounded value, so 99.95 reads "100" and 9.996 "10.0" (not "100.0", "10.00").
 * @param {number} v
 * @returns {string}
 */
function sig3(v) {
  const a = Math.abs(v);
  if (a === 0) return "0";
  if (a >= 100) return String(Math.round(v));
  if (a >= 10) {
    const s = v.toFixed(1);
    return Math.abs(Number(s)) >= 100 ? String(Math.round(v)) : s;
  }
  if (a >= 1) {
    const s = v.toFixed(2);
    return Math.abs(Number(s)) >= 10 ? v.toFixed(1) : s;
  }
  const s = v.toPrecision(3);
  const e = s.indexOf("e");
  if (e < 0) return s;
  // Below 1e-6 toPrecision switches to exponents: write the same digits out in full.
  const digits = 2 - Number(s.slice(e + 1));
  return digits <= 100 ? Number(s).toFixed(digits) : s;
}

/**
 * A value with an SI prefix on its unit, 3 significant digits: formatSI(3.35e12, "B/s") ->
 * "3.35 TB/s", formatSI(989.5e12, "FLOP/s") -> "990 TFLOP/s". Prefixes stop at P (larger
 * values keep P) and at none (smaller values print with 3 significant digits).
 * @param {unknown} x
 * @param {string} [unit]
 * @returns {string}
 */
export function formatSI(x, unit = "") {
  const v = num(x);
  if (v === null) return UNKNOWN;
  const a = Math.abs(v);
  let chosen = SI_PREFIXES[SI_PREFIXES.length - 1];
  for (const p of SI_PREFIXES) {
    // Round first, so 999.96e9 reads "1.00 T", not "1000 G".
    if (a > 0 && Number(sig3(a / 10 ** p.exp)) >= 1) {
      chosen = p;
      break;
    }
  }
  const scaled = v / 10 ** chosen.exp;
  const space = unit || chosen.prefix ? " " : "";
  return `${sig3(scaled)}${space}${chosen.prefix}${unit}`;
}

/** @param {unknown} b bytes */
export const formatBytes = (b) => formatSI(b, "B");
/** @param {unknown} b bytes per second */
export const formatBytesPerS = (b) => formatSI(b, "B/s");
/** @param {unknown} f FLOPs */
export const formatFlops = (f) => formatSI(f, "FLOP");
/** @param {unknown} f FLOP per second */
export const formatFlopsPerS = (f) => formatSI(f, "FLOP/s");

/**
 * FLOP per byte: "2.00 FLOP/B", "0.00463 FLOP/B".
 * @param {unknown} x
 * @returns {string}
 */
export function formatIntensity(x) {
  const v = num(x);
  return v === null ? UNKNOWN : `${sig3(v)} FLOP/B`;
}

/**
 * A percentage given in percent (47.4 -> "47.4%"); `digits` decimals.
 * @param {unknown} pct
 * @param {number} [digits]
 * @returns {string}
 */
export function formatPercent(pct, digits = 1) {
  const v = num(pct);
  return v === null ? UNKNOWN : `${v.toFixed(digits)}%`;
}

/**
 * A fraction as a percentage (0.474 -> "47.4%").
 * @param {unknown} f
 * @param {number} [digits]
 * @returns {string}
 */
export function formatFraction(f, digits = 1) {
  const v = num(f);
  return v === null ? UNKNOWN : formatPercent(v * 100, digits);
}

/**
 * An integer count with thousands separators: 12345 -> "12,345".
 * @param {unknown} n
 * @returns {string}
 */
export function formatCount(n) {
  const v = num(n);
  return v === null ? UNKNOWN : Math.round(v).toLocaleString("en-US");
}

/** @typedef {{ns: number, label: string}} TimeUnit */

/**
 * Time units, largest first: formatTime's, and through timeUnitFor the timeline axis's.
 * @type {TimeUnit[]}
 */
const TIME_UNITS = [
  { ns: 1e9, label: "s" },
  { ns: 1e6, label: "ms" },
  { ns: 1e3, label: "µs" },
  { ns: 1, label: "ns" },
];

/**
 * A duration in ns with 3 significant digits: "850 ns", "12.3 µs", "1.50 ms", "2.00 s".
 * @param {unknown} ns
 * @returns {string}
 */
export function formatTime(ns) {
  const v = num(ns);
  if (v === null) return UNKNOWN;
  if (v === 0) return "0 ns";
  const a = Math.abs(v);
  // Rounded first, so 999.96 µs reads "1.00 ms", not "1000 µs".
  const unit = TIME_UNITS.find((u) => Number(sig3(a / u.ns)) >= 1) || TIME_UNITS[3];
  if (unit.label === "ns") return `${Math.round(v)} ns`;
  return `${sig3(v / unit.ns)} ${unit.label}`;
}

/**
 * A change of duration in ns, signed: "+1.50 ms", "-850 ns", "0 ns" (as formatTime).
 * @param {unknown} ns
 * @returns {string}
 */
export function formatDeltaTime(ns) {
  const text = formatTime(ns);
  const v = num(ns);
  return v !== null && v > 0 && text !== "0 ns" ? `+${text}` : text;
}

/**
 * The time unit for a magnitude in ns: the largest whose size is <= it (ns at least).
 * @param {number} ns
 * @returns {TimeUnit}
 */
export function timeUnitFor(ns) {
  const a = Math.abs(ns);
  for (const u of TIME_UNITS) if (a >= u.ns) return u;
  return TIME_UNITS[TIME_UNITS.length - 1];
}

/**
 * Decimals (0 to 9) that tell apart times `step` ns apart when written in `unit`.
 * @param {TimeUnit} unit
 * @param {number} step
 * @returns {number}
 */
export function decimalsFor(unit, step) {
  return Math.max(0, Math.min(9, Math.ceil(Math.log10(unit.ns / step) - 1e-9)));
}

/**
 * A time in ns written in `unit` with fixed decimals: formatTimeIn(100236733, ms, 1) = "100.2 ms".
 * @param {number} ns
 * @param {TimeUnit} unit
 * @param {number} decimals
 * @returns {string}
 */
export function formatTimeIn(ns, unit, decimals) {
  return `${(ns / unit.ns).toFixed(decimals)} ${unit.label}`;
}

/**
 * A point in time (ns from the trace start) with units and enough decimals to tell apart times
 * `resolution` ns apart: formatInstant(100236733, 1) = "100.236733 ms",
 * formatInstant(100236733, 1e5) = "100.2 ms". Durations are formatTime's.
 * @param {unknown} ns
 * @param {number} [resolution]
 * @returns {string}
 */
export function formatInstant(ns, resolution = 1) {
  const v = num(ns);
  if (v === null) return UNKNOWN;
  const unit = timeUnitFor(Math.max(Math.abs(v), 1));
  return formatTimeIn(v, unit, decimalsFor(unit, Math.max(resolution, 1e-3)));
}

/**
 * A sampled or traced reading in its own unit, as the live panel and the timeline's counter
 * lanes both show it (and the text report: units.format_reading): "73.2%", "1.50 GB",
 * "12.0 GB/s", "33.9 GFLOP/s", "1500 MHz", "12.3 k" (no unit). Units with no SI scaling in
 * common use (W, MHz, °C) keep the number as read, so no "1.50 kMHz".
 * @param {unknown} x
 * @param {string} [unit]
 * @returns {string}
 */
export function formatReading(x, unit = "") {
  const v = num(x);
  if (v === null) return UNKNOWN;
  if (unit === "%") return formatPercent(v);
  if (unit === "" || unit === "B" || unit === "B/s" || unit === "FLOP/s") return formatSI(v, unit);
  return `${Number.isInteger(v) ? v : v.toFixed(1)} ${unit}`;
}

/**
 * What a gauge shows, from one report["gauges"] entry: the value and roof as text, and the fill
 * (0..1, clipped) only when both are known. `over` says the value passed its roof (possible: a
 * datasheet roof below what caches deliver), so the panel can mark it rather than hide it.
 * @param {Gauge | null | undefined} g
 */
export function gaugeReading(g) {
  const value = num(g && g.value);
  const roof = num(g && g.roof);
  const unit = String((g && g.unit) || "");
  let fraction = num(g && g.fraction);
  if (fraction === null && value !== null && roof !== null && roof > 0) fraction = value / roof;
  const known = value !== null && roof !== null && roof > 0 && fraction !== null;
  const f = known ? /** @type {number} */ (fraction) : null;
  return {
    known,
    valueKnown: value !== null,
    roofKnown: roof !== null && roof > 0,
    value,
    roof,
    fraction: f,
    fill: f === null ? null : Math.min(1, Math.max(0, f)),
    over: f !== null && f > 1,
    valueText: value === null ? "unknown" : formatReading(value, unit),
    roofText: roof === null ? "unknown" : formatReading(roof, unit),
    percentText: known ? formatFraction(fraction) : UNKNOWN,
  };
}

/**
 * Gauges grouped for display: run-wide ones (rank null) first, then per rank ascending.
 * @param {Gauge[] | null | undefined} gauges
 * @returns {{rank: number | null, gauges: Gauge[]}[]}
 */
export function gaugesByRank(gauges) {
  /** @type {Map<number | "all", {rank: number | null, gauges: Gauge[]}>} */
  const groups = new Map();
  for (const g of gauges || []) {
    const rank = num(g && g.rank);
    const key = rank === null ? "all" : rank;
    let group = groups.get(key);
    if (!group) groups.set(key, (group = { rank, gauges: [] }));
    group.gauges.push(g);
  }
  return [...groups.values()].sort((a, b) => {
    if (a.rank === null) return -1;
    if (b.rank === null) return 1;
    return a.rank - b.rank;
  });
}

/**
 * "largest idle gaps · 10 windows", "DataLoader calls · 20 events · 4 windows".
 * @param {{label?: unknown, table?: unknown, event_ids?: unknown[], windows?: unknown[]} | null | undefined} e
 *   a hint's evidence entry
 * @returns {string}
 */
export function evidenceText(e) {
  const events = ((e && e.event_ids) || []).length;
  const windows = ((e && e.windows) || []).length;
  const parts = [(e && e.label) || (e && e.table) || "evidence"];
  if (events) parts.push(`${events} ${events === 1 ? "event" : "events"}`);
  if (windows) parts.push(`${windows} ${windows === 1 ? "window" : "windows"}`);
  if (!events && !windows) parts.push("nothing to show");
  return parts.join(" · ");
}

/**
 * A hint's number as text, by the convention of its key: *_ns durations, *_pct percentages,
 * *bytes sizes, *_per_s rates; other numbers with separators, strings as they are.
 * @param {string} key
 * @param {unknown} value
 * @returns {string}
 */
export function formatHintNumber(key, value) {
  if (typeof value === "string") return value;
  const v = num(value);
  if (v === null) return UNKNOWN;
  const k = String(key);
  if (k.endsWith("_ns") || k.includes("_ns_")) return formatTime(v); // "launch_ns_for_small_kernels"
  if (k.endsWith("_pct") || k.endsWith("pct_of_roof")) return formatPercent(v);
  if (k.endsWith("bytes_per_s")) return formatBytesPerS(v);
  if (k.endsWith("flops_per_s")) return formatFlopsPerS(v);
  if (k.endsWith("bytes")) return formatBytes(v);
  if (k.endsWith("flops")) return formatFlops(v);
  if (Number.isInteger(v)) return formatCount(v);
  return sig3(v);
}

/**
 * A hint number's key as a label: "idle_ns" -> "idle", "mean_batch_ns" -> "mean batch"
 * (the value carries the unit), "data-loading_ns" -> "data-loading".
 * @param {string} key
 * @returns {string}
 */
export function hintNumberLabel(key) {
  const k = String(key).replace(/_(ns|pct)$/, "").replace(/_ns_/, "_");
  return k.replace(/_/g, " ");
}
