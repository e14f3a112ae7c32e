import { test } from "node:test";
import assert from "node:assert/strict";

import { blockMatches, createBoxes, lodRow } from "./lod.js";
import { buildSegmentIndex, rowRange } from "./segments.js";
import { makeRand, randomEvents, segmentTable } from "./segment_fixtures.js";

const rand = makeRand(987654);

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
  const { table, sorted } = segmentTable(randomEvents(rand, 2000, 2));
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
