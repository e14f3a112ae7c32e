import { test } from "node:test";
import assert from "node:assert/strict";

import { moduleGroup, pointsOfModule, sourceLabel, treeFor, whereRows, withinModule } from "./modules.js";

test("a module contains itself and the modules under it, nothing else", () => {
  assert.equal(withinModule("Net.fc", "Net.fc"), true);
  assert.equal(withinModule("Net", "Net.fc.inner"), true);
  assert.equal(withinModule("Net", "Net2"), false); // a name prefix is not a parent
  assert.equal(withinModule("Net.fc", "Net"), false);
  assert.equal(withinModule("(no module)", "(no module)"), true);
  assert.equal(withinModule("(no module)", "(no module).x"), false);
  assert.equal(withinModule("Net", null), false);
});

test("roofline points of a module: its own and its descendants'", () => {
  const points = [
    { modules: ["Net.fc1"] },
    { modules: ["Net.fc2", "Net.fc1.bias"] },
    { modules: ["Net2.fc1"] },
    { modules: [] },
    {},
    null,
    { modules: ["Net"] },
  ];
  assert.deepEqual(pointsOfModule(points, "Net.fc1"), [0, 1]);
  assert.deepEqual(pointsOfModule(points, "Net"), [0, 1, 6]);
  assert.deepEqual(pointsOfModule(points, "Net.head"), []);
  assert.deepEqual(pointsOfModule(null, "Net"), []);
});

test("the marks group of a module row is found by rank and index", () => {
  const groups = [
    { kind: "hint", hint: 0, evidence: 0 },
    { kind: "module", rank: 0, module: 1 },
    { kind: "module", rank: 1, module: 1 },
  ];
  assert.equal(moduleGroup(groups, 1, 1), 2);
  assert.equal(moduleGroup(groups, 0, 1), 1);
  assert.equal(moduleGroup(groups, 0, 0), -1);
});

test("one tree per rank: the rank's, else the first; none without trees", () => {
  const layout = { width: 1, bar_x: 0, bar_w: 1, row_h: 1, trees: [{ rank: 2, height: 0, rows: [], more: null, scale_ns: 0 }, { rank: 5, height: 0, rows: [], more: null, scale_ns: 0 }] };
  assert.equal(treeFor(layout, 5)?.rank, 5);
  assert.equal(treeFor(layout, 9)?.rank, 2);
  assert.equal(treeFor(layout)?.rank, 2);
  assert.equal(treeFor(null), null);
  assert.equal(treeFor({ ...layout, trees: [] }), null);
});

test("source lines read as the user wrote them", () => {
  assert.equal(sourceLabel({ file: "cell [5]", line: 12, function: "forward" }), "cell [5] line 12");
  assert.equal(sourceLabel({ file: "/home/me/proj/model.py", line: 42, function: "f" }), "model.py:42");
  assert.equal(sourceLabel({ file: "C:\\proj\\model.py", line: 7, function: "f" }), "model.py:7");
  assert.equal(sourceLabel({ file: "model.py", line: 0, function: "f" }), "model.py");
  assert.equal(sourceLabel({ file: "", line: 3, function: "f" }), "");
  assert.equal(sourceLabel(null), "");
});

test("a hint or point names its first module and line", () => {
  assert.deepEqual(
    whereRows({ modules: ["Net.attn", "Net.mlp"], sources: [{ file: "cell [3]", line: 8, function: "forward" }] }),
    [["module", "Net.attn (+1 more)"], ["line", "cell [3] line 8 in forward"]],
  );
  assert.deepEqual(whereRows({ modules: ["Net"], sources: [] }), [["module", "Net"]]);
  assert.deepEqual(whereRows({}), []);
  assert.deepEqual(whereRows(null), []);
});
