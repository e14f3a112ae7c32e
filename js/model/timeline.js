// Pure layout helpers for the timeline: no DOM, no canvas. Everything here is unit-tested.
//
// Times are nanoseconds from the trace start (float64). A "view" is {start, end} in ns.

// ---------------------------------------------------------------------------------------------
// Per-lane index

/**
 * Index a decoded events table: per lane, the [lo, hi) row range (rows are sorted by
 * (lane, start_ns)), and per row the running maximum of end times within its lane, which is
 * non-decreasing in a lane and so can be binary-searched even when long events start before a
 * window that short later events have already left.
 *
 * @param {ArrayLike<number>} starts start_ns
 * @param {ArrayLike<number>} durs dur_ns
 * @param {ArrayLike<number>} lanes lane id per row
 * @param {number} laneCount number of lanes (ids 0..laneCount-1; larger ids grow the index)
 */
export function buildLaneIndex(starts, durs, lanes, laneCount = 0) {
  const n = starts.length;
  let count = laneCount;
  for (let i = 0; i < n; i++) if (lanes[i] + 1 > count) count = lanes[i] + 1;
  const lo = new Int32Array(count).fill(-1);
  const hi = new Int32Array(count).fill(-1);
  const maxEnd = new Float64Array(n);
  let prevLane = -1;
  let running = -Infinity;
  for (let i = 0; i < n; i++) {
    const lane = lanes[i];
    if (lane !== prevLane) {
      if (lane < prevLane) throw new Error(`events are not sorted by lane at row ${i}`);
      if (prevLane >= 0) hi[prevLane] = i;
      lo[lane] = i;
      prevLane = lane;
      running = -Infinity;
    }
    const end = starts[i] + Math.max(0, durs[i]);
    if (end > running) running = end;
    maxEnd[i] = running;
  }
  if (prevLane >= 0) hi[prevLane] = n;
  for (let l = 0; l < count; l++) if (lo[l] < 0) { lo[l] = 0; hi[l] = 0; }
  return { lo, hi, maxEnd, laneCount: count };
}

/** First index in [lo, hi) whose value is >= x (arr non-decreasing on [lo, hi)); hi if none. */
export function lowerBound(arr, x, lo, hi) {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (arr[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** First index in [lo, hi) whose value is > x; hi if none. */
export function upperBound(arr, x, lo, hi) {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (arr[mid] <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Candidate rows of one lane for the window [t0, t1]: [i0, i1) such that every event of the lane
 * that overlaps the window is inside it. Events inside may still end before t0 (a long earlier
 * event keeps the running max high); callers skip those with `start + dur < t0`.
 */
export function visibleRange(index, starts, lane, t0, t1) {
  if (lane < 0 || lane >= index.laneCount) return [0, 0];
  const lo = index.lo[lane];
  const hi = index.hi[lane];
  const i0 = lowerBound(index.maxEnd, t0, lo, hi);
  const i1 = upperBound(starts, t1, i0, hi);
  return [i0, i1];
}

// ---------------------------------------------------------------------------------------------
// Time <-> pixels, zoom and pan

export function timeToX(t, view, width) {
  return ((t - view.start) / (view.end - view.start)) * width;
}

export function xToTime(x, view, width) {
  return view.start + (x / width) * (view.end - view.start);
}

/** Clamp a view to [0, span], keeping its length when it fits. */
export function clampView(view, span, minSpan = 1) {
  const full = Math.max(span, minSpan);
  let len = Math.min(Math.max(view.end - view.start, Math.min(minSpan, full)), full);
  let start = view.start;
  if (!Number.isFinite(start)) start = 0;
  if (!Number.isFinite(len) || len <= 0) len = full;
  start = Math.min(Math.max(start, 0), full - len);
  return { start, end: start + len };
}

/**
 * Zoom by `factor` (< 1 zooms in) keeping time `anchor` under the same pixel.
 * The result is clamped to [0, span] and no narrower than minSpan.
 */
export function zoomAt(view, anchor, factor, span, minSpan = 1) {
  const len = view.end - view.start;
  const full = Math.max(span, minSpan);
  const newLen = Math.min(Math.max(len * factor, Math.min(minSpan, full)), full);
  const frac = len > 0 ? (anchor - view.start) / len : 0.5;
  const start = anchor - frac * newLen;
  return clampView({ start, end: start + newLen }, span, minSpan);
}

/** Shift the view by dt nanoseconds (positive moves later), clamped to [0, span]. */
export function pan(view, dt, span, minSpan = 1) {
  return clampView({ start: view.start + dt, end: view.end + dt }, span, minSpan);
}

/** Wheel delta (pixels, or lines/pages via deltaMode) to a zoom factor; deltaY > 0 zooms out. */
export function wheelZoomFactor(deltaY, deltaMode = 0) {
  const px = deltaMode === 1 ? deltaY * 16 : deltaMode === 2 ? deltaY * 400 : deltaY;
  const clamped = Math.max(-500, Math.min(500, px));
  return Math.exp(clamped * 0.002);
}

// ---------------------------------------------------------------------------------------------
// Axis ticks and units

const UNITS = [
  { ns: 1e9, label: "s" },
  { ns: 1e6, label: "ms" },
  { ns: 1e3, label: "µs" },
  { ns: 1, label: "ns" },
];

/** Smallest 1-2-5 x 10^k step >= raw. */
export function niceStep(raw) {
  if (!(raw > 0) || !Number.isFinite(raw)) return 1;
  const exp = Math.floor(Math.log10(raw));
  const base = 10 ** exp;
  for (const m of [1, 2, 5, 10]) {
    if (m * base >= raw * (1 - 1e-12)) return m * base;
  }
  return 10 * base;
}

/** The unit for a magnitude in ns: the largest whose size is <= the magnitude (ns at least). */
export function unitFor(ns) {
  const a = Math.abs(ns);
  for (const u of UNITS) if (a >= u.ns) return u;
  return UNITS[UNITS.length - 1];
}

/**
 * Axis ticks for the view across `width` pixels, at least `minSpacingPx` apart, on a 1-2-5 step
 * (never below 1 ns). Labels share one unit chosen by the view's end, with as many decimals as
 * the step needs. Returns {step, unit, ticks: [{t, x, label}]}.
 */
export function axisTicks(view, width, minSpacingPx = 80) {
  const len = view.end - view.start;
  if (!(len > 0) || !(width > 0)) return { step: 0, unit: "ns", ticks: [] };
  const step = Math.max(1, niceStep((len * minSpacingPx) / width));
  const unit = unitFor(Math.max(Math.abs(view.end), step));
  const decimals = Math.max(0, Math.min(9, Math.ceil(Math.log10(unit.ns / step) - 1e-9)));
  const ticks = [];
  const first = Math.ceil(view.start / step - 1e-9) * step;
  for (let k = 0; ; k++) {
    const t = first + k * step;
    if (t > view.end + step * 1e-9 || k > 10000) break;
    ticks.push({ t, x: ((t - view.start) / len) * width, label: `${(t / unit.ns).toFixed(decimals)} ${unit.label}` });
  }
  return { step, unit: unit.label, ticks };
}

// Durations read the same in every panel: one formatter (model/format.js) serves them all.
export { formatTime as formatDuration } from "./format.js";


/**
 * A point in time with units and enough decimals to tell apart times `resolution` ns apart:
 * formatTime(100236733, 1) = "100.236733 ms", formatTime(100236733, 1e5) = "100.2 ms".
 */
export function formatTime(ns, resolution = 1) {
  if (!Number.isFinite(ns)) return "–";
  const unit = unitFor(Math.max(Math.abs(ns), 1));
  const decimals = Math.max(0, Math.min(9, Math.ceil(Math.log10(unit.ns / Math.max(resolution, 1e-3)) - 1e-9)));
  return `${(ns / unit.ns).toFixed(decimals)} ${unit.label}`;
}

/** A byte count or other counter value with a unit: "1.50 GB", "73.2 %", "12.3 k". */
export function formatValue(v, unit = "") {
  if (!Number.isFinite(v)) return "–";
  if (unit === "B") {
    const steps = ["B", "KB", "MB", "GB", "TB"];
    let x = Math.abs(v);
    let k = 0;
    while (x >= 1000 && k < steps.length - 1) { x /= 1000; k++; }
    const sign = v < 0 ? "-" : "";
    return `${sign}${k === 0 ? Math.round(x) : x.toFixed(x >= 100 ? 0 : x >= 10 ? 1 : 2)} ${steps[k]}`;
  }
  if (unit === "%") return `${v.toFixed(1)} %`;
  const a = Math.abs(v);
  const [div, suffix] = a >= 1e12 ? [1e12, " T"] : a >= 1e9 ? [1e9, " G"] : a >= 1e6 ? [1e6, " M"] : a >= 1e3 ? [1e3, " k"] : [1, ""];
  const x = v / div;
  const text = Number.isInteger(x) ? String(x) : x.toFixed(Math.abs(x) >= 100 ? 0 : Math.abs(x) >= 10 ? 1 : 2);
  return `${text}${suffix}${unit && unit !== "%" ? ` ${unit}` : ""}`;
}

// ---------------------------------------------------------------------------------------------
// Segment-table index (the contract's `events` trait and "window" replies)
//
// Rows arrive grouped by lane (meta.segments), each lane's rows sorted by start. Drawing and hit
// testing work per (lane, sub-row): within a sub-row events rarely overlap (nesting depth for CPU
// ops, packing rows for overlapping kernels), so the running max of end times stays close to the
// previous event's end and a binary search lands right at the window instead of at a long event
// far to the left. The index therefore keeps, per segment, its rows permuted into (row, start)
// order: `perm[p]` is the table row at position p, and `start`/`dur`/`maxEnd` are in that order.
// A segment's positions occupy the same span [row0, row0 + count) as its table rows.

/**
 * @param {{n: number, columns: Object, meta?: Object}} table decoded segment table
 * @returns index {n, perm, start, dur, maxEnd, lanes: Map(lane -> [{rows, lo, hi}]),
 *   segments: [{lane, row0, count, firstId}], names, counts, merged, view}
 */
export function buildSegmentIndex(table) {
  const n = table?.n ?? 0;
  const cols = table?.columns ?? {};
  const meta = table?.meta ?? {};
  const starts = cols.start_ns;
  const durs = cols.dur_ns;
  const rowCol = cols.row;
  let segments = meta.segments;
  if (!Array.isArray(segments)) segments = n && cols.lane ? segmentsFromLaneColumn(cols.lane) : [];
  if (n && (!starts || !durs)) throw new Error("the events table lacks start_ns or dur_ns");
  const perm = new Uint32Array(n);
  const start = new Float64Array(n);
  const dur = new Float32Array(n);
  const maxEnd = new Float64Array(n);
  const lanes = new Map();
  const segs = [];
  let row0 = 0;
  for (const seg of segments) {
    const [lane, firstId, count] = seg;
    if (!(count >= 0) || row0 + count > n) {
      throw new Error(`events table: segment of lane ${lane} runs past row ${n}`);
    }
    const end = row0 + count;
    let rows = 1;
    if (rowCol) for (let i = row0; i < end; i++) if (rowCol[i] + 1 > rows) rows = rowCol[i] + 1;
    const lo = new Int32Array(rows);
    const hi = new Int32Array(rows);
    if (rowCol) for (let i = row0; i < end; i++) hi[rowCol[i]]++;
    else hi[0] = count;
    // Counting sort by sub-row; stable, so each sub-row stays in start order.
    let at = row0;
    for (let r = 0; r < rows; r++) { lo[r] = at; at += hi[r]; hi[r] = lo[r]; }
    for (let i = row0; i < end; i++) {
      const r = rowCol ? rowCol[i] : 0;
      const p = hi[r]++;
      perm[p] = i;
      start[p] = starts[i];
      dur[p] = durs[i] > 0 ? durs[i] : 0;
    }
    for (let r = 0; r < rows; r++) {
      let running = -Infinity;
      for (let p = lo[r]; p < hi[r]; p++) {
        if (p > lo[r] && start[p] < start[p - 1]) {
          throw new Error(`events table: lane ${lane} is not sorted by start at row ${perm[p]}`);
        }
        const e = start[p] + dur[p];
        if (e > running) running = e;
        maxEnd[p] = running;
      }
    }
    if (!lanes.has(lane)) lanes.set(lane, []);
    lanes.get(lane).push({ rows, lo, hi });
    segs.push({ lane, row0, count, firstId });
    row0 = end;
  }
  if (row0 !== n) throw new Error(`events table: segments cover ${row0} of ${n} rows`);
  const counts = cols.count ?? null;
  return {
    ...blockSummaries(start, dur, perm, counts),
    n,
    perm,
    start,
    dur,
    maxEnd,
    lanes,
    segments: segs,
    names: cols.name ?? null,
    counts,
    merged: Boolean(meta.merged),
    view: Array.isArray(meta.view) ? meta.view : null,
  };
}

// Zoomed out, a pixel can hold hundreds of events. lodRow swallows whole aligned blocks of
// BLOCK positions at a time when they all fall inside the coverage box it is growing, using
// these per-block summaries, so a frame costs far less than one step per event. A block that
// straddles two sub-rows is never swallowed (lodRow only takes blocks inside its own range).
export const BLOCK_SHIFT = 5;
const BLOCK = 1 << BLOCK_SHIFT;

function blockSummaries(start, dur, perm, counts) {
  const blocks = Math.ceil(start.length / BLOCK);
  const blockMaxDur = new Float64Array(blocks);
  const blockMaxEnd = new Float64Array(blocks);
  const blockArgmax = new Int32Array(blocks);
  const blockCount = new Float64Array(blocks);
  for (let b = 0; b < blocks; b++) {
    const p0 = b * BLOCK;
    const p1 = Math.min(start.length, p0 + BLOCK);
    let maxDur = -1;
    let maxEnd = -Infinity;
    let arg = p0;
    let count = 0;
    for (let p = p0; p < p1; p++) {
      if (dur[p] > maxDur) { maxDur = dur[p]; arg = p; }
      const e = start[p] + dur[p];
      if (e > maxEnd) maxEnd = e;
      count += counts ? counts[perm[p]] : 1;
    }
    blockMaxDur[b] = maxDur;
    blockMaxEnd[b] = maxEnd;
    blockArgmax[b] = arg;
    blockCount[b] = count;
  }
  return { blockMaxDur, blockMaxEnd, blockArgmax, blockCount };
}

/**
 * Per block of positions, 1 when any event in it has a name in `mask`: lets lodRow keep
 * skipping whole blocks while a search is active. Recompute when the mask changes.
 */
export function blockMatches(index, mask) {
  const out = new Uint8Array(index.blockMaxDur?.length ?? 0);
  const { perm, names } = index;
  if (!names || !mask) return out;
  for (let p = 0; p < perm.length; p++) if (mask[names[perm[p]]]) out[p >> BLOCK_SHIFT] = 1;
  return out;
}

/** Segments [[lane, first_id, count]] from a sorted lane column (tables without meta). */
export function segmentsFromLaneColumn(laneCol) {
  const out = [];
  for (let i = 0; i < laneCol.length; i++) {
    const last = out[out.length - 1];
    if (last && last[0] === laneCol[i]) last[2]++;
    else out.push([laneCol[i], i, 1]);
  }
  return out;
}

/** The segment holding table row (or position) r, by binary search over row0. */
export function segmentOf(index, r) {
  const segs = index.segments;
  let lo = 0;
  let hi = segs.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (segs[mid].row0 + segs[mid].count <= r) lo = mid + 1;
    else hi = mid;
  }
  return lo < segs.length && segs[lo].row0 <= r ? segs[lo] : null;
}

/** Global event id of table row r; -1 for merged coverage boxes. */
export function idOfRow(index, r) {
  const seg = segmentOf(index, r);
  if (!seg || index.merged || seg.firstId < 0) return -1;
  return seg.firstId + (r - seg.row0);
}

/** Table row of a global event id, or -1 when this table does not hold it. */
export function rowOfId(index, id) {
  if (index.merged || !(id >= 0)) return -1;
  for (const seg of index.segments) {
    if (seg.firstId >= 0 && id >= seg.firstId && id < seg.firstId + seg.count) return seg.row0 + id - seg.firstId;
  }
  return -1;
}

/** Plain description of table row r: {id, lane, row, start_ns, dur_ns, name, count}. */
export function eventAt(index, table, r) {
  const seg = segmentOf(index, r);
  const cols = table.columns;
  return {
    id: idOfRow(index, r),
    lane: seg ? seg.lane : -1,
    row: cols.row ? cols.row[r] : 0,
    start_ns: cols.start_ns[r],
    dur_ns: Math.max(0, cols.dur_ns[r]),
    name: cols.name ? cols.name[r] : -1,
    count: cols.count ? cols.count[r] : 1,
  };
}

/**
 * Positions [k0, k1) within one sub-row's positions [lo, hi) holding every event that overlaps
 * [t0, t1]. Some inside may end before t0 when sub-row events overlap; callers skip those.
 */
export function rowRange(index, lo, hi, t0, t1) {
  const k0 = lowerBound(index.maxEnd, t0, lo, hi);
  const k1 = upperBound(index.start, t1, k0, hi);
  return [k0, k1];
}

/**
 * The event of sub-row positions [lo, hi) under time t: one that contains t (the shortest if
 * several), else the nearest within `slack` ns. Returns its position, or -1.
 */
export function hitRow(index, lo, hi, t, slack = 0) {
  const { start, dur, maxEnd } = index;
  let best = -1;
  let bestDist = Infinity;
  let bestDur = Infinity;
  let steps = 0;
  for (let k = upperBound(start, t + slack, lo, hi) - 1; k >= lo && steps < 512; k--, steps++) {
    if (maxEnd[k] < t - slack) break; // nothing earlier reaches t
    const s = start[k];
    const e = s + dur[k];
    const dist = t < s ? s - t : t > e ? t - e : 0;
    if (dist > slack) continue;
    if (dist < bestDist || (dist === bestDist && dur[k] < bestDur)) {
      best = k;
      bestDist = dist;
      bestDur = dur[k];
    }
  }
  return best;
}

/**
 * The event of `index` under time t on one plotted row of a layout entry (see groupLayout): for a
 * "lane" entry only sub-row `row` (sub-rows past the lane's last draw on its last), for a
 * "summary" entry every sub-row of every member lane. Nearest first, then the shortest (the
 * innermost of nested events). Returns its position, or -1.
 */
export function hitEntry(index, entry, row, t, slack = 0) {
  let best = -1;
  let bestKey = Infinity;
  for (const lane of entry.lanes) {
    for (const chunk of index.lanes.get(lane.id) ?? []) {
      for (let r = 0; r < chunk.rows; r++) {
        if (entry.kind === "lane" && Math.min(r, lane.rows - 1) !== row) continue;
        const k = hitRow(index, chunk.lo[r], chunk.hi[r], t, slack);
        if (k < 0) continue;
        const s = index.start[k];
        const e = s + index.dur[k];
        const dist = t < s ? s - t : t > e ? t - e : 0;
        const key = dist * 1e12 + index.dur[k];
        if (key < bestKey) {
          best = k;
          bestKey = key;
        }
      }
    }
  }
  return best;
}

// ---------------------------------------------------------------------------------------------
// Level of detail, in pixel space

/** Reusable output of lodRow: parallel typed arrays, `n` boxes filled. */
export function createBoxes(capacity = 1024) {
  return {
    n: 0,
    x0: new Float64Array(capacity),
    x1: new Float64Array(capacity),
    pos: new Int32Array(capacity),
    count: new Float64Array(capacity),
    match: new Uint8Array(capacity),
  };
}

function pushBox(out, x0, x1, pos, count, match, width) {
  if (out.n === out.pos.length) {
    const bigger = createBoxes(out.pos.length * 2);
    bigger.x0.set(out.x0);
    bigger.x1.set(out.x1);
    bigger.pos.set(out.pos);
    bigger.count.set(out.count);
    bigger.match.set(out.match);
    Object.assign(out, { x0: bigger.x0, x1: bigger.x1, pos: bigger.pos, count: bigger.count, match: bigger.match });
  }
  const i = out.n++;
  out.x0[i] = x0 < -1 ? -1 : x0 > width + 1 ? width + 1 : x0;
  out.x1[i] = x1 < -1 ? -1 : x1 > width + 1 ? width + 1 : x1;
  out.pos[i] = pos;
  out.count[i] = count;
  out.match[i] = match;
}

/**
 * Boxes to draw for positions [k0, k1) of one sub-row (from rowRange) at `view` across `width`
 * pixels, appended to `out` (reset out.n yourself). Events at least `minPx` wide are drawn as
 * they are; runs of narrower events that touch or come within `minPx` of each other merge into
 * one coverage box whose `pos` is its longest member and `count` the events it stands for (the
 * table's count column when the rows are already coverage boxes). With `mask` (per name, 1 =
 * matches a search) a box's `match` is 1 when any member matches; pass `maskBlocks`
 * (blockMatches of that mask) to keep skipping blocks. No allocation per event.
 */
export function lodRow(index, k0, k1, view, width, minPx, out, mask = null, maskBlocks = null) {
  const { start, dur, perm, counts, names, blockMaxDur, blockMaxEnd, blockArgmax, blockCount } = index;
  const vs = view.start;
  const ve = view.end;
  const scale = width / (ve - vs);
  // With a search mask, blocks can be skipped only when their matches are summarised too.
  const skip = blockMaxDur && (!mask || maskBlocks);
  let open = false;
  let ox0 = 0;
  let ox1 = 0;
  let opos = 0;
  let ocount = 0;
  let odur = 0;
  let omatch = 0;
  for (let k = k0; k < k1; k++) {
    if (open && skip && (k & (BLOCK - 1)) === 0 && k + BLOCK <= k1) {
      const b = k >> BLOCK_SHIFT;
      // The whole block starts inside the box's reach and holds only sub-pixel events: the
      // event-by-event loop would merge every one of them.
      if (start[k] >= vs && start[k + BLOCK - 1] <= vs + (ox1 + minPx) / scale && blockMaxDur[b] * scale < minPx) {
        const bx1 = (blockMaxEnd[b] - vs) * scale;
        if (bx1 > ox1) ox1 = bx1;
        ocount += blockCount[b];
        if (mask) omatch |= maskBlocks[b];
        if (blockMaxDur[b] > odur) { odur = blockMaxDur[b]; opos = blockArgmax[b]; }
        k += BLOCK - 1;
        continue;
      }
    }
    const s = start[k];
    const d = dur[k];
    if (s + d < vs || s > ve) continue;
    const x0 = (s - vs) * scale;
    const x1 = (s + d - vs) * scale;
    const c = counts ? counts[perm[k]] : 1;
    const m = mask && names ? mask[names[perm[k]]] : 0;
    if (x1 - x0 >= minPx) {
      if (open) { pushBox(out, ox0, ox1, opos, ocount, omatch, width); open = false; }
      pushBox(out, x0, x1, k, c, m, width);
      continue;
    }
    if (open && x0 <= ox1 + minPx) {
      if (x1 > ox1) ox1 = x1;
      ocount += c;
      omatch |= m;
      if (d > odur) { odur = d; opos = k; }
      continue;
    }
    if (open) pushBox(out, ox0, ox1, opos, ocount, omatch, width);
    open = true;
    ox0 = x0;
    ox1 = x1;
    opos = k;
    ocount = c;
    odur = d;
    omatch = m;
  }
  if (open) pushBox(out, ox0, ox1, opos, ocount, omatch, width);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Counter lanes (step functions: a value holds from its sample time until the next sample)

/** Per counter lane: {lo, hi, min, max} over the counters table's rows (meta.segments). */
export function buildCounterIndex(counters) {
  const out = new Map();
  const n = counters?.n ?? 0;
  const cols = counters?.columns ?? {};
  const segments = counters?.meta?.segments ?? [];
  if (!n || !cols.time_ns || !cols.value) return out;
  let row0 = 0;
  for (const [lane, , count] of segments) {
    const lo = row0;
    const hi = Math.min(n, row0 + count);
    let min = Infinity;
    let max = -Infinity;
    for (let i = lo; i < hi; i++) {
      const v = cols.value[i];
      if (v < min) min = v;
      if (v > max) max = v;
    }
    out.set(lane, { lo, hi, min, max });
    row0 = hi;
  }
  return out;
}

/** Samples [k0, k1) that shape the step plot over [t0, t1]: from the one holding at t0. */
export function counterWindow(times, lo, hi, t0, t1) {
  const k0 = Math.max(lo, upperBound(times, t0, lo, hi) - 1);
  const k1 = upperBound(times, t1, k0, hi);
  return [k0, Math.max(k0, k1)];
}

// ---------------------------------------------------------------------------------------------
// Lane groups and vertical layout

/**
 * Vertical layout in display order (the lanes list's order). Each group (lane.group; lanes of
 * one group are contiguous) gets a header row; an expanded group then lists its lanes, a
 * collapsed one shows a single summary row covering all its event lanes (or only the header
 * when it has none, e.g. counters). Entries: {kind: "header"|"lane"|"summary", group, y, h,
 * lanes: [lane...]}, plus `entryOfLane` (lane id -> the entry where that lane is drawn).
 */
export function groupLayout(lanes, collapsed = new Set(), dims = {}) {
  const { rowH = 16, pad = 3, headerH = 20, counterH = 36 } = dims;
  const entries = [];
  const entryOfLane = new Map();
  let y = 0;
  let k = 0;
  while (k < lanes.length) {
    const group = lanes[k].group ?? "";
    let j = k;
    while (j < lanes.length && (lanes[j].group ?? "") === group) j++;
    const members = lanes.slice(k, j);
    const isCollapsed = group !== "" && collapsed.has(group);
    let header = null;
    if (group !== "") {
      header = { kind: "header", group, y, h: headerH, lanes: members, collapsed: isCollapsed };
      entries.push(header);
      y += headerH;
    }
    if (isCollapsed) {
      const eventLanes = members.filter((l) => l.kind !== "counter");
      let summary = header;
      if (eventLanes.length) {
        summary = { kind: "summary", group, y, h: 2 * pad + rowH, lanes: eventLanes };
        entries.push(summary);
        y += summary.h;
      }
      for (const lane of members) entryOfLane.set(lane.id, lane.kind === "counter" ? header : summary);
    } else {
      for (const lane of members) {
        const h = lane.kind === "counter" ? counterH : 2 * pad + Math.max(1, lane.rows | 0) * rowH;
        const entry = { kind: "lane", group, y, h, lanes: [lane] };
        entries.push(entry);
        entryOfLane.set(lane.id, entry);
        y += h;
      }
    }
    k = j;
  }
  return { entries, entryOfLane, total: y };
}

/** Index of the first entry whose bottom is below y (entries are in y order). */
export function firstEntryAt(entries, y) {
  let lo = 0;
  let hi = entries.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (entries[mid].y + entries[mid].h <= y) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// ---------------------------------------------------------------------------------------------
// Navigation (pure view transitions)

export const ZOOM_STEP = 0.8;
export const PAN_STEP = 0.2;

/**
 * Perfetto-style keys: W/S zoom in/out keeping `anchor` (the time under the mouse; the view's
 * centre without one) in place, A/D pan by a fifth of the view, 0 shows everything. Returns the
 * new view, or null for keys that are not navigation.
 */
export function keyToView(key, view, { span, minSpan = 1, anchor = null } = {}) {
  const len = view.end - view.start;
  const at = anchor ?? view.start + len / 2;
  switch (String(key).toLowerCase()) {
    case "w": return zoomAt(view, at, ZOOM_STEP, span, minSpan);
    case "s": return zoomAt(view, at, 1 / ZOOM_STEP, span, minSpan);
    case "a": return pan(view, -PAN_STEP * len, span, minSpan);
    case "d": return pan(view, PAN_STEP * len, span, minSpan);
    case "0": return clampView({ start: 0, end: span }, span, minSpan);
    default: return null;
  }
}

/** The view that shows one event with `margin` (a fraction of its length) on each side. */
export function viewForEvent(start, dur, span, minSpan = 1, margin = 0.25) {
  const len = Math.max(dur, minSpan);
  const mid = start + dur / 2;
  const half = (len * (1 + 2 * margin)) / 2;
  return clampView({ start: mid - half, end: mid + half }, span, minSpan);
}

/**
 * Whether a detail window must be fetched for `view` across `width` pixels, and which. null when
 * the overview (`overviewBins` bins across the span) or the window already held or in flight
 * (`current`: {start, end, merged, width}) is fine enough: real events covering the view, or
 * merged bins no wider than a pixel. Otherwise {start, end, width}: the view widened by `pad` on
 * each side (so small pans need no new request), with the width scaled to keep the resolution.
 */
export function planWindowRequest(view, width, span, current, { overviewBins = 8192, pad = 0.25 } = {}) {
  const len = view.end - view.start;
  if (!(len > 0) || !(width > 0)) return null;
  const pixel = len / width;
  if (span / overviewBins <= pixel / 2) return null;
  if (current && current.start <= view.start && current.end >= view.end) {
    if (!current.merged) return null;
    if ((current.end - current.start) / (2 * current.width) <= pixel) return null;
  }
  const start = Math.max(0, view.start - pad * len);
  const end = Math.min(span, view.end + pad * len);
  return { start, end, width: Math.max(1, Math.round((width * (end - start)) / len)) };
}

// ---------------------------------------------------------------------------------------------
// Colors: a fixed palette, so a frame batches its fills per palette entry.
//
// Each kind has its own band: kernels take the blue-green-yellow part of the hue wheel at full
// saturation, memcpy the reds, memset the magentas, CPU ops pastel tones over the whole wheel,
// runtime calls grey-blues. A name's hash picks an entry inside its kind's band.

/** Stable 32-bit FNV-1a hash of a string. */
export function hashString(s) {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

const BANDS = [
  { kind: "kernel", hue: [45, 265], sat: 62, light: [50, 60], size: 40 },
  { kind: "op", hue: [0, 360], sat: 42, light: [70, 77], size: 40 },
  { kind: "runtime", hue: [195, 250], sat: 20, light: [60, 68], size: 8 },
  { kind: "memcpy", hue: [348, 378], sat: 72, light: [52, 60], size: 8 },
  { kind: "memset", hue: [280, 325], sat: 55, light: [56, 64], size: 8 },
];
const BAND_OFFSET = new Map();
let paletteSize = 0;
for (const band of BANDS) {
  BAND_OFFSET.set(band.kind, paletteSize);
  paletteSize += band.size;
}
/** Palette index of the muted fill used for events that do not match an active search. */
export const DIM_COLOR = paletteSize;
export const PALETTE_SIZE = paletteSize + 1;

/** Palette index for an event name of a kind ("kernel", "op", ...; unknown kinds as kernels). */
export function colorIndex(name, kind = "kernel") {
  const band = BANDS.find((b) => b.kind === kind) ?? BANDS[0];
  return BAND_OFFSET.get(band.kind) + (hashString(String(name)) % band.size);
}

/** The hue, saturation and lightness of a palette entry (dark themes get darker fills). */
export function paletteHsl(i, dark = false) {
  if (i === DIM_COLOR) return dark ? [0, 0, 32] : [0, 0, 84];
  let at = 0;
  for (const band of BANDS) {
    if (i < at + band.size) {
      const j = i - at;
      const hue = (band.hue[0] + ((j + 0.5) * (band.hue[1] - band.hue[0])) / band.size) % 360;
      const light = band.light[j % 2] - (dark ? 10 : 0);
      return [Math.round(hue), band.sat - (dark ? 6 : 0), light];
    }
    at += band.size;
  }
  return [0, 0, 50];
}

const paletteCache = new Map();
/** CSS colors for every palette index. */
export function palette(dark = false) {
  if (!paletteCache.has(dark)) {
    const out = [];
    for (let i = 0; i < PALETTE_SIZE; i++) {
      const [h, s, l] = paletteHsl(i, dark);
      out.push(`hsl(${h}, ${s}%, ${l}%)`);
    }
    paletteCache.set(dark, out);
  }
  return paletteCache.get(dark);
}

/** A stable fill color for an event name of a kind. */
export function colorForName(name, kind = "kernel") {
  return palette(false)[colorIndex(name, kind)];
}

/** Whether a CSS color ("#rgb", "#rrggbb", "rgb(...)", "rgba(...)") is dark; false if unreadable. */
export function colorIsDark(css) {
  const hex = /^#([0-9a-f]{3}|[0-9a-f]{6})$/i.exec(css);
  const rgb = /^rgba?\(\s*(\d+)[,\s]+(\d+)[,\s]+(\d+)/i.exec(css);
  let channels;
  if (hex) {
    const h = hex[1].length === 3 ? hex[1].replace(/./g, "$&$&") : hex[1];
    channels = [0, 2, 4].map((i) => parseInt(h.slice(i, i + 2), 16));
  } else if (rgb) {
    channels = [rgb[1], rgb[2], rgb[3]].map(Number);
  } else return false;
  const [r, g, b] = channels;
  return 0.2126 * r + 0.7152 * g + 0.0722 * b < 128;
}

// ---------------------------------------------------------------------------------------------
// Event details fetched on demand

/**
 * Details by event id, fetched once through `fetchOne(id) -> Promise` and kept for the `limit`
 * most recently fetched ids; concurrent asks for one id share a request, failures are not kept.
 */
export function createDetailsCache(fetchOne, limit = 500) {
  const done = new Map();
  const inflight = new Map();
  return {
    has: (id) => done.has(id),
    get: (id) => done.get(id),
    fetch(id) {
      if (done.has(id)) return Promise.resolve(done.get(id));
      if (inflight.has(id)) return inflight.get(id);
      if (!fetchOne) return Promise.reject(new Error("no details source"));
      const p = fetchOne(id).then(
        (d) => {
          inflight.delete(id);
          done.set(id, d);
          if (done.size > limit) done.delete(done.keys().next().value);
          return d;
        },
        (err) => {
          inflight.delete(id);
          throw err;
        },
      );
      inflight.set(id, p);
      return p;
    },
  };
}

/**
 * Events to highlight, as the timeline outlines them: per lane, sorted by start, with numeric
 * fields; entries without a finite start are skipped. Returns {count, byLane, longest}.
 */
export function groupMarks(list) {
  const byLane = new Map();
  let count = 0;
  for (const m of list ?? []) {
    if (!m || !Number.isFinite(Number(m.start_ns))) continue;
    const lane = Number(m.lane);
    if (!byLane.has(lane)) byLane.set(lane, []);
    byLane.get(lane).push({ id: Number(m.id), lane, row: Number(m.row) || 0, start_ns: Number(m.start_ns), dur_ns: Math.max(0, Number(m.dur_ns) || 0) });
    count += 1;
  }
  let longest = null;
  for (const arr of byLane.values()) {
    arr.sort((a, b) => a.start_ns - b.start_ns);
    for (const m of arr) if (!longest || m.dur_ns > longest.dur_ns) longest = m;
  }
  return { count, byLane, longest };
}
