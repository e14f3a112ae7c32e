import { test } from "node:test";
import assert from "node:assert/strict";

import { buildCounterIndex, counterWindow, firstEntryAt, fitLaneRows, groupLayout, groupMarks, hitEntry, scrollTopToShow } from "./lanes.js";
import { buildSegmentIndex } from "./segments.js";
import { makeRand, randomEvents, segmentTable } from "./segment_fixtures.js";

const rand = makeRand(987654);

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

test("hit test of a layout entry: one sub-row of a lane, every sub-row of a summary", () => {
  const events = randomEvents(rand, 200, 2); // lanes 1 and 3, sub-rows 0..3
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

test("lanes grow to the sub-rows their events need, never shrink", () => {
  const { table } = segmentTable([
    { lane: 0, row: 0, start: 0, dur: 10 },
    { lane: 0, row: 2, start: 1, dur: 1 },
    { lane: 5, row: 0, start: 0, dur: 1 },
  ]);
  const index = buildSegmentIndex(table);
  const lanes = [{ id: 0, rows: 1, label: "a" }, { id: 5, rows: 4 }, { id: 7 }];
  const fitted = fitLaneRows(lanes, index);
  assert.deepEqual(fitted.map((l) => l.rows), [3, 4, 1]); // lane 0 uses rows 0..2
  assert.equal(fitted[0].label, "a");
  assert.equal(fitted[1], lanes[1]); // already tall enough: the same object
  assert.equal(lanes[0].rows, 1); // the input is not changed
});

test("scrolling a lane into sight: a row's margin, and no scroll when it is in sight", () => {
  const dims = { rowH: 10, pad: 2 };
  const lane = { kind: "lane", y: 500, h: 64 }; // 6 rows
  // In sight: stay.
  assert.equal(scrollTopToShow(lane, null, 450, 200, dims), 450);
  // Above the fold: its top a row below the plot's top.
  assert.equal(scrollTopToShow(lane, null, 600, 200, dims), 490);
  assert.equal(scrollTopToShow({ kind: "header", y: 5, h: 20 }, null, 100, 200, dims), 0);
  // Below: its bottom a row above the plot's bottom, but its top never out of sight.
  assert.equal(scrollTopToShow(lane, null, 0, 200, dims), 500 + 64 - 200 + 10);
  assert.equal(scrollTopToShow(lane, null, 0, 40, dims), 490);
  // A row of a tall lane: aim at the row (y + pad + row * rowH), not the lane's top.
  assert.equal(scrollTopToShow(lane, 5, 0, 100, dims), 552 + 10 - 100 + 10);
  assert.equal(scrollTopToShow(lane, 5, 545, 100, dims), 545);
  // Rows apply to lanes only; a summary row is shown whole.
  assert.equal(scrollTopToShow({ kind: "summary", y: 300, h: 14 }, 3, 0, 100, dims), 300 + 14 - 100 + 10);
});
