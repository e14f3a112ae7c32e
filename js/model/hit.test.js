import { test } from "node:test";
import assert from "node:assert/strict";

import { entryAt, hitTest, HIT_SLACK_PX } from "./hit.js";
import { groupLayout } from "./lanes.js";
import { segmentTable } from "./segment_fixtures.js";
import { prepareTimeline } from "./timeline_data.js";

const DIMS = { axisH: 24, rowH: 16, pad: 3, headerH: 20, counterH: 36 };
const LANES = [
  { id: 0, kind: "cpu", group: "CPU", label: "thread", rows: 2 },
  { id: 1, kind: "gpu", group: "GPU", label: "stream", rows: 1 },
  { id: 2, kind: "counter", group: "GPU", label: "util", unit: "%" },
];

function setup() {
  const { table } = segmentTable([
    { lane: 0, row: 0, start: 0, dur: 1000, name: 0 },
    { lane: 0, row: 1, start: 100, dur: 50, name: 1 },
    { lane: 1, row: 0, start: 500, dur: 100, name: 2 },
  ]);
  const counters = {
    n: 3,
    columns: { time_ns: Float64Array.from([200, 400, 800]), value: Float64Array.from([10, 50, 20]) },
    meta: { segments: [[2, 0, 3]] },
  };
  const data = prepareTimeline({ lanes: LANES, names: ["outer", "inner", "kernel"], span: 1000, table, counters });
  const layout = groupLayout(data.lanes, new Set(), DIMS);
  // 1 ns per pixel right of a 100 px label column; nothing scrolled.
  const g = { entries: layout.entries, scrollTop: 0, labelW: 100, plotW: 1000, view: { start: 0, end: 1000 }, detail: null, dims: DIMS };
  return { data, layout, g };
}

/** Canvas y of the middle of sub-row `row` of a lane's entry. */
function rowY(layout, laneId, row, g) {
  const e = layout.entryOfLane.get(laneId);
  return DIMS.axisH + e.y - g.scrollTop + DIMS.pad + row * DIMS.rowH + DIMS.rowH / 2;
}

test("the entry at a height: none over the axis strip or below the last, scrolled entries shift", () => {
  const { layout } = setup();
  const entries = layout.entries; // CPU header, thread (2 rows), GPU header, stream, util
  assert.equal(entryAt(entries, 10, 0, 24), null);
  assert.equal(entryAt(entries, 24, 0, 24), entries[0]);
  assert.equal(entryAt(entries, 24 + 20, 0, 24).lanes[0].id, 0);
  assert.equal(entryAt(entries, 24, 20, 24).lanes[0].id, 0);
  assert.equal(entryAt(entries, 24 + layout.total, 0, 24), null);
});

test("a point over an event hits it, on its own sub-row; the innermost of nested events", () => {
  const { data, layout, g } = setup();
  const hit = hitTest(100 + 120, rowY(layout, 0, 1, g), g, data);
  assert.equal(hit.ev.name, 1);
  assert.equal(hit.lane, data.laneById.get(0));
  assert.equal(hitTest(100 + 120, rowY(layout, 0, 0, g), g, data).ev.name, 0);
  assert.equal(hitTest(100 + 550, rowY(layout, 1, 0, g), g, data).ev.id, 2);
  // Within the slack of the end, not beyond it.
  assert.equal(hitTest(100 + 600 + HIT_SLACK_PX, rowY(layout, 1, 0, g), g, data).ev.id, 2);
  assert.equal(hitTest(100 + 600 + HIT_SLACK_PX + 1, rowY(layout, 1, 0, g), g, data), null);
});

test("nothing is hit in the label column, the axis, a header or a lane's padding", () => {
  const { data, layout, g } = setup();
  assert.equal(hitTest(50, rowY(layout, 0, 0, g), g, data), null);
  assert.equal(hitTest(300, 10, g, data), null);
  assert.equal(hitTest(300, DIMS.axisH + 5, g, data), null); // the CPU header
  const lane = layout.entryOfLane.get(0);
  assert.equal(hitTest(300, DIMS.axisH + lane.y + 1, g, data), null); // top padding
  // Scrolled by a lane's height, the same point shows what lies further down.
  const scrolled = { ...g, scrollTop: lane.h };
  assert.equal(hitTest(100 + 550, rowY(layout, 1, 0, g) - lane.h, scrolled, data).ev.id, 2);
});

test("a counter lane answers the sample holding at the point, none before the first", () => {
  const { data, layout, g } = setup();
  const e = layout.entryOfLane.get(2);
  const y = DIMS.axisH + e.y + e.h / 2;
  const hit = hitTest(100 + 450, y, g, data);
  assert.deepEqual({ ...hit.counter, lane: hit.counter.lane.id }, { lane: 2, t: 450, time: 400, value: 50 });
  assert.equal(hitTest(100 + 900, y, g, data).counter.value, 20);
  assert.equal(hitTest(100 + 150, y, g, data), null);
});

test("where a detail window covers the point, its events are hit, not the overview's", () => {
  const { data, layout, g } = setup();
  const { table } = segmentTable([{ lane: 1, start: 520, dur: 10, name: 1 }]);
  table.meta.segments = [[1, 77, 1]];
  const detail = { index: prepareTimeline({ table }).overview, table, start: 510, end: 540 };
  const withDetail = { ...g, detail };
  const hit = hitTest(100 + 525, rowY(layout, 1, 0, g), withDetail, data);
  assert.deepEqual([hit.ev.id, hit.ev.name], [77, 1]);
  assert.equal(hitTest(100 + 580, rowY(layout, 1, 0, g), withDetail, data).ev.id, 2);
});
