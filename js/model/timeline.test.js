import { test } from "node:test";
import assert from "node:assert/strict";

import {
  axisTicks,
  buildCounterIndex,
  buildLaneIndex,
  blockMatches,
  buildSegmentIndex,
  clampView,
  colorForName,
  colorIsDark,
  colorIndex,
  counterWindow,
  createBoxes,
  createDetailsCache,
  DIM_COLOR,
  eventAt,
  firstEntryAt,
  formatDuration,
  formatTime,
  formatValue,
  groupLayout,
  groupMarks,
  hitEntry,
  hitRow,
  idOfRow,
  keyToView,
  lodRow,
  lowerBound,
  paletteHsl,
  PALETTE_SIZE,
  planWindowRequest,
  rowOfId,
  rowRange,
  segmentsFromLaneColumn,
  viewForEvent,
  niceStep,
  pan,
  timeToX,
  upperBound,
  visibleRange,
  wheelZoomFactor,
  xToTime,
  zoomAt,
} from "./timeline.js";

// Brute force: indexes of a lane's events overlapping [t0, t1].
function overlapping(starts, durs, lanes, lane, t0, t1) {
  const out = [];
  for (let i = 0; i < starts.length; i++) {
    if (lanes[i] === lane && starts[i] <= t1 && starts[i] + durs[i] >= t0) out.push(i);
  }
  return out;
}

function inRange(index, starts, durs, lane, t0, t1) {
  const [i0, i1] = visibleRange(index, starts, lane, t0, t1);
  const out = [];
  for (let i = i0; i < i1; i++) if (starts[i] + durs[i] >= t0) out.push(i);
  return out;
}

test("binary search bounds", () => {
  const a = [1, 2, 2, 2, 5, 9];
  assert.equal(lowerBound(a, 2, 0, a.length), 1);
  assert.equal(upperBound(a, 2, 0, a.length), 4);
  assert.equal(lowerBound(a, 0, 0, a.length), 0);
  assert.equal(lowerBound(a, 10, 0, a.length), 6);
  assert.equal(lowerBound(a, 2, 2, 5), 2);
});

test("lane index ranges follow the sorted lane column", () => {
  const starts = Float64Array.from([0, 5, 1, 2, 3, 0]);
  const durs = Float32Array.from([1, 1, 1, 1, 1, 1]);
  const lanes = Uint16Array.from([0, 0, 2, 2, 2, 3]);
  const index = buildLaneIndex(starts, durs, lanes, 5);
  assert.deepEqual(Array.from(index.lo), [0, 0, 2, 5, 0]);
  assert.deepEqual(Array.from(index.hi), [2, 0, 5, 6, 0]);
  assert.equal(index.laneCount, 5);
  assert.throws(() => buildLaneIndex(starts, durs, Uint16Array.from([1, 1, 0, 0, 0, 0])), /not sorted/);
});

test("window search keeps a long event that starts before the window", () => {
  // Lane 0: a long event [0, 1000], then short ones [10,11], [20,21], ..., [90,91]; lane 1 follows.
  const starts = [0];
  const durs = [1000];
  const lanes = [0];
  for (let k = 1; k <= 9; k++) { starts.push(k * 10); durs.push(1); lanes.push(0); }
  starts.push(0, 500); durs.push(5, 5); lanes.push(1, 1);
  const S = Float64Array.from(starts);
  const D = Float32Array.from(durs);
  const L = Uint16Array.from(lanes);
  const index = buildLaneIndex(S, D, L);
  // Window [500, 600]: only the long event (index 0) overlaps in lane 0.
  assert.deepEqual(inRange(index, S, D, 0, 500, 600), [0]);
  assert.deepEqual(inRange(index, S, D, 0, 500, 600), overlapping(S, D, L, 0, 500, 600));
  // Window [35, 52]: the long event and [40,41], [50,51].
  assert.deepEqual(inRange(index, S, D, 0, 35, 52), [0, 4, 5]);
  // Lane 1 is searched only within its own rows.
  assert.deepEqual(inRange(index, S, D, 1, 400, 2000), [11]);
  // Lanes out of range are empty.
  assert.deepEqual(visibleRange(index, S, 7, 0, 10), [0, 0]);
});

test("window search agrees with brute force on random nested lanes", () => {
  let seed = 12345;
  const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
  const rows = [];
  for (let lane = 0; lane < 4; lane++) {
    for (let k = 0; k < 300; k++) {
      const long = rand() < 0.05;
      rows.push([lane, rand() * 10000, long ? rand() * 5000 : rand() * 30]);
    }
  }
  rows.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const S = Float64Array.from(rows.map((r) => r[1]));
  const D = Float32Array.from(rows.map((r) => r[2]));
  const L = Uint16Array.from(rows.map((r) => r[0]));
  const index = buildLaneIndex(S, D, L);
  for (let q = 0; q < 200; q++) {
    const lane = Math.floor(rand() * 4);
    const t0 = rand() * 10000;
    const t1 = t0 + rand() * 2000;
    assert.deepEqual(inRange(index, S, D, lane, t0, t1), overlapping(S, D, L, lane, t0, t1));
  }
});

test("time <-> pixel transform round-trips", () => {
  const view = { start: 1000, end: 3000 };
  assert.equal(timeToX(1000, view, 800), 0);
  assert.equal(timeToX(3000, view, 800), 800);
  assert.equal(timeToX(2000, view, 800), 400);
  assert.equal(xToTime(200, view, 800), 1500);
  assert.equal(xToTime(timeToX(2345, view, 800), view, 800), 2345);
});

test("zoom at the cursor keeps the anchor under the same pixel", () => {
  const view = { start: 0, end: 1000 };
  const anchor = 250;
  const z = zoomAt(view, anchor, 0.5, 1000);
  assert.equal(z.end - z.start, 500);
  assert.equal(z.start, 125);
  assert.ok(Math.abs(timeToX(anchor, z, 100) - timeToX(anchor, view, 100)) < 1e-9);
});

test("zoom is clamped to [0, span] and to the minimum span", () => {
  // Zooming out past the full span gives the full span.
  assert.deepEqual(zoomAt({ start: 100, end: 600 }, 500, 10, 1000), { start: 0, end: 1000 });
  // Zooming out near the right edge shifts back inside.
  const z = zoomAt({ start: 800, end: 1000 }, 1000, 2, 1000);
  assert.deepEqual(z, { start: 600, end: 1000 });
  // Zooming in stops at minSpan.
  const m = zoomAt({ start: 0, end: 1000 }, 500, 1e-9, 1000, 20);
  assert.equal(m.end - m.start, 20);
  assert.equal(m.start, 490);
  // Wheel deltas: down zooms out, up zooms in, zero does nothing.
  assert.ok(wheelZoomFactor(100) > 1);
  assert.ok(wheelZoomFactor(-100) < 1);
  assert.equal(wheelZoomFactor(0), 1);
  assert.ok(wheelZoomFactor(3, 1) > wheelZoomFactor(3, 0));
});

test("pan keeps the length and clamps at both ends", () => {
  assert.deepEqual(pan({ start: 100, end: 300 }, 50, 1000), { start: 150, end: 350 });
  assert.deepEqual(pan({ start: 100, end: 300 }, -500, 1000), { start: 0, end: 200 });
  assert.deepEqual(pan({ start: 700, end: 900 }, 500, 1000), { start: 800, end: 1000 });
  assert.deepEqual(clampView({ start: -50, end: 2000 }, 1000), { start: 0, end: 1000 });
  assert.deepEqual(clampView({ start: NaN, end: NaN }, 1000), { start: 0, end: 1000 });
});

test("niceStep uses 1-2-5 steps", () => {
  assert.equal(niceStep(0.7), 1);
  assert.equal(niceStep(1), 1);
  assert.equal(niceStep(1.1), 2);
  assert.equal(niceStep(3), 5);
  assert.equal(niceStep(7), 10);
  assert.equal(niceStep(1300), 2000);
  assert.equal(niceStep(45000), 50000);
});

test("axis ticks adapt units and spacing", () => {
  const ms = axisTicks({ start: 0, end: 10e6 }, 1000, 80);
  assert.equal(ms.step, 1e6); // 10 ms over 1000 px, >= 80 px apart -> 1 ms steps
  assert.equal(ms.unit, "ms");
  assert.deepEqual(ms.ticks.slice(0, 3).map((t) => t.label), ["0 ms", "1 ms", "2 ms"]);
  assert.equal(ms.ticks.length, 11);
  for (let k = 1; k < ms.ticks.length; k++) {
    assert.ok(ms.ticks[k].x - ms.ticks[k - 1].x >= 80);
  }
  const us = axisTicks({ start: 1234, end: 5678 }, 500, 80);
  assert.equal(us.unit, "µs");
  assert.equal(us.step, 1000);
  assert.deepEqual(us.ticks.map((t) => t.label), ["2 µs", "3 µs", "4 µs", "5 µs"]);
  const ns = axisTicks({ start: 0, end: 400 }, 800, 80);
  assert.equal(ns.unit, "ns");
  assert.equal(ns.step, 50);
  // Deep zoom far from 0: the unit follows the magnitude, decimals follow the step.
  const deep = axisTicks({ start: 5.3e9, end: 5.3e9 + 4000 }, 400, 80);
  assert.equal(deep.unit, "s");
  assert.equal(deep.step, 1000);
  assert.equal(deep.ticks[0].label, "5.300000 s");
  assert.equal(deep.ticks[1].label, "5.300001 s");
  const sec = axisTicks({ start: 0, end: 30e9 }, 600, 80);
  assert.equal(sec.unit, "s");
  assert.equal(sec.step, 5e9);
  assert.deepEqual(axisTicks({ start: 0, end: 0 }, 100).ticks, []);
});

test("durations carry units", () => {
  assert.equal(formatDuration(0), "0 ns");
  assert.equal(formatDuration(850), "850 ns");
  assert.equal(formatDuration(12345), "12.3 µs");
  assert.equal(formatDuration(1.5e6), "1.50 ms");
  assert.equal(formatDuration(250e6), "250 ms");
  assert.equal(formatDuration(2e9), "2.00 s");
});

// ---------------------------------------------------------------------------------------------
// Segment tables

let seed = 987654;
const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);

// A segment table the way Python lays one out: events sorted by (lane, start), ids = positions,
// one segment per lane. `events`: [{lane, row, start, dur, name}].
function segmentTable(events, meta = {}) {
  const sorted = events.map((e, k) => ({ ...e, k })).sort((a, b) => a.lane - b.lane || a.start - b.start || a.k - b.k);
  const segments = [];
  sorted.forEach((e, i) => {
    const last = segments[segments.length - 1];
    if (last && last[0] === e.lane) last[2]++;
    else segments.push([e.lane, i, 1]);
  });
  const columns = {
    start_ns: Float64Array.from(sorted.map((e) => e.start)),
    dur_ns: Float32Array.from(sorted.map((e) => e.dur)),
    name: Uint32Array.from(sorted.map((e) => e.name ?? 0)),
    row: Uint8Array.from(sorted.map((e) => e.row ?? 0)),
  };
  if (sorted.some((e) => e.count !== undefined)) columns.count = Uint32Array.from(sorted.map((e) => e.count ?? 1));
  return { table: { n: sorted.length, columns, meta: { segments, merged: false, ...meta } }, sorted };
}

// Random lanes: CPU-like nesting (a long outer op per row 0 span, inner ops on deeper rows) and
// GPU-like overlapping kernels packed on sub-rows.
function randomEvents(count, lanes = 3) {
  const events = [];
  for (let lane = 0; lane < lanes; lane++) {
    const rowEnd = [0, 0, 0, 0];
    let t = 0;
    for (let k = 0; k < count; k++) {
      t += rand() * 40;
      const dur = rand() < 0.05 ? rand() * 3000 : rand() * 30;
      // first free sub-row, as a packer would assign
      let row = rowEnd.findIndex((end) => end <= t);
      if (row < 0) row = 3;
      rowEnd[row] = Math.max(rowEnd[row], t + dur);
      events.push({ lane: lane * 2 + 1, row, start: t, dur, name: Math.floor(rand() * 7) });
    }
  }
  return events;
}

test("segment index: per-lane sub-rows, ids and lookups", () => {
  const { table } = segmentTable([
    { lane: 4, row: 0, start: 0, dur: 100, name: 1 },
    { lane: 4, row: 1, start: 10, dur: 5, name: 2 },
    { lane: 4, row: 0, start: 200, dur: 5, name: 1 },
    { lane: 9, row: 0, start: 5, dur: 1, name: 3 },
  ]);
  const index = buildSegmentIndex(table);
  assert.deepEqual(index.segments.map((s) => [s.lane, s.row0, s.count]), [[4, 0, 3], [9, 3, 1]]);
  const [chunk] = index.lanes.get(4);
  assert.equal(chunk.rows, 2);
  // Row 0 of lane 4 holds table rows 0 and 2 in start order, row 1 holds table row 1.
  assert.deepEqual(Array.from(index.perm.subarray(chunk.lo[0], chunk.hi[0])), [0, 2]);
  assert.deepEqual(Array.from(index.perm.subarray(chunk.lo[1], chunk.hi[1])), [1]);
  assert.equal(idOfRow(index, 2), 2);
  assert.equal(rowOfId(index, 3), 3);
  assert.equal(rowOfId(index, 4), -1);
  assert.deepEqual(eventAt(index, table, 3), { id: 3, lane: 9, row: 0, start_ns: 5, dur_ns: 1, name: 3, count: 1 });
  // A window reply holds a subset: ids start at the segment's first_id.
  const windowTable = { ...table, meta: { segments: [[4, 100, 3], [9, 500, 1]], merged: false } };
  const w = buildSegmentIndex(windowTable);
  assert.equal(idOfRow(w, 1), 101);
  assert.equal(rowOfId(w, 500), 3);
  // Merged tables have no ids.
  const merged = buildSegmentIndex({ ...table, meta: { segments: [[4, -1, 3], [9, -1, 1]], merged: true } });
  assert.equal(idOfRow(merged, 0), -1);
  assert.equal(rowOfId(merged, 0), -1);
  // Tables without meta fall back to the lane column.
  assert.deepEqual(segmentsFromLaneColumn(Uint16Array.from([0, 0, 3, 3, 3, 5])), [[0, 0, 2], [3, 2, 3], [5, 5, 1]]);
});

test("segment index rejects tables that break the contract", () => {
  const { table } = segmentTable([{ lane: 0, start: 5, dur: 1 }, { lane: 0, start: 9, dur: 1 }]);
  assert.throws(() => buildSegmentIndex({ ...table, meta: { segments: [[0, 0, 1]] } }), /cover 1 of 2 rows/);
  assert.throws(() => buildSegmentIndex({ ...table, meta: { segments: [[0, 0, 3]] } }), /runs past/);
  const unsorted = { ...table, columns: { ...table.columns, start_ns: Float64Array.from([9, 5]) } };
  assert.throws(() => buildSegmentIndex(unsorted), /not sorted by start/);
  assert.equal(buildSegmentIndex({ n: 0, columns: {}, meta: {} }).n, 0);
});

test("window search per sub-row agrees with brute force (long and overlapping events)", () => {
  const events = randomEvents(400);
  const { table, sorted } = segmentTable(events);
  const index = buildSegmentIndex(table);
  for (let q = 0; q < 200; q++) {
    const lane = 1 + 2 * Math.floor(rand() * 3);
    const t0 = rand() * 9000;
    const t1 = t0 + rand() * 1500;
    const found = [];
    for (const chunk of index.lanes.get(lane)) {
      for (let r = 0; r < chunk.rows; r++) {
        const [k0, k1] = rowRange(index, chunk.lo[r], chunk.hi[r], t0, t1);
        for (let k = k0; k < k1; k++) if (index.start[k] + index.dur[k] >= t0) found.push(index.perm[k]);
      }
    }
    const expected = [];
    sorted.forEach((e, i) => {
      if (e.lane === lane && e.start <= t1 && e.start + Math.fround(e.dur) >= t0) expected.push(i);
    });
    assert.deepEqual(found.sort((a, b) => a - b), expected);
  }
});

test("hit test finds the containing event, else the nearest within slack", () => {
  const events = randomEvents(300, 1);
  const { table, sorted } = segmentTable(events);
  const index = buildSegmentIndex(table);
  const [chunk] = index.lanes.get(1);
  for (let q = 0; q < 300; q++) {
    const row = Math.floor(rand() * chunk.rows);
    const t = rand() * 6000;
    const slack = rand() < 0.5 ? 0 : 5;
    const k = hitRow(index, chunk.lo[row], chunk.hi[row], t, slack);
    // Brute force: among this row's events, the smallest distance, then the shortest.
    let best = -1;
    let bestKey = [Infinity, Infinity];
    sorted.forEach((e, i) => {
      if (e.row !== row) return;
      const d = Math.fround(e.dur);
      const dist = t < e.start ? e.start - t : t > e.start + d ? t - e.start - d : 0;
      if (dist > slack) return;
      if (dist < bestKey[0] || (dist === bestKey[0] && d < bestKey[1])) { best = i; bestKey = [dist, d]; }
    });
    if (best < 0) assert.equal(k, -1);
    else {
      const got = index.perm[k];
      const g = sorted[got];
      const gd = Math.fround(g.dur);
      const gdist = t < g.start ? g.start - t : t > g.start + gd ? t - g.start - gd : 0;
      assert.deepEqual([gdist, gd], bestKey); // ties may pick another event with the same key
    }
  }
});

function lodAll(index, lane, view, width, minPx = 1, mask = null, maskBlocks = null) {
  const out = createBoxes(4);
  const perRow = [];
  for (const chunk of index.lanes.get(lane)) {
    for (let r = 0; r < chunk.rows; r++) {
      const before = out.n;
      const [k0, k1] = rowRange(index, chunk.lo[r], chunk.hi[r], view.start, view.end);
      lodRow(index, k0, k1, view, width, minPx, out, mask, maskBlocks);
      for (let b = before; b < out.n; b++) perRow.push({ row: r, x0: out.x0[b], x1: out.x1[b], pos: out.pos[b], count: out.count[b], match: out.match[b] });
    }
  }
  return perRow;
}

test("LOD merges sub-pixel runs per sub-row and keeps wide events", () => {
  // View 0..1000 ns on 100 px: 10 ns per pixel.
  const { table } = segmentTable([
    { lane: 0, row: 0, start: 0, dur: 2, name: 0 },
    { lane: 0, row: 0, start: 3, dur: 2, name: 1 },
    { lane: 0, row: 0, start: 6, dur: 5, name: 2 },
    { lane: 0, row: 0, start: 12, dur: 2, name: 3 },
    { lane: 0, row: 0, start: 100, dur: 200, name: 4 },
    { lane: 0, row: 0, start: 500, dur: 2, name: 5 },
    { lane: 0, row: 1, start: 0, dur: 2, name: 6 },
    { lane: 0, row: 1, start: 10, dur: 2, name: 6 },
  ]);
  const index = buildSegmentIndex(table);
  const view = { start: 0, end: 1000 };
  const boxes = lodAll(index, 0, view, 100);
  const row0 = boxes.filter((b) => b.row === 0);
  assert.equal(row0.length, 3);
  assert.equal(row0[0].count, 4); // the first four merged
  assert.equal(table.columns.name[index.perm[row0[0].pos]], 2); // the longest (5 ns) stands for them
  assert.ok(Math.abs(row0[0].x0) < 1e-9 && Math.abs(row0[0].x1 - 1.4) < 1e-9);
  assert.equal(row0[1].count, 1);
  assert.equal(row0[1].x1 - row0[1].x0, 20);
  assert.equal(row0[2].count, 1);
  const row1 = boxes.filter((b) => b.row === 1);
  assert.equal(row1.length, 1);
  assert.equal(row1[0].count, 2);
  // Zoomed in, nothing merges.
  assert.ok(lodAll(index, 0, { start: 0, end: 20 }, 1000).every((b) => b.count === 1));
  // Search mask: a merged box matches when any member's name matches.
  const mask = new Uint8Array(8);
  mask[1] = 1;
  const masked = lodAll(index, 0, view, 100, 1, mask).filter((b) => b.row === 0);
  assert.deepEqual(masked.map((b) => b.match), [1, 0, 0]);
});

test("LOD never drops an event: box counts add up to the events in view", () => {
  const { table, sorted } = segmentTable(randomEvents(2000, 2));
  const index = buildSegmentIndex(table);
  for (const [view, width] of [[{ start: 0, end: 80000 }, 300], [{ start: 1000, end: 3000 }, 800], [{ start: 2500, end: 2600 }, 1200]]) {
    for (const lane of [1, 3]) {
      const boxes = lodAll(index, lane, view, width);
      const inView = sorted.filter((e) => e.lane === lane && e.start <= view.end && e.start + Math.fround(e.dur) >= view.start);
      assert.equal(boxes.reduce((s, b) => s + b.count, 0), inView.length);
      // Per sub-row too: overlapping kernels on another sub-row are drawn in their own row.
      for (let r = 0; r < 4; r++) {
        assert.equal(boxes.filter((b) => b.row === r).reduce((s, b) => s + b.count, 0), inView.filter((e) => e.row === r).length);
      }
      // Boxes in one sub-row never go backwards.
      for (let r = 0; r < 4; r++) {
        const xs = boxes.filter((b) => b.row === r).map((b) => b.x0);
        for (let k = 1; k < xs.length; k++) assert.ok(xs[k] >= xs[k - 1]);
      }
    }
  }
});

test("LOD sums the count column of already-merged rows", () => {
  const { table } = segmentTable([
    { lane: 2, start: 0, dur: 1, count: 10 },
    { lane: 2, start: 2, dur: 1, count: 5 },
    { lane: 2, start: 500, dur: 300, count: 1 },
  ]);
  table.meta = { segments: [[2, -1, 3]], merged: true };
  const boxes = lodAll(buildSegmentIndex(table), 2, { start: 0, end: 1000 }, 100);
  assert.deepEqual(boxes.map((b) => b.count), [15, 1]);
});

test("counter lanes: per-lane ranges, extremes and the sample holding at the window start", () => {
  const counters = {
    n: 6,
    columns: { time_ns: Float64Array.from([0, 10, 20, 5, 15, 25]), value: Float64Array.from([1, 4, 2, 7, -1, 3]) },
    meta: { segments: [[8, 0, 3], [9, 0, 3]] },
  };
  const idx = buildCounterIndex(counters);
  assert.deepEqual(idx.get(8), { lo: 0, hi: 3, min: 1, max: 4 });
  assert.deepEqual(idx.get(9), { lo: 3, hi: 6, min: -1, max: 7 });
  const t = counters.columns.time_ns;
  assert.deepEqual(counterWindow(t, 0, 3, 12, 18), [1, 2]); // value 4 holds from 10
  assert.deepEqual(counterWindow(t, 0, 3, -5, 10), [0, 2]);
  assert.deepEqual(counterWindow(t, 3, 6, 30, 40), [5, 6]);
  assert.equal(buildCounterIndex(null).size, 0);
});

test("group layout: headers, lanes, collapsed summaries", () => {
  const lanes = [
    { id: 0, kind: "cpu", group: "CPU", rows: 3 },
    { id: 1, kind: "cpu", group: "CPU", rows: 1 },
    { id: 2, kind: "gpu", group: "GPU 0", rows: 2 },
    { id: 3, kind: "counter", group: "counters" },
    { id: 4, kind: "counter", group: "counters" },
  ];
  const dims = { rowH: 10, pad: 2, headerH: 15, counterH: 30 };
  const open = groupLayout(lanes, new Set(), dims);
  assert.deepEqual(open.entries.map((e) => e.kind), ["header", "lane", "lane", "header", "lane", "header", "lane", "lane"]);
  const heights = [15, 2 * 2 + 3 * 10, 2 * 2 + 10, 15, 2 * 2 + 2 * 10, 15, 30, 30];
  assert.deepEqual(open.entries.map((e) => e.h), heights);
  let y = 0;
  open.entries.forEach((e, k) => { assert.equal(e.y, y); y += heights[k]; });
  assert.equal(open.total, y);
  assert.equal(open.entryOfLane.get(2), open.entries[4]);

  const shut = groupLayout(lanes, new Set(["CPU", "counters"]), dims);
  assert.deepEqual(shut.entries.map((e) => e.kind), ["header", "summary", "header", "lane", "header"]);
  assert.deepEqual(shut.entries[1].lanes.map((l) => l.id), [0, 1]);
  assert.equal(shut.entries[1].h, 2 * 2 + 10);
  assert.equal(shut.entryOfLane.get(1), shut.entries[1]);
  assert.equal(shut.entryOfLane.get(4), shut.entries[4]); // counters collapse to their header
  assert.equal(shut.total, 15 + 14 + 15 + 24 + 15);
  // Lanes without a group have no header.
  assert.deepEqual(groupLayout([{ id: 0, rows: 1 }], new Set(), dims).entries.map((e) => e.kind), ["lane"]);
  assert.equal(firstEntryAt(open.entries, 0), 0);
  assert.equal(firstEntryAt(open.entries, 15 + 34 + 1), 2);
  assert.equal(firstEntryAt(open.entries, 1e9), open.entries.length);
});

test("keys map to view transitions", () => {
  const view = { start: 1000, end: 2000 };
  const opts = { span: 10000, minSpan: 10, anchor: 1200 };
  const w = keyToView("w", view, opts);
  assert.ok(Math.abs(w.end - w.start - 800) < 1e-9);
  // The anchor keeps its place: 20 % from the left before and after.
  assert.ok(Math.abs((1200 - w.start) / (w.end - w.start) - 0.2) < 1e-9);
  const s = keyToView("S", view, opts);
  assert.ok(Math.abs(s.end - s.start - 1250) < 1e-9);
  assert.ok(Math.abs((1200 - s.start) / (s.end - s.start) - 0.2) < 1e-9);
  // Without an anchor: the centre.
  const c = keyToView("w", view, { span: 10000 });
  assert.ok(Math.abs((c.start + c.end) / 2 - 1500) < 1e-9);
  assert.deepEqual(keyToView("a", view, opts), { start: 800, end: 1800 });
  assert.deepEqual(keyToView("d", view, opts), { start: 1200, end: 2200 });
  assert.deepEqual(keyToView("a", { start: 50, end: 1050 }, opts), { start: 0, end: 1000 });
  assert.deepEqual(keyToView("0", view, opts), { start: 0, end: 10000 });
  assert.equal(keyToView("x", view, opts), null);
  // Zooming in stops at minSpan; out at the span.
  let v = view;
  for (let k = 0; k < 100; k++) v = keyToView("w", v, opts);
  assert.ok(Math.abs(v.end - v.start - 10) < 1e-9);
  for (let k = 0; k < 100; k++) v = keyToView("s", v, opts);
  assert.deepEqual(v, { start: 0, end: 10000 });
});

test("zooming to an event leaves a margin and respects the span", () => {
  assert.deepEqual(viewForEvent(1000, 200, 10000, 10, 0.25), { start: 950, end: 1250 });
  const tiny = viewForEvent(1000, 0, 10000, 20, 0.25);
  assert.ok(tiny.start < 1000 && tiny.end > 1000);
  assert.ok(Math.abs(tiny.end - tiny.start - 30) < 1e-9);
  assert.deepEqual(viewForEvent(0, 100, 1000, 10, 0.5), { start: 0, end: 200 });
});

test("window requests: only when the overview or the held window is too coarse", () => {
  const span = 8192e3; // 1000 ns per overview bin
  // Whole span on 1000 px: 8192 ns per pixel, the overview suffices.
  assert.equal(planWindowRequest({ start: 0, end: span }, 1000, span, null), null);
  // 100 us on 1000 px: 100 ns per pixel, finer than the overview's bins.
  const view = { start: 1e6, end: 1.1e6 };
  const plan = planWindowRequest(view, 1000, span, null);
  assert.deepEqual(plan, { start: 1e6 - 25e3, end: 1.1e6 + 25e3, width: 1500 });
  // Real events held over the view: nothing to ask.
  assert.equal(planWindowRequest(view, 1000, span, { start: 0.9e6, end: 1.2e6, merged: false, width: 1 }), null);
  // Merged bins of the plan's own reply: fine at this zoom, too coarse 4x deeper.
  const held = { ...plan, merged: true };
  assert.equal(planWindowRequest(view, 1000, span, held), null);
  assert.notEqual(planWindowRequest({ start: 1.04e6, end: 1.065e6 }, 1000, span, held), null);
  // A window that does not cover the view is asked again; edges are clamped to the span.
  const edge = planWindowRequest({ start: 0, end: 1e5 }, 1000, span, held);
  assert.equal(edge.start, 0);
  assert.equal(edge.width, 1250);
});

test("colors: stable per name, banded per kind, one palette", () => {
  assert.equal(colorForName("volta_sgemm_128x64_nn"), colorForName("volta_sgemm_128x64_nn"));
  const names = Array.from({ length: 50 }, (_, k) => `kernel_${k}`);
  assert.ok(new Set(names.map((n) => colorIndex(n, "kernel"))).size > 10);
  const hueOf = (name, kind) => paletteHsl(colorIndex(name, kind))[0];
  for (const n of names) {
    const memcpy = hueOf(n, "memcpy");
    assert.ok(memcpy >= 348 || memcpy <= 18, `memcpy hue ${memcpy}`);
    const memset = hueOf(n, "memset");
    assert.ok(memset >= 280 && memset <= 325);
    const kernel = hueOf(n, "kernel");
    assert.ok(kernel >= 45 && kernel <= 265);
    assert.ok(paletteHsl(colorIndex(n, "op"))[2] > paletteHsl(colorIndex(n, "kernel"))[2]); // ops lighter
    assert.ok(paletteHsl(colorIndex(n, "runtime"))[1] < 30); // runtime greyish
    assert.ok(colorIndex(n, "op") < PALETTE_SIZE && colorIndex(n, "nonsense") < PALETTE_SIZE);
  }
  assert.notEqual(colorIndex("x", "kernel"), DIM_COLOR);
  assert.ok(paletteHsl(colorIndex("x"), true)[2] < paletteHsl(colorIndex("x"), false)[2]);
  assert.match(colorForName("x", "memcpy"), /^hsl\(\d+, \d+%, \d+%\)$/);
});

test("counter values carry units", () => {
  assert.equal(formatValue(1.5e9, "B"), "1.50 GB");
  assert.equal(formatValue(512, "B"), "512 B");
  assert.equal(formatValue(73.24, "%"), "73.2 %");
  assert.equal(formatValue(12345, ""), "12.3 k");
  assert.equal(formatValue(NaN, "B"), "–");
});

test("LOD block skipping draws exactly what the event-by-event loop draws", () => {
  // Dense narrow events with occasional long ones, in two sub-rows, merged-table counts.
  const events = [];
  let t = 0;
  for (let k = 0; k < 5000; k++) {
    t += rand() * 10;
    const dur = rand() < 0.01 ? 200 + rand() * 2000 : rand() * 5;
    events.push({ lane: 0, row: k % 7 === 0 ? 1 : 0, start: t, dur, name: k % 5, count: 1 + (k % 3) });
  }
  const { table } = segmentTable(events);
  const index = buildSegmentIndex(table);
  const linear = { ...index, blockMaxDur: null };
  const span = t + 2000;
  for (const [view, width] of [[{ start: 0, end: span }, 500], [{ start: span * 0.2, end: span * 0.5 }, 700], [{ start: 1000, end: 1300 }, 900], [{ start: -50, end: span }, 37]]) {
    const a = lodAll(index, 0, view, width);
    const b = lodAll(linear, 0, view, width);
    assert.equal(a.length, b.length);
    for (let i = 0; i < a.length; i++) {
      assert.equal(a[i].count, b[i].count);
      assert.equal(a[i].row, b[i].row);
      assert.ok(Math.abs(a[i].x0 - b[i].x0) < 1e-9 && Math.abs(a[i].x1 - b[i].x1) < 1e-9);
      assert.equal(index.dur[a[i].pos], index.dur[b[i].pos]); // the longest member, whichever tie
    }
    // And the counts equal the brute-force number of (weighted) events in view.
    const expected = events.filter((e) => e.start <= view.end && e.start + Math.fround(e.dur) >= view.start).reduce((s, e) => s + e.count, 0);
    assert.equal(a.reduce((s, x) => s + x.count, 0), expected);
  }
  // With a search mask and its block summary: the same boxes and the same match flags.
  const mask = Uint8Array.from([0, 0, 1, 0, 0]);
  const blocks = blockMatches(index, mask);
  for (const [view, width] of [[{ start: 0, end: span }, 500], [{ start: span * 0.2, end: span * 0.5 }, 700]]) {
    const a = lodAll(index, 0, view, width, 1, mask, blocks);
    const b = lodAll(linear, 0, view, width, 1, mask);
    assert.deepEqual(a.map((x) => [x.count, x.match]), b.map((x) => [x.count, x.match]));
    assert.ok(a.some((x) => x.match === 1) && b.length > 0);
  }
  // The full view of 5000 narrow events collapses to a handful of boxes.
  assert.ok(lodAll(index, 0, { start: 0, end: span }, 500).length < 200);
});

test("points in time keep the decimals their resolution needs", () => {
  assert.equal(formatTime(100236733, 1), "100.236733 ms");
  assert.equal(formatTime(100236733, 1e5), "100.2 ms");
  assert.equal(formatTime(100236733, 1e6), "100 ms");
  assert.equal(formatTime(5.3e9 + 1234, 1), "5.300001234 s");
  assert.equal(formatTime(850, 1), "850 ns");
  assert.equal(formatTime(0, 1), "0 ns");
  assert.equal(formatTime(NaN), "–");
});

test("hit test of a layout entry: one sub-row of a lane, every sub-row of a summary", () => {
  const events = randomEvents(200, 2); // lanes 1 and 3, sub-rows 0..3
  const { table, sorted } = segmentTable(events);
  const index = buildSegmentIndex(table);
  const rowsOf = (lane) => 1 + Math.max(...sorted.filter((e) => e.lane === lane).map((e) => e.row));
  const lane1 = { id: 1, rows: rowsOf(1) };
  const lane3 = { id: 3, rows: Math.max(1, rowsOf(3) - 1) }; // laid out one row short
  // Brute force over the events a plotted row shows: nearest within slack, then the shortest.
  function expected(accept, t, slack) {
    let best = null;
    for (const e of sorted) {
      if (!accept(e)) continue;
      const d = Math.fround(e.dur);
      const dist = t < e.start ? e.start - t : t > e.start + d ? t - e.start - d : 0;
      if (dist > slack) continue;
      if (!best || dist < best.dist || (dist === best.dist && d < best.d)) best = { e, dist, d };
    }
    return best;
  }
  for (let q = 0; q < 300; q++) {
    const t = rand() * 4000;
    const slack = rand() < 0.5 ? 0 : 8;
    const lane = rand() < 0.5 ? lane1 : lane3;
    const row = Math.floor(rand() * lane.rows);
    const cases = [
      [{ kind: "lane", lanes: [lane] }, row, (e) => e.lane === lane.id && Math.min(e.row, lane.rows - 1) === row],
      [{ kind: "summary", lanes: [lane1, lane3] }, 0, () => true],
    ];
    for (const [entry, r, accept] of cases) {
      const k = hitEntry(index, entry, r, t, slack);
      const want = expected(accept, t, slack);
      if (!want) {
        assert.equal(k, -1);
        continue;
      }
      assert.ok(k >= 0);
      const got = sorted[index.perm[k]];
      const gd = Math.fround(got.dur);
      const gdist = t < got.start ? got.start - t : t > got.start + gd ? t - got.start - gd : 0;
      // Ties may pick either member; distance and duration must be the brute force's.
      assert.equal(gdist, want.dist);
      assert.equal(gd, want.d);
      assert.ok(accept(got));
    }
  }
});

test("dark colors by luminance", () => {
  // Rec. 709 luma against the midpoint, computed here by hand.
  assert.equal(colorIsDark("#000"), true);
  assert.equal(colorIsDark("#ffffff"), false);
  assert.equal(colorIsDark("#1e1e1e"), true);
  assert.equal(colorIsDark("rgb(200, 200, 200)"), false);
  assert.equal(colorIsDark("rgba(10,20,30,0.5)"), true);
  // Pure green is bright (0.7152 * 255 = 182), pure blue dark (0.0722 * 255 = 18).
  assert.equal(colorIsDark("#0f0"), false);
  assert.equal(colorIsDark("#0000ff"), true);
  assert.equal(colorIsDark("white"), false);
  assert.equal(colorIsDark(""), false);
});

test("details cache: one request per id, failures retried, oldest dropped past the limit", async () => {
  const asked = [];
  const cache = createDetailsCache((id) => {
    asked.push(id);
    return id < 0 ? Promise.reject(new Error(`bad ${id}`)) : Promise.resolve({ id });
  }, 2);
  const [a, b] = await Promise.all([cache.fetch(1), cache.fetch(1)]);
  assert.deepEqual(asked, [1]);
  assert.equal(a, b);
  assert.equal(cache.get(1), a);
  await assert.rejects(cache.fetch(-1), /bad -1/);
  await assert.rejects(cache.fetch(-1), /bad -1/);
  assert.deepEqual(asked, [1, -1, -1]);
  assert.equal(cache.has(-1), false);
  await cache.fetch(2);
  await cache.fetch(3);
  assert.equal(cache.has(1), false);
  assert.ok(cache.has(2) && cache.has(3));
  await cache.fetch(3);
  assert.deepEqual(asked, [1, -1, -1, 2, 3]);
  await assert.rejects(createDetailsCache(null).fetch(1), /no details source/);
});

test("highlight marks grouped per lane in start order, the longest found, junk skipped", () => {
  const list = [
    { id: 7, lane: 2, row: 1, start_ns: 50, dur_ns: 5 },
    { id: "8", lane: "2", start_ns: "10", dur_ns: 40 },
    { id: 9, lane: 0, start_ns: 30, dur_ns: -3 },
    { id: 10, lane: 0, start_ns: "x", dur_ns: 100 },
    null,
  ];
  const { count, byLane, longest } = groupMarks(list);
  assert.equal(count, 3);
  assert.deepEqual([...byLane.keys()].sort(), [0, 2]);
  assert.deepEqual(byLane.get(2).map((m) => [m.id, m.row, m.start_ns, m.dur_ns]), [[8, 0, 10, 40], [7, 1, 50, 5]]);
  assert.deepEqual(byLane.get(0).map((m) => m.dur_ns), [0]);
  assert.equal(longest.id, 8);
  assert.deepEqual(groupMarks(undefined), { count: 0, byLane: new Map(), longest: null });
});
