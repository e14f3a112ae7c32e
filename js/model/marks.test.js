import { test } from "node:test";
import assert from "node:assert/strict";
import { encodeTable } from "./decode.js";
import { decodeTable } from "./decode.js";
import { envelope, eventRow, eventRows, evidenceGroup, heaviest, indexMarks, pointGroup, zoomSpan } from "./marks.js";

function table(rows, groups) {
  const col = (k, T) => T.from(rows.map((r) => r[k]));
  return decodeTable(encodeTable({
    group: col("group", Uint32Array),
    id: col("id", Uint32Array),
    lane: col("lane", Uint16Array),
    row: col("row", Uint16Array),
    start_ns: col("start_ns", Float64Array),
    dur_ns: col("dur_ns", Float32Array),
    name: col("name", Uint32Array),
  }, { groups }));
}

const GROUPS = [
  { kind: "hint", hint: 0, evidence: 0 },
  { kind: "point", point: 3 },
  { kind: "hint", hint: 0, evidence: 1 },
];
const ROWS = [
  { group: 0, id: 5, lane: 1, row: 0, start_ns: 10, dur_ns: 5, name: 2 },
  { group: 0, id: 9, lane: 1, row: 1, start_ns: 30, dur_ns: 50, name: 2 },
  { group: 1, id: 7, lane: 2, row: 0, start_ns: 20, dur_ns: 8, name: 4 },
];

test("rows come back per group with their fields", () => {
  const marks = indexMarks(table(ROWS, GROUPS));
  assert.deepEqual(marks.rowsOf(0).map((r) => r.id), [5, 9]);
  assert.deepEqual(marks.rowsOf(1), [{ id: 7, lane: 2, row: 0, start_ns: 20, dur_ns: 8, name: 4 }]);
  assert.deepEqual(marks.rowsOf(2), []); // a group with no events on the timeline
  assert.deepEqual(marks.rowsOf(7), []);
});

test("groups are found by hint evidence and by point", () => {
  assert.equal(evidenceGroup(GROUPS, 0, 1), 2);
  assert.equal(evidenceGroup(GROUPS, 1, 0), -1);
  assert.equal(pointGroup(GROUPS, 3), 1);
  assert.equal(pointGroup(GROUPS, 0), -1);
});

test("envelope and heaviest", () => {
  assert.deepEqual(envelope([[40, 50], [10, 20], [30, 90]]), [10, 90]);
  assert.equal(envelope([]), null);
  assert.equal(heaviest(ROWS).id, 9);
  assert.equal(heaviest([]), null);
});

test("an empty or missing table is no marks", () => {
  const marks = indexMarks(decodeTable(new Uint8Array(0)));
  assert.deepEqual(marks.groups, []);
  assert.deepEqual(marks.rowsOf(0), []);
});

test("an event table's rows, as highlight() takes them", () => {
  const t = decodeTable(encodeTable({
    id: Uint32Array.from([9, 4]), lane: Uint16Array.from([1, 0]), row: Uint16Array.from([0, 2]),
    start_ns: Float64Array.from([5, 8]), dur_ns: Float32Array.from([1, 2]),
  }));
  assert.deepEqual(eventRows(t), [
    { id: 9, lane: 1, row: 0, start_ns: 5, dur_ns: 1 },
    { id: 4, lane: 0, row: 2, start_ns: 8, dur_ns: 2 },
  ]);
  assert.deepEqual(eventRows(decodeTable(new Uint8Array(0))), []);
  assert.deepEqual(eventRows(null), []);
});

test("one event row from columns; a table without a row column puts events on row 0", () => {
  const columns = {
    id: Uint32Array.from([9, 4]), lane: Uint16Array.from([1, 0]), row: Uint16Array.from([0, 2]),
    start_ns: Float64Array.from([5, 8]), dur_ns: Float32Array.from([1, 2]),
  };
  assert.deepEqual(eventRow(columns, 1), { id: 4, lane: 0, row: 2, start_ns: 8, dur_ns: 2 });
  const { row, ...rowless } = columns;
  assert.equal(row.length, 2);
  assert.deepEqual(eventRow(rowless, 1), { id: 4, lane: 0, row: 0, start_ns: 8, dur_ns: 2 });
  // The marks' rows are the same rows, with their names.
  const marks = indexMarks(table(ROWS, GROUPS));
  const c = table(ROWS, GROUPS).columns;
  assert.deepEqual(marks.rowsOf(0), [{ ...eventRow(c, 0), name: 2 }, { ...eventRow(c, 1), name: 2 }]);
});

test("zoom span: the preferred event if marked, else the longest, else none", () => {
  const rows = ROWS.map(({ group, ...r }) => r);
  assert.deepEqual(zoomSpan(rows, 7), [20, 28]);
  assert.deepEqual(zoomSpan(rows, 5), [10, 15]);
  // Unknown or missing preferred id: the longest (id 9, 30 + 50).
  assert.deepEqual(zoomSpan(rows, 42), [30, 80]);
  assert.deepEqual(zoomSpan(rows), [30, 80]);
  assert.deepEqual(zoomSpan(rows, null), [30, 80]);
  assert.equal(zoomSpan([], 5), null);
});
