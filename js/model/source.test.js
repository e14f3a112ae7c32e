import { test } from "node:test";
import assert from "node:assert/strict";

import { encodeTable } from "./decode.js";
import { createRemoteSource } from "./source.js";

// A stand-in for an anywidget model: records sent messages, lets the test reply.
// Like the Python side, a reply echoes the "view" of the request it answers (`sent` leaves the
// view out so the tests can compare messages; `views` keeps it per request number).
function fakeModel() {
  const handlers = new Set();
  const sent = [];
  const views = new Map();
  return {
    sent,
    views,
    on(event, fn) { if (event === "msg:custom") handlers.add(fn); },
    off(event, fn) { if (event === "msg:custom") handlers.delete(fn); },
    send({ view, ...content }) {
      sent.push(content);
      views.set(content.request, view);
    },
    reply(content, buffers = [], view = views.get(content.request)) {
      // anywidget hands buffers over as DataViews
      for (const fn of [...handlers]) fn({ ...content, view }, buffers.map((b) => new DataView(b.buffer, b.byteOffset, b.byteLength)));
    },
    get listeners() { return handlers.size; },
  };
}

function windowBytes(starts, view) {
  return encodeTable(
    { start_ns: Float64Array.from(starts), dur_ns: Float32Array.from(starts.map(() => 1)), name: Uint16Array.from(starts.map(() => 0)), row: Uint8Array.from(starts.map(() => 0)) },
    { segments: [[0, 40, starts.length]], merged: false, view },
  );
}

test("remote: a reply resolves the request with the same number; others are ignored", async () => {
  const model = fakeModel();
  const source = createRemoteSource(model, { timeoutMs: 0 });
  const a = source.details(7);
  const b = source.range(100, 200);
  assert.deepEqual(model.sent, [
    { type: "details", request: 1, id: 7 },
    { type: "range", request: 2, start: 100, end: 200 },
  ]);
  // Replies arrive out of order; one for an unknown request and one with the wrong type first.
  model.reply({ type: "details", request: 99, details: { id: 99 } });
  model.reply({ type: "details", request: 2, details: { id: 2 } });
  model.reply({ type: "range", request: 2, start: 100, end: 200, range: { ranks: [{ rank: 0 }] } });
  model.reply({ type: "details", request: 1, id: 7, details: { id: 7, name: "k" } });
  assert.deepEqual(await b, { ranks: [{ rank: 0 }] });
  assert.deepEqual(await a, { id: 7, name: "k" });
  assert.equal(source.pending, 0);
  // A second reply to an answered request changes nothing, not even a newer request's fate.
  const c = source.details(9);
  model.reply({ type: "details", request: 1, details: { id: 8 } });
  assert.equal(source.pending, 1);
  model.reply({ type: "details", request: 3, details: { id: 9 } });
  assert.deepEqual(await c, { id: 9 });
});

test("remote: window replies decode buffers[0]; stale windows resolve null and their replies drop", async () => {
  const model = fakeModel();
  const source = createRemoteSource(model, { timeoutMs: 0 });
  const first = source.window(0, 1000, 640.4);
  const second = source.window(100, 300, 800);
  assert.deepEqual(model.sent.map((m) => [m.type, m.request, m.start, m.end, m.width]), [["window", 1, 0, 1000, 640], ["window", 2, 100, 300, 800]]);
  assert.equal(await first, null);
  model.reply({ type: "window", request: 1, start: 0, end: 1000, merged: false }, [windowBytes([5, 6], [0, 1000])]);
  model.reply({ type: "window", request: 2, start: 100, end: 300, merged: false }, [windowBytes([110, 150, 290], [100, 300])]);
  const table = await second;
  assert.equal(table.n, 3);
  assert.deepEqual(Array.from(table.columns.start_ns), [110, 150, 290]);
  assert.deepEqual(table.meta.segments, [[0, 40, 3]]);
  assert.deepEqual(table.meta.view, [100, 300]);
  // Other requests are not superseded by windows.
  const d = source.details(3);
  source.window(0, 10, 10);
  model.reply({ type: "details", request: 3, details: { id: 3 } });
  assert.deepEqual(await d, { id: 3 });
});

test("remote: a window without meta.view takes the reply's start/end", async () => {
  const model = fakeModel();
  const source = createRemoteSource(model, { timeoutMs: 0 });
  const p = source.window(10, 20, 100);
  const bytes = encodeTable({ start_ns: Float64Array.from([12]), dur_ns: Float32Array.from([1]), name: Uint16Array.from([0]), row: Uint8Array.from([0]), count: Uint32Array.from([4]) }, { segments: [[2, -1, 1]] });
  model.reply({ type: "window", request: 1, start: 10, end: 20, merged: true }, [bytes]);
  const table = await p;
  assert.deepEqual(table.meta.view, [10, 20]);
  assert.equal(table.meta.merged, true);
});

test("remote: search returns count, names and the decoded match table", async () => {
  const model = fakeModel();
  const source = createRemoteSource(model, { timeoutMs: 0 });
  const p = source.search("gemm", 0);
  assert.deepEqual(model.sent[0], { type: "search", request: 1, pattern: "gemm", regex: false });
  const bytes = encodeTable({
    id: Uint32Array.from([9, 4]), lane: Uint16Array.from([1, 0]), row: Uint16Array.from([0, 2]),
    start_ns: Float64Array.from([5, 8]), dur_ns: Float32Array.from([1, 2]),
  });
  model.reply({ type: "search", request: 1, count: 12000, names: [3, 5] }, [bytes]);
  const r = await p;
  assert.equal(r.count, 12000);
  assert.deepEqual(r.names, [3, 5]);
  assert.deepEqual(Array.from(r.table.columns.id), [9, 4]);
});

test("remote: error replies reject with the message; timeouts and destroy reject too", async () => {
  const model = fakeModel();
  const source = createRemoteSource(model, { timeoutMs: 20 });
  const bad = source.search("(", true);
  model.reply({ type: "search", request: 1, error: "bad regex: missing ), unterminated subpattern" });
  await assert.rejects(bad, /bad regex: missing \)/);
  await assert.rejects(source.details(1), /no reply from the kernel to the details request/);
  const waiting = createRemoteSource(model, { timeoutMs: 0 });
  const p = waiting.range(0, 1);
  assert.equal(model.listeners, 2);
  waiting.destroy();
  await assert.rejects(p, /closed/);
  assert.equal(model.listeners, 1);
  await assert.rejects(waiting.details(1), /closed/);
  source.destroy();
  assert.equal(model.listeners, 0);
});

// ---------------------------------------------------------------------------------------------
// Local source over a complete table

const KINDS = ["op", "runtime", "kernel", "memcpy", "memset"];
const NAMES = ["aten::mm", "cudaLaunchKernel", "sgemm", "Memcpy HtoD", "relu_kernel"];
const NAME_KINDS = [0, 1, 2, 3, 2];
const LANES = [
  { id: 0, rank: 0, kind: "cpu", group: "CPU", label: "thread 1", rows: 2 },
  { id: 1, rank: 0, kind: "gpu", group: "GPU 0", label: "stream 7", rows: 2 },
  { id: 2, rank: 0, kind: "gpu", group: "GPU 0", label: "stream 8", rows: 1 },
];
// [lane, row, start, dur, name]; sorted by (lane, start) so ids are positions.
const EVENTS = [
  [0, 0, 0, 100, 0], [0, 1, 10, 5, 1], [0, 0, 150, 50, 0], [0, 1, 160, 5, 1],
  [1, 0, 20, 30, 2], [1, 1, 40, 30, 4], [1, 0, 170, 20, 2],
  [2, 0, 60, 40, 3], [2, 0, 300, 10, 4],
];

function localData() {
  const col = (k, T) => T.from(EVENTS.map((e) => e[k]));
  const table = {
    n: EVENTS.length,
    columns: { start_ns: col(2, Float64Array), dur_ns: col(3, Float32Array), name: col(4, Uint16Array), row: col(1, Uint8Array) },
    meta: { segments: [[0, 0, 4], [1, 4, 3], [2, 7, 2]], merged: false },
  };
  return { table, lanes: LANES, names: NAMES, nameKinds: NAME_KINDS, kinds: KINDS };
}

test("remote: two views of one widget get their own replies, not each other's", async () => {
  const model = fakeModel();
  // Both views number their requests from 1 and both hear every reply.
  const sent = [];
  const shared = { ...model, send(content) { sent.push(content); } };
  const a = createRemoteSource(shared, { timeoutMs: 0 });
  const b = createRemoteSource(shared, { timeoutMs: 0 });
  const fromA = a.details(111);
  const fromB = b.details(222);
  assert.equal(sent[0].request, sent[1].request);
  assert.notEqual(sent[0].view, sent[1].view);
  const answer = (m) => model.reply({ type: "details", request: m.request, details: { id: m.id } }, [], m.view);
  answer(sent[1]);
  answer(sent[0]);
  assert.deepEqual(await fromA, { id: 111 });
  assert.deepEqual(await fromB, { id: 222 });
  // A reply without this view's name (another view's, or none) is not this view's.
  const again = a.details(5);
  model.reply({ type: "details", request: sent[2].request, details: { id: 5 } }, [], undefined);
  assert.equal(a.pending, 1);
  answer(sent[2]);
  assert.deepEqual(await again, { id: 5 });
});

test("remote: named asks for one name of one table on one rank", async () => {
  const model = fakeModel();
  const source = createRemoteSource(model, { timeoutMs: 0 });
  const p = source.named("kernels", "<b>gemm</b>", 1);
  assert.deepEqual(model.sent[0], { type: "named", request: 1, table: "kernels", name: "<b>gemm</b>", rank: 1 });
  const bytes = encodeTable({
    id: Uint32Array.from([4]), lane: Uint16Array.from([0]), row: Uint16Array.from([0]),
    start_ns: Float64Array.from([8]), dur_ns: Float32Array.from([2]),
  });
  model.reply({ type: "named", request: 1, count: 3000, heaviest: 4 }, [bytes]);
  const r = await p;
  assert.equal(r.count, 3000);
  assert.equal(r.heaviest, 4);
  assert.deepEqual(Array.from(r.table.columns.id), [4]);
});
