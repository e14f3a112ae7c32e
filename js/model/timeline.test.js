import { test } from "node:test";
import assert from "node:assert/strict";

import {
  axisTicks,
  buildLaneIndex,
  clampView,
  colorForName,
  formatDuration,
  laneLayout,
  lodBoxes,
  lowerBound,
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

test("LOD merges consecutive sub-pixel events per row and keeps wide ones", () => {
  // View 0..1000 ns on 100 px: 10 ns per pixel.
  const view = { start: 0, end: 1000 };
  const cols = {
    //         tiny run (row 0)      wide   tiny far  other row  tiny
    start_ns: Float64Array.from([0, 3, 6, 9, 100, 500, 0, 10]),
    dur_ns: Float32Array.from([2, 2, 5, 2, 200, 2, 2, 2]),
    row: Uint16Array.from([0, 0, 0, 0, 0, 0, 1, 1]),
  };
  const boxes = lodBoxes(cols, 0, 8, view, 100, 1);
  const row0 = boxes.filter((b) => b.row === 0).sort((a, b) => a.x0 - b.x0);
  const row1 = boxes.filter((b) => b.row === 1);
  assert.equal(row0.length, 3);
  assert.equal(row0[0].count, 4); // events 0..3 merged
  assert.equal(row0[0].index, 2); // the longest (5 ns) stands for the merged box
  assert.ok(Math.abs(row0[0].x0 - 0) < 1e-9 && Math.abs(row0[0].x1 - 1.1) < 1e-9);
  assert.equal(row0[1].count, 1); // the wide one, as is
  assert.equal(row0[1].index, 4);
  assert.equal(row0[1].x1 - row0[1].x0, 20);
  assert.equal(row0[2].count, 1); // far away: its own box
  assert.equal(row0[2].index, 5);
  // Events in another row never merge with row 0's.
  assert.equal(row1.length, 1);
  assert.equal(row1[0].count, 2);
  // Zoomed in, nothing merges.
  const fine = lodBoxes(cols, 0, 8, { start: 0, end: 20 }, 1000, 1);
  assert.ok(fine.every((b) => b.count === 1));
  // Events outside the view are dropped.
  const part = lodBoxes(cols, 0, 8, { start: 400, end: 600 }, 100, 1);
  assert.deepEqual(part.map((b) => b.index).sort(), [5]);
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

test("lane layout stacks rows and groups by rank", () => {
  const lanes = [
    { id: 0, rank: 1, kind: "cpu", rows: 3 },
    { id: 1, rank: 0, kind: "cpu", rows: 1 },
    { id: 2, rank: 0, kind: "gpu", rows: 2 },
  ];
  const layout = laneLayout(lanes, 10, 2);
  assert.deepEqual(layout.order.map((l) => l.id), [1, 2, 0]);
  assert.equal(layout.top.get(1), 0);
  assert.equal(layout.height.get(1), 14);
  assert.equal(layout.top.get(2), 14);
  assert.equal(layout.top.get(0), 14 + 24);
  assert.equal(layout.total, 14 + 24 + 34);
});

test("colors are stable per name and differ across names", () => {
  assert.equal(colorForName("volta_sgemm_128x64_nn"), colorForName("volta_sgemm_128x64_nn"));
  assert.notEqual(colorForName("aten::mm"), colorForName("aten::add"));
  assert.match(colorForName("x"), /^hsl\(\d+, 58%, \d+%\)$/);
});
