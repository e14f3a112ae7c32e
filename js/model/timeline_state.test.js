import { test } from "node:test";
import assert from "node:assert/strict";

import { createTimelineState, flowsOf, launchFlows, selectionRecord, selectionToKeep } from "./timeline_state.js";

test("the view is clamped to the trace and no narrower than minSpan", () => {
  const s = createTimelineState({ span: 1000, minSpan: 20 });
  assert.deepEqual(s.view, { start: 0, end: 1000 });
  assert.equal(s.zoomed(), false);
  assert.deepEqual(s.setView({ start: 100, end: 300 }), { start: 100, end: 300 });
  assert.equal(s.zoomed(), true);
  assert.deepEqual(s.setView({ start: 900, end: 1500 }), { start: 400, end: 1000 });
  assert.deepEqual(s.setView({ start: 500, end: 501 }), { start: 500, end: 520 });
  // Strings (from a Python dict) are numbers; garbage shows everything.
  assert.deepEqual(s.setView({ start: "10", end: "30" }), { start: 10, end: 30 });
  assert.deepEqual(s.setView(null), { start: 0, end: 1000 });
  assert.equal(s.zoomed(), false);
});

test("selecting keeps numbers and forgets the flows of the last selection", () => {
  const s = createTimelineState({ span: 1000 });
  s.select({ id: 4, lane: 1, row: 2, start_ns: 10, dur_ns: 5 });
  s.setFlows([[{ id: 4 }, { id: 9 }]]);
  s.addFlows([[{ id: 3 }, { id: 8 }]]);
  assert.equal(s.flows.length, 2);
  const sel = s.select({ id: "7", lane: "2", start_ns: "100", dur_ns: -3, count: 12 });
  assert.deepEqual(sel, { id: 7, lane: 2, row: 0, start_ns: 100, dur_ns: 0, count: 12 });
  assert.equal(s.selected, sel);
  assert.deepEqual(s.flows, []);
  assert.equal(s.isSelected(7), true);
  assert.equal(s.isSelected(4), false);
  s.clearSelection();
  assert.equal(s.selected, null);
  assert.equal(s.isSelected(7), false);
  assert.deepEqual(selectionRecord({ id: -1, lane: 0, start_ns: 5 }), { id: -1, lane: 0, row: 0, start_ns: 5, dur_ns: 0, count: 1 });
});

test("flows: from an event to its kernels, from its launch to it and to the launch's other work", () => {
  const launch = { id: 1, kernels: [{ id: 2 }, { id: 3 }] };
  const kernel = { id: 2, launch: { id: 1 }, kernels: [] };
  assert.deepEqual(flowsOf(kernel), [[kernel.launch, kernel]]);
  assert.deepEqual(flowsOf(launch), [[launch, launch.kernels[0]], [launch, launch.kernels[1]]]);
  assert.deepEqual(flowsOf({ id: 5 }), []);
  assert.deepEqual(launchFlows(kernel, launch), [[kernel.launch, { id: 3 }]]);
  assert.deepEqual(launchFlows(kernel, {}), []);
});

test("highlights group marks by lane and keep only well-formed windows", () => {
  const s = createTimelineState({ span: 1000 });
  const list = [
    { id: 1, lane: 2, start_ns: 50, dur_ns: 10 },
    { id: 2, lane: 2, start_ns: 10, dur_ns: 30 },
    { id: 3, lane: 5, start_ns: "x", dur_ns: 1 },
  ];
  const { marks, longest } = s.highlight(list, 42, [[0, 10], [20, 10], "bad", [30, 30]]);
  assert.equal(s.marks, marks);
  assert.equal(marks.label, "42");
  assert.equal(marks.count, 2);
  assert.deepEqual(marks.byLane.get(2).map((m) => m.id), [2, 1]);
  assert.deepEqual(marks.windows, [[0, 10], [30, 30]]);
  assert.equal(longest.id, 2);
  assert.equal(s.highlight([], undefined, null).marks.label, "");
  s.clearHighlight();
  assert.equal(s.marks, null);
});

test("ranges are clamped and ordered; the draft is drawn over the range while dragging", () => {
  const s = createTimelineState({ span: 1000 });
  assert.equal(s.shownRange(), null);
  assert.deepEqual(s.setRange(700, -50), { start: 0, end: 700 });
  assert.deepEqual(s.setRange(900, 1200), { start: 900, end: 1000 });
  s.setDraft(300, 200);
  assert.deepEqual(s.shownRange(), { start: 300, end: 200 });
  s.clearDraft();
  assert.deepEqual(s.shownRange(), { start: 900, end: 1000 });
  s.setDraft(1, 2);
  s.clearRange();
  assert.equal(s.range, null);
  assert.equal(s.draft, null);
});

test("Escape clears the range, then the selection, then the highlight", () => {
  const s = createTimelineState({ span: 1000 });
  assert.equal(s.escapeTarget(), null);
  s.highlight([{ id: 1, lane: 0, start_ns: 0, dur_ns: 1 }], "h");
  s.select({ id: 1, lane: 0, start_ns: 0, dur_ns: 1 });
  s.setDraft(1, 5);
  assert.equal(s.escapeTarget(), "range");
  s.clearRange();
  assert.equal(s.escapeTarget(), "selection");
  s.clearSelection();
  assert.equal(s.escapeTarget(), "highlight");
  s.clearHighlight();
  assert.equal(s.escapeTarget(), null);
  s.setRange(1, 5);
  assert.equal(s.escapeTarget(), "range");
});

test("groups collapse and expand", () => {
  const s = createTimelineState({ span: 1 });
  s.toggleGroup("CPU");
  assert.equal(s.collapsed.has("CPU"), true);
  assert.equal(s.expandGroup("CPU"), true);
  assert.equal(s.expandGroup("CPU"), false);
  s.toggleGroup("GPU");
  s.toggleGroup("GPU");
  assert.equal(s.collapsed.size, 0);
});

test("a selection to keep names its lane, not its id; merged boxes and unknown lanes are not kept", () => {
  const laneById = new Map([[3, { id: 3, label: "stream 7", group: "rank 0 · GPU 0" }]]);
  const sel = selectionRecord({ id: 12, lane: 3, start_ns: 100, dur_ns: 20 });
  assert.deepEqual(selectionToKeep(sel, laneById), { label: "stream 7", group: "rank 0 · GPU 0", start_ns: 100, dur_ns: 20 });
  assert.equal(selectionToKeep({ ...sel, id: -1 }, laneById), null);
  assert.equal(selectionToKeep({ ...sel, lane: 4 }, laneById), null);
  assert.equal(selectionToKeep(null, laneById), null);
});
