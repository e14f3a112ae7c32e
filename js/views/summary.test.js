import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { totalCounts } from "./summary.js";

test("counts are summed over ranks, missing ranks and keys count as zero", () => {
  const summary = {
    ranks: [
      { rank: 0, counts: { kernels: 10, memcpy: 2, memset: 1, ops: 50, runtime: 12 } },
      { rank: 1, counts: { kernels: 5, ops: 7 } },
      { rank: 2 },
    ],
  };
  assert.deepEqual(totalCounts(summary), { kernels: 15, memcpy: 2, memset: 1, ops: 57, runtime: 12 });
  assert.deepEqual(totalCounts({}), { kernels: 0, memcpy: 0, memset: 0, ops: 0, runtime: 0 });
  assert.deepEqual(totalCounts(null).kernels, 0);
});

test("no source file assigns HTML strings (trace strings are untrusted)", () => {
  const root = join(dirname(fileURLToPath(import.meta.url)), "..");
  const files = [];
  const walk = (dir) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith(".js") && !name.endsWith(".test.js")) files.push(path);
    }
  };
  walk(root);
  assert.ok(files.length >= 4, `found only ${files.length} source files`);
  for (const path of files) {
    const text = readFileSync(path, "utf8");
    assert.doesNotMatch(text, /innerHTML|outerHTML|insertAdjacentHTML|document\.write/, path);
  }
});
