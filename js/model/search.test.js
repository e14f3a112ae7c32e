import { test } from "node:test";
import assert from "node:assert/strict";

import { compileMatcher, maskFromIndexes, matchNames, matchStatus, stepMatch } from "./search.js";

const NAMES = ["aten::mm", "aten::add_", "volta_sgemm_128x64_nn", "Memcpy HtoD", "ATEN::MM_backward", "<img src=x>"];

test("substring search ignores case", () => {
  const m = compileMatcher("aten::mm");
  const { mask, count } = matchNames(NAMES, m);
  assert.deepEqual(Array.from(mask), [1, 0, 0, 0, 1, 0]);
  assert.equal(count, 2);
  // Regex metacharacters are plain text in substring mode.
  assert.deepEqual(Array.from(matchNames(NAMES, compileMatcher("<img src=x>")).mask), [0, 0, 0, 0, 0, 1]);
  assert.equal(matchNames(NAMES, compileMatcher(".*")).count, 0);
});

test("regex search is case-sensitive like Python's re and reports bad patterns", () => {
  const { mask } = matchNames(NAMES, compileMatcher("^aten::(mm|add)", true));
  assert.deepEqual(Array.from(mask), [1, 1, 0, 0, 0, 0]);
  assert.equal(matchNames(NAMES, compileMatcher("sgemm_\\d+x\\d+", true)).count, 1);
  const bad = compileMatcher("(unclosed", true);
  assert.match(bad.error, /^bad regex: /);
  assert.equal(compileMatcher(""), null);
  assert.equal(matchNames(NAMES, null).count, 0);
});

test("mask from the source's matching name indexes", () => {
  assert.deepEqual(Array.from(maskFromIndexes(5, [0, 3, 9, -1])), [1, 0, 0, 1, 0]);
  assert.deepEqual(Array.from(maskFromIndexes(2, undefined)), [0, 0]);
});

test("stepping wraps around both ways", () => {
  assert.equal(stepMatch(-1, 3, 1), 0);
  assert.equal(stepMatch(-1, 3, -1), 2);
  assert.equal(stepMatch(0, 3, 1), 1);
  assert.equal(stepMatch(2, 3, 1), 0);
  assert.equal(stepMatch(0, 3, -1), 2);
  assert.equal(stepMatch(0, 0, 1), -1);
  // Visiting every match once per lap.
  const seen = [];
  let k = -1;
  for (let i = 0; i < 8; i++) seen.push((k = stepMatch(k, 4, 1)));
  assert.deepEqual(seen, [0, 1, 2, 3, 0, 1, 2, 3]);
});

test("status text", () => {
  assert.equal(matchStatus(-1, 0), "no matches");
  assert.equal(matchStatus(-1, 1), "1 match");
  assert.equal(matchStatus(-1, 12000), "12,000 matches");
  assert.equal(matchStatus(2, 7), "3 of 7");
  assert.equal(matchStatus(0, 12000, 10000), "1 of 12,000 (10,000 listed)");
});
