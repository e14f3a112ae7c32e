// @ts-check
// Lanes as the timeline stacks them: the vertical layout of lane groups, the event under a
// point of a plotted row, counter lanes' sample ranges, and highlight marks grouped per lane.
// No DOM; unit-tested.

import { laneRanks } from "./ranks.js";
import { hitRow, upperBound } from "./segments.js";

/** @typedef {import("./segments.js").SegmentIndex} SegmentIndex */
/**
 * A lane as Python sends it (the `lanes` trait): a CPU thread, a GPU stream or a counter, with
 * rank, device, stream (or pid, tid) as fields; `group` is its group's key, `group_label` the
 * group's name under its rank ("GPU 0"), `title` the lane in one line ("rank 1 · GPU 1 ·
 * stream 7"), all from gpuprofile/report/lanes.py, whose Lane Struct report_types.d.ts is
 * generated from.
 * @typedef {import("./report_types.js").Lane} Lane
 */
/**
 * A row of the vertical layout: a rank's header, a group's header, a lane, or a collapsed group's
 * (or rank's) summary row; `label` is what its header or summary row says.
 * @typedef {{kind: "rank" | "header" | "lane" | "summary", group: string, label?: string, rank?: number, y: number, h: number, lanes: Lane[], collapsed?: boolean}} LayoutEntry
 */
/** @typedef {{entries: LayoutEntry[], entryOfLane: Map<number, LayoutEntry>, total: number}} Layout */
/** Heights in px: a sub-row, a lane's padding, a group header, a counter lane. @typedef {{rowH?: number, pad?: number, headerH?: number, counterH?: number}} LayoutDims */
/** A counter lane's rows [lo, hi) of the counters table and its extremes. @typedef {{lo: number, hi: number, min: number, max: number}} CounterInfo */
/** @typedef {{id: number, lane: number, row: number, start_ns: number, dur_ns: number}} Mark */

// ---------------------------------------------------------------------------------------------
// Lane groups and vertical layout

/**
 * Vertical layout in display order (the lanes list's order). Each group (lane.group; lanes of
 * one group are contiguous) gets a header row; an expanded group then lists its lanes, a
 * collapsed one shows a single summary row covering all its event lanes (or only the header
 * when it has none, e.g. counters). Entries: {kind: "rank"|"header"|"lane"|"summary", group, y,
 * h, lanes: [lane...]}, plus `entryOfLane` (lane id -> the entry where that lane is drawn).
 *
 * Lanes of more than one rank (lane.rank; a rank's lanes are contiguous): each rank starts with
 * a "rank" header over its groups (whose headers say lane.group_label: "GPU 3", not the key);
 * a rank in `collapsedRanks` shows one summary row of its GPU lanes (its CPU lanes when it has
 * no GPU lane), and its other lanes are drawn on its header.
 * @param {Lane[]} lanes
 * @param {ReadonlySet<string>} [collapsed] groups shown collapsed
 * @param {LayoutDims} [dims]
 * @param {ReadonlySet<number>} [collapsedRanks] ranks shown collapsed
 * @returns {Layout}
 */
export function groupLayout(lanes, collapsed = new Set(), dims = {}, collapsedRanks = new Set()) {
  const { rowH = 16, pad = 3, headerH = 20, counterH = 36 } = dims;
  /** @type {LayoutEntry[]} */
  const entries = [];
  /** @type {Map<number, LayoutEntry>} */
  const entryOfLane = new Map();
  const byRank = laneRanks(lanes).length > 1;
  let y = 0;

  /**
   * @param {Lane[]} members lanes of one rank (or all lanes)
   * @param {number | undefined} rank
   */
  function addGroups(members, rank) {
    let k = 0;
    while (k < members.length) {
      const group = members[k].group ?? "";
      let j = k;
      while (j < members.length && (members[j].group ?? "") === group) j++;
      const own = members.slice(k, j);
      const isCollapsed = group !== "" && collapsed.has(group);
      const label = own[0].group_label ?? group;
      /** @type {LayoutEntry | null} */
      let header = null;
      if (group !== "") {
        header = { kind: "header", group, label, rank, y, h: headerH, lanes: own, collapsed: isCollapsed };
        entries.push(header);
        y += headerH;
      }
      if (isCollapsed) {
        const eventLanes = own.filter((l) => l.kind !== "counter");
        // (A collapsed group has a header: the group is not "".)
        let summary = /** @type {LayoutEntry} */ (header);
        if (eventLanes.length) {
          summary = { kind: "summary", group, rank, y, h: 2 * pad + rowH, lanes: eventLanes };
          entries.push(summary);
          y += summary.h;
        }
        for (const lane of own) entryOfLane.set(lane.id, lane.kind === "counter" ? /** @type {LayoutEntry} */ (header) : summary);
      } else {
        for (const lane of own) {
          const h = lane.kind === "counter" ? counterH : 2 * pad + Math.max(1, (lane.rows ?? 0) | 0) * rowH;
          /** @type {LayoutEntry} */
          const entry = { kind: "lane", group, rank, y, h, lanes: [lane] };
          entries.push(entry);
          entryOfLane.set(lane.id, entry);
          y += h;
        }
      }
      k = j;
    }
  }

  if (!byRank) {
    addGroups(lanes, undefined);
    return { entries, entryOfLane, total: y };
  }
  let k = 0;
  while (k < lanes.length) {
    const rank = lanes[k].rank;
    let j = k;
    while (j < lanes.length && lanes[j].rank === rank) j++;
    const members = lanes.slice(k, j);
    const isCollapsed = rank !== undefined && collapsedRanks.has(rank);
    /** @type {LayoutEntry} */
    const header = { kind: "rank", group: `rank ${rank}`, label: `rank ${rank}`, rank, y, h: headerH, lanes: members, collapsed: isCollapsed };
    entries.push(header);
    y += headerH;
    if (isCollapsed) {
      const gpu = members.filter((l) => l.kind === "gpu");
      const shown = gpu.length ? gpu : members.filter((l) => l.kind === "cpu");
      let summary = header;
      if (shown.length) {
        const what = gpu.length ? `GPU stream${gpu.length === 1 ? "" : "s"}` : `CPU thread${shown.length === 1 ? "" : "s"}`;
        summary = { kind: "summary", group: header.group, label: `${shown.length} ${what}`, rank, y, h: 2 * pad + rowH, lanes: shown };
        entries.push(summary);
        y += summary.h;
      }
      for (const lane of members) entryOfLane.set(lane.id, shown.includes(lane) ? summary : header);
    } else {
      addGroups(members, rank);
    }
    k = j;
  }
  return { entries, entryOfLane, total: y };
}

/**
 * Lanes as many rows tall as they say, or as the index's sub-rows need (lanes that fit are kept).
 * @param {Lane[]} lanes
 * @param {SegmentIndex} index
 * @returns {(Lane & {rows: number})[]}
 */
export function fitLaneRows(lanes, index) {
  return lanes.map((lane) => {
    let rows = Math.max(1, (lane.rows ?? 0) | 0);
    for (const chunk of index.lanes.get(lane.id) ?? []) rows = Math.max(rows, chunk.rows);
    return rows === lane.rows ? /** @type {Lane & {rows: number}} */ (lane) : { ...lane, rows };
  });
}

/**
 * The scroll position that brings a layout entry (given a row: that row of a "lane" entry) into
 * a plot `visibleH` px tall, with a row's height of margin; `scrollTop` when it is in sight.
 * @param {LayoutEntry} entry
 * @param {number | null} row
 * @param {number} scrollTop
 * @param {number} visibleH
 * @param {LayoutDims} [dims]
 * @returns {number}
 */
export function scrollTopToShow(entry, row, scrollTop, visibleH, dims = {}) {
  const { rowH = 16, pad = 3 } = dims;
  // A deep CPU stack can be taller than the plot: aim at the row, not the lane's top.
  const top = entry.kind === "lane" && row !== null ? entry.y + pad + Math.max(0, row) * rowH : entry.y;
  const h = entry.kind === "lane" && row !== null ? rowH : entry.h;
  if (top < scrollTop) return Math.max(0, top - rowH);
  if (top + h > scrollTop + visibleH) return Math.min(top - rowH, top + h - visibleH + rowH);
  return scrollTop;
}

/**
 * Index of the first entry whose bottom is below y (entries are in y order).
 * @param {LayoutEntry[]} entries
 * @param {number} y
 * @returns {number}
 */
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

/**
 * The event of `index` under time t on one plotted row of a layout entry (see groupLayout): for a
 * "lane" entry only sub-row `row` (sub-rows past the lane's last draw on its last), for a
 * "summary" entry every sub-row of every member lane. Nearest first, then the shortest (the
 * innermost of nested events). Returns its position, or -1.
 * @param {SegmentIndex} index
 * @param {LayoutEntry} entry
 * @param {number} row
 * @param {number} t
 * @param {number} [slack]
 * @returns {number}
 */
export function hitEntry(index, entry, row, t, slack = 0) {
  let best = -1;
  let bestKey = Infinity;
  for (const lane of entry.lanes) {
    for (const chunk of index.lanes.get(lane.id) ?? []) {
      for (let r = 0; r < chunk.rows; r++) {
        if (entry.kind === "lane" && Math.min(r, (lane.rows ?? 1) - 1) !== row) continue;
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
// Counter lanes (step functions: a value holds from its sample time until the next sample)

/**
 * Per counter lane: {lo, hi, min, max} over the counters table's rows (meta.segments).
 * @param {import("./decode.js").Table | null | undefined} counters the decoded counters table
 * @returns {Map<number, CounterInfo>}
 */
export function buildCounterIndex(counters) {
  /** @type {Map<number, CounterInfo>} */
  const out = new Map();
  const n = counters?.n ?? 0;
  /** @type {Partial<Record<string, import("./decode.js").Column>>} */
  const cols = counters?.columns ?? {};
  const segments = counters?.meta?.segments ?? [];
  const values = cols.value;
  if (!n || !cols.time_ns || !values) return out;
  let row0 = 0;
  for (const [lane, , count] of segments) {
    const lo = row0;
    const hi = Math.min(n, row0 + count);
    let min = Infinity;
    let max = -Infinity;
    for (let i = lo; i < hi; i++) {
      const v = values[i];
      if (v < min) min = v;
      if (v > max) max = v;
    }
    out.set(lane, { lo, hi, min, max });
    row0 = hi;
  }
  return out;
}

/**
 * Samples [k0, k1) that shape the step plot over [t0, t1]: from the one holding at t0.
 * @param {ArrayLike<number>} times
 * @param {number} lo
 * @param {number} hi
 * @param {number} t0
 * @param {number} t1
 * @returns {[number, number]}
 */
export function counterWindow(times, lo, hi, t0, t1) {
  const k0 = Math.max(lo, upperBound(times, t0, lo, hi) - 1);
  const k1 = upperBound(times, t1, k0, hi);
  return [k0, Math.max(k0, k1)];
}

// ---------------------------------------------------------------------------------------------
// Highlight marks

/**
 * Events to highlight, as the timeline outlines them: per lane, sorted by start, with numeric
 * fields; entries without a finite start are skipped. Returns {count, byLane, longest}.
 * @param {Iterable<{id?: unknown, lane?: unknown, row?: unknown, start_ns?: unknown, dur_ns?: unknown} | null | undefined> | null | undefined} list
 * @returns {{count: number, byLane: Map<number, Mark[]>, longest: Mark | null}}
 */
export function groupMarks(list) {
  /** @type {Map<number, Mark[]>} */
  const byLane = new Map();
  let count = 0;
  for (const m of list ?? []) {
    if (!m || !Number.isFinite(Number(m.start_ns))) continue;
    const lane = Number(m.lane);
    let marks = byLane.get(lane);
    if (!marks) byLane.set(lane, (marks = []));
    marks.push({ id: Number(m.id), lane, row: Number(m.row) || 0, start_ns: Number(m.start_ns), dur_ns: Math.max(0, Number(m.dur_ns) || 0) });
    count += 1;
  }
  /** @type {Mark | null} */
  let longest = null;
  for (const arr of byLane.values()) {
    arr.sort((a, b) => a.start_ns - b.start_ns);
    for (const m of arr) if (!longest || m.dur_ns > longest.dur_ns) longest = m;
  }
  return { count, byLane, longest };
}
