import { test } from "node:test";
import assert from "node:assert/strict";

import { hintsForPoint, pointFacts, resolvePoints, uncoveredShare } from "./roofline.js";

const close = (a, b, rel = 1e-9) => assert.ok(Math.abs(a - b) <= rel * Math.max(1, Math.abs(b)), `${a} != ${b}`);

test("related hints and point references", () => {
  const hints = [
    { related: [] },
    { related: ["op:a|", "op:b|"] },
    { related: ["op:b|"] },
    {},
  ];
  assert.deepEqual(hintsForPoint(hints, "op:b|"), [1, 2]);
  assert.deepEqual(hintsForPoint(hints, "op:c|"), []);

  const points = [{ key: "op:a|" }, { key: "op:b|" }, { key: "kernel:k" }];
  assert.deepEqual(resolvePoints(points, ["kernel:k", 0, "missing", 7, -1, 0.5, "op:a|"]), [0, 2]);
  assert.deepEqual(resolvePoints(points, []), []);
});

test("coverage badge: the share of time without a FLOP count", () => {
  close(uncoveredShare(0.148), 0.852);
  assert.equal(uncoveredShare(1), 0);
  assert.equal(uncoveredShare(null), null);
  close(uncoveredShare({ known_share: 0.25 }), 0.75);
  close(uncoveredShare({ unknown_share: 0.1 }), 0.1);
  assert.equal(uncoveredShare(1.5), 0); // clipped
});

test("a point's facts: achieved against attainable, saved, bound with its roof", () => {
  const p = {
    key: "op:aten::softmax|[[16, 5185, 5185], [], []]",
    level: "op",
    name: "aten::softmax",
    shapes: "[[16, 5185, 5185], [], []]",
    rank: 0,
    count: 120,
    time_ns: 262_422_467,
    flops: 412_941_696_000,
    bytes: 206_470_848_000,
    flops_source: "computed",
    precision: "bf16",
    tensor_cores: false,
    intensity: 2,
    achieved_flops_per_s: 412_941_696_000 / 0.262422467,
    achieved_bytes_per_s: 206_470_848_000 / 0.262422467,
    bound: "memory",
    roof: "dram",
    attainable_flops_per_s: 2 * 3.35e12,
    pct_of_roof: null,
    saved_ns: 200_789_378,
  };
  const facts = Object.fromEntries(pointFacts(p));
  assert.equal(facts.count, "120");
  assert.equal(facts.time, "262 ms");
  assert.equal(facts.FLOPs, "413 GFLOP (computed)");
  assert.equal(facts.bytes, "206 GB");
  assert.equal(facts.intensity, "2.00 FLOP/B");
  // 412.94e9 FLOP in 0.2624 s = 1.574e12 FLOP/s; attainable 2 FLOP/B * 3.35 TB/s = 6.7e12.
  assert.equal(facts.achieved, "1.57 TFLOP/s of 6.70 TFLOP/s attainable");
  assert.equal(facts["% of roof"], "–");
  assert.equal(facts["saved at the roof"], "201 ms");
  assert.equal(facts.bound, "memory (dram roof)");
  assert.equal(facts.precision, "bf16");

  const kernel = Object.fromEntries(pointFacts({ level: "kernel", shapes: "", flops: null, bound: "unknown" }));
  assert.equal("shapes" in kernel, false);
  assert.equal(kernel.FLOPs, "–");
  assert.equal(kernel.achieved, "–");
  assert.equal(kernel.bound, "unknown");
});

test("a point's note from the layout (above the DRAM roof) is shown as given; none, no row", () => {
  const memory = { level: "op", bound: "memory", roof: "dram", pct_of_roof: 127 };
  const sentence = "above DRAM bandwidth: caches served part of the traffic";
  assert.equal(Object.fromEntries(pointFacts(memory, sentence))["above the roof"], sentence);
  assert.equal("above the roof" in Object.fromEntries(pointFacts(memory)), false);
  assert.equal("above the roof" in Object.fromEntries(pointFacts(memory, null)), false);
});
