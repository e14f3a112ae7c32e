import { test } from "node:test";
import assert from "node:assert/strict";
import { formatElapsed, readingView, readingsByDevice } from "./live.js";

test("elapsed time reads in seconds, then minutes", () => {
  assert.equal(formatElapsed(0), "0.0 s");
  assert.equal(formatElapsed(12.34), "12.3 s");
  assert.equal(formatElapsed(125.9), "2 min 05 s");
  assert.equal(formatElapsed(null), "–");
});

test("shares fill a bar; sizes and rates do not", () => {
  assert.deepEqual(readingView({ value: 42, unit: "%" }).fill, 0.42);
  assert.equal(readingView({ value: 150, unit: "%" }).fill, 1);
  assert.equal(readingView({ value: 2e9, unit: "B" }).fill, null);
  assert.equal(readingView({ value: NaN, unit: "%" }).text, "–");
  assert.equal(readingView({ value: 300, unit: "W" }).text, "300 W");
});

test("readings group by device, host first", () => {
  const groups = readingsByDevice([
    { name: "SM", device: 1, value: 1 },
    { name: "RSS", device: -1, value: 2 },
    { name: "SM", device: 0, value: 3 },
    { name: "mem", device: 1, value: 4 },
  ]);
  assert.deepEqual(groups.map((g) => g.label), ["host", "GPU 0", "GPU 1"]);
  assert.deepEqual(groups[2].readings.map((r) => r.name), ["SM", "mem"]);
});
