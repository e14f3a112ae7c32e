// @ts-check
// Row indexes of decoded events tables: which rows of a lane (and of each of its sub-rows) a time
// window needs, event ids <-> table rows, and the event under a time. No DOM; unit-tested.
//
// Times are nanoseconds from the trace start (float64).

import { blockSummaries } from "./lod.js";

/** @typedef {import("./decode.js").Table} Table */
/** @typedef {import("./decode.js").Column} Column */
/**
 * A sorted array a binary search can read: a typed column or a plain array of numbers.
 * @typedef {ArrayLike<number>} Sorted
 */
/**
 * One segment of a lane in the index: per sub-row r, its positions [lo[r], hi[r]).
 * @typedef {{rows: number, lo: Int32Array, hi: Int32Array}} LaneChunk
 */
/** @typedef {{lane: number, row0: number, count: number, firstId: number}} IndexSegment */
/** @typedef {ReturnType<typeof buildSegmentIndex>} SegmentIndex */
/**
 * One event of a table, as the views pass it around: its global id (-1 for a merged box), lane,
 * sub-row, start and duration (ns), name index (-1 if none) and how many events it stands for.
 * @typedef {{id: number, lane: number, row: number, start_ns: number, dur_ns: number, name: number, count: number}} TimelineEvent
 */

// ---------------------------------------------------------------------------------------------
// Binary search

/**
 * First index in [lo, hi) whose value is >= x (arr non-decreasing on [lo, hi)); hi if none.
 * @param {Sorted} arr
 * @param {number} x
 * @param {number} lo
 * @param {number} hi
 * @returns {number}
 */
export function lowerBound(arr, x, lo, hi) {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (arr[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * First index in [lo, hi) whose value is > x; hi if none.
 * @param {Sorted} arr
 * @param {number} x
 * @param {number} lo
 * @param {number} hi
 * @returns {number}
 */
export function upperBound(arr, x, lo, hi) {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (arr[mid] <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
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
 * @param {Pick<Table, "n" | "columns"> & {meta?: Table["meta"]} | null | undefined} table decoded
 *   segment table
 * @returns the index {n, perm, start, dur, maxEnd, lanes: Map(lane -> [{rows, lo, hi}]),
 *   segments: [{lane, row0, count, firstId}], names, counts, merged, view} and lod.js's block
 *   summaries
 */
export function buildSegmentIndex(table) {
  const n = table?.n ?? 0;
  /** @type {Partial<Record<string, Column>>} */
  const cols = table?.columns ?? {};
  /** @type {Table["meta"]} */
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
  /** @type {Map<number, LaneChunk[]>} */
  const lanes = new Map();
  /** @type {IndexSegment[]} */
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
      // (n > 0 here: both columns were checked above.)
      start[p] = /** @type {Column} */ (starts)[i];
      const d = /** @type {Column} */ (durs)[i];
      dur[p] = d > 0 ? d : 0;
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
    let chunks = lanes.get(lane);
    if (!chunks) lanes.set(lane, (chunks = []));
    chunks.push({ rows, lo, hi });
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

/**
 * The trace's span in ns: `span`, stretched to the latest event end the index holds; 1 at least.
 * @param {unknown} span
 * @param {SegmentIndex} index
 * @returns {number}
 */
export function traceSpan(span, index) {
  let out = Number(span) || 0;
  for (const chunks of index.lanes.values()) {
    for (const chunk of chunks) {
      for (let r = 0; r < chunk.rows; r++) {
        if (chunk.hi[r] > chunk.lo[r] && index.maxEnd[chunk.hi[r] - 1] > out) out = index.maxEnd[chunk.hi[r] - 1];
      }
    }
  }
  return out > 0 ? out : 1;
}

/**
 * Segments [[lane, first_id, count]] from a sorted lane column (tables without meta).
 * @param {ArrayLike<number>} laneCol
 * @returns {[number, number, number][]}
 */
export function segmentsFromLaneColumn(laneCol) {
  /** @type {[number, number, number][]} */
  const out = [];
  for (let i = 0; i < laneCol.length; i++) {
    const last = out[out.length - 1];
    if (last && last[0] === laneCol[i]) last[2]++;
    else out.push([laneCol[i], i, 1]);
  }
  return out;
}

/**
 * The segment holding table row (or position) r, by binary search over row0.
 * @param {SegmentIndex} index
 * @param {number} r
 * @returns {IndexSegment | null}
 */
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

/**
 * Global event id of table row r; -1 for merged coverage boxes.
 * @param {SegmentIndex} index
 * @param {number} r
 * @returns {number}
 */
export function idOfRow(index, r) {
  const seg = segmentOf(index, r);
  if (!seg || index.merged || seg.firstId < 0) return -1;
  return seg.firstId + (r - seg.row0);
}

/**
 * Table row of a global event id, or -1 when this table does not hold it.
 * @param {SegmentIndex} index
 * @param {number} id
 * @returns {number}
 */
export function rowOfId(index, id) {
  if (index.merged || !(id >= 0)) return -1;
  for (const seg of index.segments) {
    if (seg.firstId >= 0 && id >= seg.firstId && id < seg.firstId + seg.count) return seg.row0 + id - seg.firstId;
  }
  return -1;
}

/**
 * Table row of the event of `lane` that starts at `start` and lasts `dur` (both as sent:
 * durations cross as float32), or -1: how a selection is found again in new data for the same
 * run, whose ids differ. A lane's rows are in start order.
 * @param {SegmentIndex} index
 * @param {Table} table
 * @param {number} lane
 * @param {number} start
 * @param {number} dur
 * @returns {number}
 */
export function rowAt(index, table, lane, start, dur) {
  const starts = table.columns.start_ns;
  const durs = table.columns.dur_ns;
  const want = Math.fround(dur);
  for (const seg of index.segments) {
    if (seg.lane !== lane) continue;
    const end = seg.row0 + seg.count;
    for (let r = lowerBound(starts, start, seg.row0, end); r < end && starts[r] === start; r++) {
      if (Math.fround(durs[r]) === want) return r;
    }
  }
  return -1;
}

/**
 * Plain description of table row r: {id, lane, row, start_ns, dur_ns, name, count}.
 * @param {SegmentIndex} index
 * @param {Table} table
 * @param {number} r
 * @returns {TimelineEvent}
 */
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
 * @param {SegmentIndex} index
 * @param {number} lo
 * @param {number} hi
 * @param {number} t0
 * @param {number} t1
 * @returns {[number, number]}
 */
export function rowRange(index, lo, hi, t0, t1) {
  const k0 = lowerBound(index.maxEnd, t0, lo, hi);
  const k1 = upperBound(index.start, t1, k0, hi);
  return [k0, k1];
}

/**
 * The event of sub-row positions [lo, hi) under time t: one that contains t (the shortest if
 * several), else the nearest within `slack` ns. Returns its position, or -1.
 * @param {SegmentIndex} index
 * @param {number} lo
 * @param {number} hi
 * @param {number} t
 * @param {number} [slack]
 * @returns {number}
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
