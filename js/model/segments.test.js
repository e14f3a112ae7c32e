import { test } from "node:test";
import assert from "node:assert/strict";

import {
  buildSegmentIndex,
  eventAt,
  hitRow,
  idOfRow,
  lowerBound,
  rowAt,
  rowOfId,
  rowRange,
  segmentsFromLaneColumn,
  traceSpan,
  upperBound,
} from "./segments.js";
import { makeRand, randomEvents, segmentTable } from "./segment_fixtures.js";

const rand = makeRand(987654);

test("binary search bounds", () => {
  const a = [1, 2, 2, 2, 5, 9];
  assert.equal(lowerBound(a, 2, 0, a.length), 1);
  assert.equal(upperBound(a, 2, 0, a.length), 4);
  assert.equal(lowerBound(a, 0, 0, a.length), 0);
  assert.equal(lowerBound(a, 10, 0, a.length), 6);
  assert.equal(lowerBound(a, 2, 2, 5), 2);
});

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

test("an event is found again by its lane, start and duration", () => {
  const { table } = segmentTable([
    { lane: 4, row: 0, start: 0, dur: 100, name: 1 },
    { lane: 4, row: 1, start: 10, dur: 5, name: 2 },
    { lane: 4, row: 2, start: 10, dur: 7.3, name: 5 },
    { lane: 4, row: 0, start: 200, dur: 5, name: 1 },
    { lane: 9, row: 0, start: 10, dur: 5, name: 3 },
  ]);
  const index = buildSegmentIndex(table);
  // Two events of lane 4 start at 10: the duration (as float32 sent it) tells them apart.
  assert.deepEqual(eventAt(index, table, rowAt(index, table, 4, 10, 7.3)).name, 5);
  assert.deepEqual(eventAt(index, table, rowAt(index, table, 4, 10, 5)).name, 2);
  assert.equal(eventAt(index, table, rowAt(index, table, 9, 10, 5)).lane, 9);
  assert.equal(rowAt(index, table, 4, 11, 5), -1);
  assert.equal(rowAt(index, table, 7, 10, 5), -1);
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
  const events = randomEvents(rand, 400);
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
  const events = randomEvents(rand, 300, 1);
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

test("trace span: the given span stretched to the latest event end", () => {
  const events = randomEvents(rand, 100, 2);
  const { table } = segmentTable(events);
  const index = buildSegmentIndex(table);
  const latest = Math.max(...events.map((e) => e.start + Math.fround(e.dur)));
  assert.equal(traceSpan(0, index), latest);
  assert.equal(traceSpan(latest * 2, index), latest * 2);
  assert.equal(traceSpan("junk", index), latest);
  assert.equal(traceSpan(0, buildSegmentIndex(null)), 1);
  assert.equal(traceSpan(250, buildSegmentIndex(null)), 250);
});
