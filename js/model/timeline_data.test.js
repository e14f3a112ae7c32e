import { test } from "node:test";
import assert from "node:assert/strict";

import { colorIndex } from "./colors.js";
import { segmentTable } from "./segment_fixtures.js";
import { buildSegmentIndex } from "./segments.js";
import { MIN_SPAN_NS, prepareTimeline } from "./timeline_data.js";
import { selectionRecord, selectionToKeep } from "./timeline_state.js";

const LANES = [
  { id: 0, kind: "cpu", group: "rank 0 · CPU", label: "thread 1", rows: 1 },
  { id: 1, kind: "gpu", group: "key-0-gpu", group_label: "GPU 0", label: "stream 7", title: "rank 0 · GPU 0 · stream 7", rows: 1 },
  { id: 9, kind: "gpu", label: "loose", title: "loose" },
];

function sample(extra = {}) {
  const { table } = segmentTable([
    { lane: 0, row: 0, start: 0, dur: 100, name: 0 },
    { lane: 0, row: 1, start: 10, dur: 20, name: 1 },
    { lane: 1, row: 0, start: 40, dur: 5000, name: 2 },
  ]);
  return {
    lanes: LANES,
    names: ["aten::mm", "aten::add", "sgemm_kernel"],
    nameKinds: [0, 0, 2],
    // As Python sends them (python/gpuprofile/widget/timeline.py KINDS).
    kinds: ["op", "runtime", "kernel", "memcpy", "memset"],
    span: 1000,
    table,
    ...extra,
  };
}

test("nothing to show: an empty plot that says so", () => {
  const d = prepareTimeline({});
  assert.equal(d.loadError, null);
  assert.equal(d.emptyText, "no timeline events");
  assert.equal(d.span, 1);
  assert.equal(d.minSpan, 1);
  assert.equal(d.complete, true);
  assert.equal(d.totalEvents, 0);
  assert.deepEqual(d.lanes, []);
});

test("a table that cannot be read is an error to show, not an exception", () => {
  const { table } = segmentTable([{ lane: 0, start: 0, dur: 1 }]);
  table.meta.segments = [[0, 0, 5]];
  const d = prepareTimeline({ table, lanes: LANES });
  assert.match(d.loadError, /^cannot read the timeline: .*runs past row 1/);
  assert.equal(d.emptyText, d.loadError);
  assert.equal(d.overview.n, 0);
});

test("span, lanes, counts and completeness", () => {
  const d = prepareTimeline(sample());
  // The kernel ends after the span the data gives: the span stretches to it.
  assert.equal(d.span, 5040);
  assert.equal(d.minSpan, MIN_SPAN_NS);
  assert.equal(d.lanes[0].rows, 2); // grown to its sub-rows
  assert.equal(d.laneById.get(1), d.lanes[1]);
  assert.equal(d.totalEvents, 3);
  assert.equal(d.complete, true);
  assert.equal(d.emptyText, null);
  const partial = prepareTimeline(sample({ totalEvents: 3e6, complete: false }));
  assert.equal(partial.totalEvents, 3e6);
  assert.equal(partial.complete, false);
});

test("names, kinds and lane labels as tooltips and details show them", () => {
  const d = prepareTimeline(sample());
  assert.equal(d.nameText(2), "sgemm_kernel");
  assert.equal(d.nameText(3), "");
  assert.equal(d.nameText(-1), "");
  assert.equal(d.kindName(0), "op");
  assert.equal(d.kindName(1), "op");
  assert.equal(d.kindName(2), "kernel");
  assert.equal(d.kindName(7), "");
  assert.equal(d.laneText(1), "rank 0 · GPU 0 · stream 7");
  assert.equal(d.laneText(9), "loose");
  assert.equal(d.laneText(4), "lane 4");
  // Lane 0 has no title, as in a notebook saved by an older version: its group and label.
  assert.equal(d.laneText(0), "rank 0 · CPU · thread 1");
  // Colours by name within the band of the name's kind; out-of-range indexes as an empty kernel.
  assert.equal(d.colorOf(0), colorIndex("aten::mm", "op"));
  assert.equal(d.colorOf(1), colorIndex("aten::add", "op"));
  assert.equal(d.colorOf(2), colorIndex("sgemm_kernel", "kernel"));
  assert.notEqual(d.colorOf(0), colorIndex("aten::mm", "kernel"));
  assert.equal(d.colorOf(3), colorIndex("", "kernel"));
  assert.equal(d.colorOf(-1), colorIndex("", "kernel"));
});

test("an event's name by index, by id from the overview or the detail window, or as given", () => {
  const d = prepareTimeline(sample());
  // Rows sorted by (lane, start): id 1 is lane 0's second event, "aten::add".
  assert.equal(d.nameIndexOf({ id: 1 }), 1);
  assert.equal(d.evName({ id: 2 }), "sgemm_kernel");
  assert.equal(d.nameIndexOf({ id: 1, name: 2 }), 2);
  assert.equal(d.evName({ id: 99, name: "from the source" }), "from the source");
  assert.equal(d.nameIndexOf({ id: 99 }), -1);
  assert.equal(d.evName({ id: 99 }), "");
  // A detail window holding id 99 (its first event) answers for it.
  const { table } = segmentTable([{ lane: 1, start: 50, dur: 1, name: 0 }]);
  table.meta.segments = [[1, 99, 1]];
  const detail = { index: prepareTimeline({ table }).overview, table, start: 40, end: 60 };
  assert.equal(d.nameIndexOf({ id: 99 }, detail), 0);
  assert.equal(d.evName({ id: 99 }, detail), "aten::mm");
  // Times the window covers are looked up there; the rest in the overview.
  assert.equal(d.tablesAt(50, detail).table, table);
  assert.equal(d.tablesAt(61, detail).index, d.overview);
  assert.equal(d.tablesAt(50, null).table, d.table);
});

test("a kept selection is found again in new data by lane, start and duration", () => {
  const d = prepareTimeline(sample());
  const ev = d.findAgain({ label: "stream 7", group: "key-0-gpu", start_ns: 40, dur_ns: 5000 });
  assert.deepEqual([ev.id, ev.lane, ev.start_ns, ev.dur_ns, ev.name], [2, 1, 40, 5000, 2]);
  assert.equal(d.findAgain({ label: "stream 7", group: "key-0-gpu", start_ns: 41, dur_ns: 5000 }), null);
  assert.equal(d.findAgain({ label: "stream 8", group: "key-0-gpu", start_ns: 40, dur_ns: 5000 }), null);
  // A merged overview has no single events to find.
  const merged = sample();
  merged.table.meta.merged = true;
  assert.equal(prepareTimeline(merged).findAgain({ label: "stream 7", group: "key-0-gpu", start_ns: 40, dur_ns: 5000 }), null);
});

test("a kept selection the merged overview cannot hold is found in a detail window", () => {
  // The whole profile after a live run: a merged overview (past Python's detail threshold),
  // then the window the kernel sends once it answers again, holding single events.
  const merged = sample();
  merged.table.meta.merged = true;
  const d = prepareTimeline(merged);
  const sel = { label: "stream 7", group: "key-0-gpu", start_ns: 40, dur_ns: 5000 };
  const { table } = segmentTable([
    { lane: 1, row: 0, start: 30, dur: 5, name: 2 },
    { lane: 1, row: 0, start: 40, dur: 5000, name: 2 },
  ]);
  const detail = { index: buildSegmentIndex(table), table, start: 0, end: 6000 };
  const found = d.findAgain(sel, detail);
  assert.deepEqual([found.lane, found.start_ns, found.dur_ns, found.name], [1, 40, 5000, 2]);
  // A window that merges its events holds none to find either.
  table.meta.merged = true;
  assert.equal(d.findAgain(sel, { index: buildSegmentIndex(table), table, start: 0, end: 6000 }), null);
});

test("a kept selection waits for a detail window of single events that overlaps it", () => {
  // A long event (a ProfilerStep from 40 to 5040 ns) selected while zoomed into its middle:
  // the window of that view begins after the event does, and holds it all the same.
  const merged = sample();
  merged.table.meta.merged = true;
  const d = prepareTimeline(merged);
  const sel = { label: "stream 7", group: "key-0-gpu", start_ns: 40, dur_ns: 5000 };
  const { table } = segmentTable([{ lane: 1, row: 0, start: 40, dur: 5000, name: 2 }]);
  const inside = { index: buildSegmentIndex(table), table, start: 2000, end: 3000 };
  assert.equal(d.canFind(sel, inside), true);
  assert.deepEqual([d.findAgain(sel, inside)?.start_ns, d.findAgain(sel, inside)?.dur_ns], [40, 5000]);
  // Windows that end before it starts or begin after it ends (40 + 5000), or none: not yet.
  assert.equal(d.canFind(sel, { ...inside, start: 0, end: 39 }), false);
  assert.equal(d.canFind(sel, { ...inside, start: 5041, end: 9000 }), false);
  assert.equal(d.canFind(sel, null), false);
  // The window's edges touch it: it holds it (Python's window_ids: end >= t0, start <= t1).
  assert.equal(d.canFind(sel, { ...inside, start: 5040, end: 9000 }), true);
  // A window of merged boxes cannot tell.
  const { table: boxes } = segmentTable([{ lane: 1, row: 0, start: 40, dur: 5000, name: 2 }]);
  boxes.meta.merged = true;
  assert.equal(d.canFind(sel, { index: buildSegmentIndex(boxes), table: boxes, start: 2000, end: 3000 }), false);
  // A window over it without the event: it is gone, and the selection with it (null, no error).
  const gone = { label: "stream 7", group: "key-0-gpu", start_ns: 41, dur_ns: 5000 };
  assert.equal(d.canFind(gone, inside), true);
  assert.equal(d.findAgain(gone, inside), null);
  // Data whose overview holds single events can always answer.
  assert.equal(prepareTimeline(sample()).canFind(sel, null), true);
});

test("a live refill keeps the selected event though its id moved: held by lane and time, found again", () => {
  // The refill adds a window's events; the CPU lane, sorted first, grows, so every GPU event's
  // id (its position) moves up by two.
  const before = prepareTimeline(sample());
  const chosen = selectionRecord({ id: 2, lane: 1, start_ns: 40, dur_ns: 5000 });
  const kept = selectionToKeep(chosen, before.laneById);
  const { table } = segmentTable([
    { lane: 0, row: 0, start: 0, dur: 100, name: 0 },
    { lane: 0, row: 1, start: 10, dur: 20, name: 1 },
    { lane: 0, row: 0, start: 6000, dur: 100, name: 0 },
    { lane: 0, row: 1, start: 6010, dur: 20, name: 1 },
    { lane: 1, row: 0, start: 40, dur: 5000, name: 2 },
    { lane: 1, row: 0, start: 6040, dur: 5000, name: 2 },
  ]);
  const after = prepareTimeline(sample({ table, span: 12000 }));
  const found = after.findAgain(kept);
  assert.deepEqual([found.id, found.lane, found.start_ns, found.dur_ns], [4, 1, 40, 5000]);
});
