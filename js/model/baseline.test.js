import { test } from "node:test";
import assert from "node:assert/strict";

import { baselineView, runName, TOP_ROWS } from "./baseline.js";

// A diff document as Python writes it (gpuprofile.diff/1), small enough to check by hand.
function diff() {
  return {
    schema: "gpuprofile.diff/1",
    a: { path: "/runs/before.json", format: "kineto", ranks: 1, devices: [] },
    b: { path: null, format: "torch.profiler", ranks: 1, devices: [] },
    summary: {
      wall_ns: { a: 2_000_000, b: 1_000_000, delta: -1_000_000, ratio: 0.5 },
      busy_ns: { a: 500_000, b: 750_000, delta: 250_000, ratio: 1.5 },
      idle_ns: { a: 0, b: 0, delta: 0, ratio: null },
      step_ns: null,
      idle_by_cause: {
        sync: { a: 300_000, b: 0, delta: -300_000 },
        data_loading: { a: 0, b: 0, delta: 0 },
      },
    },
    kernels: [
      { name: "<b>gemm</b>", a_ns: 0, b_ns: 40_000, delta_ns: 40_000, a_count: 0, b_count: 2, matched_by: "only in b", b_name: null },
      { name: "ampere_sgemm", a_ns: 30_000, b_ns: 10_000, delta_ns: -20_000, a_count: 3, b_count: 1, matched_by: "position", b_name: "MIOpen_gemm" },
      { name: "same", a_ns: 5, b_ns: 5, delta_ns: 0, a_count: 1, b_count: 1, matched_by: "name", b_name: null },
    ],
    ops: [],
    hints: {
      fixed: [{ key: "k1", kind: "sync", title: "3 syncs", a_title: "3 syncs", b_title: null, a_gain_ns: 300_000, b_gain_ns: null }],
      new: [],
      kept: [{ key: "k2", kind: "launch", title: "many launches", a_title: "x", b_title: "y", a_gain_ns: 1000, b_gain_ns: 2000 }],
    },
    roofline: [],
    notes: ["a note"],
  };
}

test("no baseline: no view", () => {
  assert.equal(baselineView({}), null);
  assert.equal(baselineView(null), null);
  assert.equal(baselineView({ baseline: null }), null);
});

test("bars: before/after widths against the larger, deltas signed, causes only when present", () => {
  const view = baselineView({ baseline: diff() });
  assert.ok(view);
  assert.deepEqual(view.bars.map((b) => b.key), ["wall_ns", "busy_ns", "idle_ns", "idle:sync"]);
  const [wall, busy, idle, sync] = view.bars;
  assert.equal(wall.aWidth, 1);
  assert.equal(wall.bWidth, 0.5);
  assert.equal(wall.aText, "2.00 ms");
  assert.equal(wall.bText, "1.00 ms");
  assert.equal(wall.deltaText, "-1.00 ms");
  assert.equal(wall.ratioText, "0.500x");
  assert.equal(wall.tone, "better");
  assert.equal(busy.bWidth, 1);
  assert.equal(busy.aWidth, 500_000 / 750_000);
  assert.equal(busy.deltaText, "+250 µs");
  assert.equal(busy.tone, "worse");
  assert.deepEqual([idle.aWidth, idle.bWidth, idle.tone, idle.ratioText], [0, 0, "", ""]);
  assert.equal(sync.label, "idle: sync");
  assert.equal(sync.deltaText, "-300 µs");
});

test("delta rows: unchanged rows left out, position matches name b's row, names kept as given", () => {
  const view = baselineView({ baseline: diff() });
  assert.ok(view);
  assert.equal(view.kernelsTotal, 3);
  assert.deepEqual(view.kernels.map((r) => r.name), ["<b>gemm</b>", "ampere_sgemm"]);
  assert.equal(view.kernels[0].matched, "only in b");
  assert.equal(view.kernels[0].countText, "0 → 2");
  assert.equal(view.kernels[1].matched, "MIOpen_gemm");
  assert.equal(view.kernels[1].deltaText, "-20.0 µs");
  assert.deepEqual(view.ops, []);
  const many = diff();
  many.ops = Array.from({ length: TOP_ROWS + 5 }, (_, i) => ({
    name: `op${i}`, a_ns: 0, b_ns: 100 - i, delta_ns: 100 - i, a_count: 0, b_count: 1, matched_by: "only in b", b_name: null,
  }));
  assert.equal(baselineView({ baseline: many })?.ops.length, TOP_ROWS);
});

test("hints: every entry marked with its group, counted", () => {
  const view = baselineView({ baseline: diff() });
  assert.ok(view);
  assert.deepEqual(view.counts, { fixed: 1, new: 0, kept: 1, unjudged: 0 });
  assert.deepEqual(view.hints.map((h) => [h.group, h.title]), [["fixed", "3 syncs"], ["kept", "many launches"]]);
  assert.equal(view.hints[0].gainText, "gain 300 µs → –");
  assert.equal(view.baseline, "/runs/before.json (kineto)");
  assert.deepEqual(view.notes, ["a note"]);
});

test("the step verdict and its sentence are Python's, shown as given", () => {
  const noise = { verdict: "faster", text: "95% interval of b/a 0.550x to 0.650x over 20 steps vs 20: faster" };
  assert.deepEqual(baselineView({ baseline: diff(), step_noise: noise }).noise, noise);
  const few = { verdict: "", text: "2 steps vs 1: too few for a noise interval" };
  assert.deepEqual(baselineView({ baseline: diff(), step_noise: few }).noise, few);
  assert.equal(baselineView({ baseline: diff(), step_noise: null }).noise, null); // no steps: nothing to say
});

test("a recorded baseline is named by its run and label", () => {
  assert.equal(runName({ run: { id: "1a2b3c4d", label: "before", time: 1 } }), "run 1a2b3c4d (before)");
  assert.equal(runName({ run: { id: "1a2b3c4d", label: null } }), "run 1a2b3c4d");
  assert.equal(runName({ path: "x.json" }), "");
  const d = diff();
  d.a = { ...d.a, path: null, run: { id: "1a2b3c4d", label: "before" } };
  assert.equal(baselineView({ baseline: d }).baseline, "run 1a2b3c4d (before) (kineto)");
});
