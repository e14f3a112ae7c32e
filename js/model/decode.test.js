import { test } from "node:test";
import assert from "node:assert/strict";

import { decodeTable, decodeWire, encodeTable } from "./decode.js";

// Build a GPT1 buffer by hand, the way encoding.py lays it out: magic, uint32 LE header length,
// a JSON header padded with spaces, then each column at an 8-aligned offset from the start.
function buildGpt1(columns, { magic = "GPT1", pad = 7, meta } = {}) {
  const names = Object.keys(columns);
  const n = names.length ? columns[names[0]].values.length : 0;
  const sizes = { float64: 8, float32: 4, uint32: 4, uint16: 2, uint8: 1, int32: 4, int16: 2, int8: 1 };
  const placeholder = JSON.stringify({
    n,
    columns: names.map((name) => ({ name, dtype: columns[name].dtype, offset: 10 ** 15 })),
    ...(meta === undefined ? {} : { meta }),
  });
  const reserved = new TextEncoder().encode(placeholder).length + pad;
  const align = (x) => Math.ceil(x / 8) * 8;
  let offset = align(8 + reserved);
  const specs = names.map((name) => {
    const spec = { name, dtype: columns[name].dtype, offset };
    offset = align(offset + n * sizes[spec.dtype]);
    return spec;
  });
  const headerJson = JSON.stringify({ n, columns: specs, ...(meta === undefined ? {} : { meta }) });
  const header = new TextEncoder().encode(headerJson.padEnd(reserved - (new TextEncoder().encode(headerJson).length - headerJson.length), " "));
  const buf = new ArrayBuffer(offset);
  const dv = new DataView(buf);
  for (let i = 0; i < 4; i++) dv.setUint8(i, magic.charCodeAt(i));
  dv.setUint32(4, header.length, true);
  new Uint8Array(buf, 8, header.length).set(header);
  for (const spec of specs) {
    const { values } = columns[spec.name];
    const size = sizes[spec.dtype];
    values.forEach((v, i) => {
      const at = spec.offset + i * size;
      switch (spec.dtype) {
        case "float64": dv.setFloat64(at, v, true); break;
        case "float32": dv.setFloat32(at, v, true); break;
        case "uint32": dv.setUint32(at, v, true); break;
        case "int32": dv.setInt32(at, v, true); break;
        case "uint16": dv.setUint16(at, v, true); break;
        case "int16": dv.setInt16(at, v, true); break;
        case "uint8": dv.setUint8(at, v); break;
        case "int8": dv.setInt8(at, v); break;
      }
    });
  }
  return new Uint8Array(buf);
}

const COLUMNS = {
  start_ns: { dtype: "float64", values: [0, 1500.25, 123456789012.5] },
  dur_ns: { dtype: "float32", values: [10, 0.5, 2048] },
  name: { dtype: "uint32", values: [0, 4000000000, 7] },
  lane: { dtype: "uint16", values: [0, 1, 65535] },
  row: { dtype: "uint16", values: [0, 3, 2] },
  kind: { dtype: "uint8", values: [0, 2, 4] },
};

function check(table) {
  assert.equal(table.n, 3);
  assert.deepEqual(Object.keys(table.columns).sort(), Object.keys(COLUMNS).sort());
  assert.ok(table.columns.start_ns instanceof Float64Array);
  assert.ok(table.columns.dur_ns instanceof Float32Array);
  assert.ok(table.columns.name instanceof Uint32Array);
  assert.ok(table.columns.lane instanceof Uint16Array);
  assert.ok(table.columns.kind instanceof Uint8Array);
  assert.deepEqual(Array.from(table.columns.start_ns), [0, 1500.25, 123456789012.5]);
  assert.deepEqual(Array.from(table.columns.dur_ns), [10, 0.5, 2048]);
  assert.deepEqual(Array.from(table.columns.name), [0, 4000000000, 7]);
  assert.deepEqual(Array.from(table.columns.lane), [0, 1, 65535]);
  assert.deepEqual(Array.from(table.columns.row), [0, 3, 2]);
  assert.deepEqual(Array.from(table.columns.kind), [0, 2, 4]);
}

test("decodes a GPT1 buffer at offset 0 (DataView, ArrayBuffer and Uint8Array)", () => {
  const bytes = buildGpt1(COLUMNS);
  check(decodeTable(new DataView(bytes.buffer)));
  check(decodeTable(bytes.buffer));
  check(decodeTable(bytes));
});

test("decodes through a DataView with a non-zero, aligned byteOffset", () => {
  const bytes = buildGpt1(COLUMNS);
  const big = new Uint8Array(bytes.length + 24);
  big.fill(0xab);
  big.set(bytes, 16);
  const table = decodeTable(new DataView(big.buffer, 16, bytes.length));
  check(table);
  // Aligned: the column is a view on the same memory, not a copy.
  assert.equal(table.columns.start_ns.buffer, big.buffer);
});

test("decodes through a DataView with an unaligned byteOffset (copies the columns)", () => {
  const bytes = buildGpt1(COLUMNS);
  const big = new Uint8Array(bytes.length + 10);
  big.fill(0xcd);
  big.set(bytes, 3);
  const table = decodeTable(new DataView(big.buffer, 3, bytes.length));
  check(table);
  assert.notEqual(table.columns.start_ns.buffer, big.buffer);
});

test("an empty buffer is an empty table; an empty table with a header decodes to n=0", () => {
  assert.deepEqual(decodeTable(new DataView(new ArrayBuffer(0))), { n: 0, columns: {}, meta: {} });
  const table = decodeTable(buildGpt1({ start_ns: { dtype: "float64", values: [] } }));
  assert.equal(table.n, 0);
  assert.equal(table.columns.start_ns.length, 0);
});

test("bad magic throws a clear error", () => {
  const bytes = buildGpt1(COLUMNS, { magic: "GPT2" });
  assert.throws(() => decodeTable(new DataView(bytes.buffer)), /not a GPT1 table: bad magic "GPT2"/);
  assert.throws(() => decodeTable(new Uint8Array([1, 2, 3])), /not a GPT1 table/);
});

test("a column running past the end throws", () => {
  const bytes = buildGpt1(COLUMNS);
  assert.throws(() => decodeTable(new DataView(bytes.buffer, 0, bytes.length - 8)), /runs past the end/);
});

test("unknown dtypes and broken headers throw", () => {
  const bytes = buildGpt1(COLUMNS);
  // Corrupt the header's first byte ('{').
  const broken = bytes.slice();
  broken[8] = "x".charCodeAt(0);
  assert.throws(() => decodeTable(broken), /header is not valid JSON/);
  const text = new TextDecoder().decode(bytes.subarray(8, 8 + new DataView(bytes.buffer).getUint32(4, true)));
  const swapped = bytes.slice();
  const replaced = text.replace('"uint8"', '"bool8"');
  swapped.set(new TextEncoder().encode(replaced), 8);
  assert.throws(() => decodeTable(swapped), /unknown dtype bool8/);
});

test("meta is {} when absent and the header's object when present", () => {
  assert.deepEqual(decodeTable(buildGpt1(COLUMNS)).meta, {});
  const meta = { segments: [[3, 0, 2], [5, 2, 1]], merged: false, view: [0, 1e9] };
  const table = decodeTable(buildGpt1(COLUMNS, { meta }));
  check(table);
  assert.deepEqual(table.meta, meta);
  // A header written by a non-ASCII name survives (the header is UTF-8).
  const named = decodeTable(buildGpt1(COLUMNS, { meta: { label: "µs ✓" } }));
  assert.equal(named.meta.label, "µs ✓");
});

test("a meta that is not an object throws", () => {
  assert.throws(() => decodeTable(buildGpt1(COLUMNS, { meta: [1, 2] })), /meta is not an object/);
  assert.throws(() => decodeTable(buildGpt1(COLUMNS, { meta: "x" })), /meta is not an object/);
});

test("encodeTable round-trips through decodeTable and matches the hand-built layout", () => {
  const typed = {
    start_ns: Float64Array.from(COLUMNS.start_ns.values),
    dur_ns: Float32Array.from(COLUMNS.dur_ns.values),
    name: Uint32Array.from(COLUMNS.name.values),
    lane: Uint16Array.from(COLUMNS.lane.values),
    row: Uint16Array.from(COLUMNS.row.values),
    kind: Uint8Array.from(COLUMNS.kind.values),
  };
  const meta = { segments: [[0, 0, 3]] };
  const bytes = encodeTable(typed, meta);
  const table = decodeTable(bytes);
  check(table);
  assert.deepEqual(table.meta, meta);
  // Every column starts 8-aligned, as the Python encoder lays them out.
  const headerLength = new DataView(bytes.buffer).getUint32(4, true);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + headerLength)));
  for (const spec of header.columns) assert.equal(spec.offset % 8, 0);
  assert.equal(decodeTable(encodeTable({})).n, 0);
  assert.throws(() => encodeTable({ a: [1, 2] }), /not a supported typed array/);
});

// decodeWire: the kinds of python/gpuprofile/widget/wire.py, written out here by hand.
const eventList = () => ({
  id: Uint32Array.from([7]), lane: Uint16Array.from([1]), row: Uint16Array.from([0]),
  start_ns: Float64Array.from([5]), dur_ns: Float32Array.from([2]),
});

test("decodeWire: a table of its kind decodes; an optional column may be there or not", () => {
  const list = decodeWire(encodeTable(eventList()), "event_list");
  assert.deepEqual(Object.keys(list.columns), ["id", "lane", "row", "start_ns", "dur_ns"]);
  assert.deepEqual(Array.from(list.columns.id), [7]);
  const events = { start_ns: Float64Array.from([1]), dur_ns: Float32Array.from([1]), name: Uint32Array.from([3]), row: Uint8Array.from([0]) };
  assert.equal(decodeWire(encodeTable(events), "events").columns.count, undefined);
  const merged = decodeWire(encodeTable({ ...events, count: Uint32Array.from([9]) }), "events");
  assert.deepEqual(Array.from(merged.columns.count ?? []), [9]);
});

test("decodeWire: no table at all is one of no rows, with every column empty", () => {
  const empty = decodeWire(null, "counters");
  assert.equal(empty.n, 0);
  assert.ok(empty.columns.time_ns instanceof Float64Array && empty.columns.time_ns.length === 0);
  assert.ok(empty.columns.value instanceof Float64Array);
});

test("decodeWire: a column missing, added, moved or of another dtype is refused", () => {
  const { row, ...noRow } = eventList();
  assert.throws(() => decodeWire(encodeTable(noRow), "event_list"), /event_list table: columns id, lane, start_ns, dur_ns, not id, lane, row, start_ns, dur_ns/);
  assert.throws(() => decodeWire(encodeTable({ ...eventList(), extra: Uint8Array.from([1]) }), "event_list"), /columns/);
  assert.throws(() => decodeWire(encodeTable({ row, ...noRow }), "event_list"), /columns row, id/);
  assert.throws(() => decodeWire(encodeTable({ ...eventList(), dur_ns: Float64Array.from([2]) }), "event_list"), /column dur_ns is float64, not float32/);
  assert.throws(() => decodeWire(encodeTable({ time_ns: Float64Array.from([1]), value: Float64Array.from([1]) }), "marks"), /marks table/);
});
