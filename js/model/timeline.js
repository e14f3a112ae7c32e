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
// Level of detail

/**
 * Boxes to draw for rows [i0, i1) of one lane at the given view and pixel width.
 * Events at least `minPx` wide are returned as they are; consecutive events (in the same lane
 * row) narrower than that, which touch or come within `minPx` of each other, are merged into one
 * coverage box. Each box: {row, x0, x1, index, count}; index is the event (for a merged box, the
 * longest one in it), count how many events it stands for. x0/x1 are clipped to [-1, width+1].
 */
export function lodBoxes(cols, i0, i1, view, width, minPx = 1) {
  const { start_ns: starts, dur_ns: durs, row: rows } = cols;
  const scale = width / (view.end - view.start);
  const out = [];
  const pending = new Map(); // row -> open coverage box
  for (let i = i0; i < i1; i++) {
    const s = starts[i];
    const d = Math.max(0, durs[i]);
    if (s + d < view.start || s > view.end) continue;
    const row = rows ? rows[i] : 0;
    const x0 = (s - view.start) * scale;
    const x1 = (s + d - view.start) * scale;
    const open = pending.get(row);
    if (x1 - x0 >= minPx) {
      if (open) { out.push(open); pending.delete(row); }
      out.push({ row, x0: clip(x0, width), x1: clip(x1, width), index: i, count: 1, dur: d });
      continue;
    }
    if (open && x0 <= open.x1 + minPx) {
      if (x1 > open.x1) open.x1 = clip(x1, width);
      open.count += 1;
      if (d > open.dur) { open.dur = d; open.index = i; }
      continue;
    }
    if (open) out.push(open);
    pending.set(row, { row, x0: clip(x0, width), x1: clip(x1, width), index: i, count: 1, dur: d });
  }
  for (const open of pending.values()) out.push(open);
  return out;
}

function clip(x, width) {
  return x < -1 ? -1 : x > width + 1 ? width + 1 : x;
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

/** A duration with units and 3 significant digits: "850 ns", "12.3 µs", "1.50 ms", "2.00 s". */
export function formatDuration(ns) {
  if (!Number.isFinite(ns)) return "–";
  if (ns === 0) return "0 ns";
  const unit = unitFor(ns);
  const v = ns / unit.ns;
  const a = Math.abs(v);
  if (unit.label === "ns") return `${Math.round(v)} ns`;
  const decimals = a >= 100 ? 0 : a >= 10 ? 1 : 2;
  return `${v.toFixed(decimals)} ${unit.label}`;
}

// ---------------------------------------------------------------------------------------------
// Lanes and colors

/**
 * Vertical layout: lanes ordered by rank, then as given (CPU before GPU per rank as the Python
 * side emits them). Returns {order: [lane objects], top: Map(id -> y), height: Map(id -> px),
 * total}. Each lane is `pad + rows * rowHeight + pad` tall.
 */
export function laneLayout(lanes, rowHeight = 16, pad = 4) {
  const order = lanes
    .map((lane, i) => ({ lane, i }))
    .sort((a, b) => (a.lane.rank ?? 0) - (b.lane.rank ?? 0) || a.i - b.i)
    .map((x) => x.lane);
  const top = new Map();
  const height = new Map();
  let y = 0;
  for (const lane of order) {
    const h = 2 * pad + Math.max(1, lane.rows | 0) * rowHeight;
    top.set(lane.id, y);
    height.set(lane.id, h);
    y += h;
  }
  return { order, top, height, total: y, rowHeight, pad };
}

/** Stable 32-bit FNV-1a hash of a string. */
export function hashString(s) {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** A stable fill color for an event name: hue from the hash, fixed saturation and lightness. */
export function colorForName(name) {
  const h = hashString(String(name));
  const hue = h % 360;
  const light = 52 + ((h >>> 9) % 3) * 7;
  return `hsl(${hue}, 58%, ${light}%)`;
}
