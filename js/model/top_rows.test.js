import { test } from "node:test";
import assert from "node:assert/strict";

import { NAME_CHARS, elideMiddle, topRows } from "./top_rows.js";

const ENGINE = "autograd::engine::evaluate_function: ";

test("one row per name: repeats of a name merge, counts and times summed, heaviest first", () => {
  const rows = topRows([
    { name: "aten::mm", count: 2, total_ns: 100 },
    { name: `${ENGINE}AddmmBackward0`, count: 10, total_ns: 300 },
    { name: "aten::mm", count: 3, total_ns: 250 },
    { name: "aten::add", count: 1, total_ns: 300 },
  ]);
  assert.deepEqual(rows, [
    { name: "aten::mm", count: 5, total_ns: 350 },
    { name: "aten::add", count: 1, total_ns: 300 },
    { name: `${ENGINE}AddmmBackward0`, count: 10, total_ns: 300 },
  ]);
});

test("names that share a long prefix stay apart once shortened", () => {
  const names = ["AddmmBackward0", "MeanBackward0", "PowBackward0", "MulBackward0", "TBackward0"].map((n) => ENGINE + n);
  const shown = names.map((n) => elideMiddle(n, 40));
  assert.equal(new Set(shown).size, names.length, shown.join("\n"));
  for (const s of shown) assert.equal([...s].length, 40);
  assert.equal(shown[0], "autograd::eng…e_function: AddmmBackward0");
  assert.ok(shown.every((s, i) => s.includes("…") && s.endsWith(names[i].slice(-12))));
  // Short names are left whole.
  assert.equal(elideMiddle("aten::mm"), "aten::mm");
  assert.equal(elideMiddle("x".repeat(NAME_CHARS)), "x".repeat(NAME_CHARS));
});
