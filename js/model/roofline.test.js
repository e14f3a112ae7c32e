import { test } from "node:test";
import assert from "node:assert/strict";

import {
  ABOVE_DRAM,
  boundOf,
  decadeDomain,
  decadeTicks,
  emptyChartReason,
  flopsTickLabel,
  hintsForPoint,
  intensityTickLabel,
  levelsOf,
  logScale,
  memoryPolyline,
  plotStatus,
  pointFacts,
  pointRadius,
  resolvePoints,
  roofPolyline,
  roofsOf,
  rooflineDomains,
  uncoveredShare,
} from "./roofline.js";

const close = (a, b, rel = 1e-9) => assert.ok(Math.abs(a - b) <= rel * Math.max(1, Math.abs(b)), `${a} != ${b}`);

// A100 80GB SXM datasheet figures, as report["hardware"] carries them.
const A100 = {
  name: "NVIDIA A100 SXM4 80GB",
  source: "datasheet",
  peak_flops: { fp64: 9.7e12, fp32: 19.5e12, tf32: 156e12, fp16: 312e12, bf16: 312e12, int8: 624e12 },
  dram_bytes_per_s: 2.039e12,
};

test("log scale maps decades to equal pixel steps and inverts", () => {
  const s = logScale([1e-2, 1e4], [50, 650]); // 6 decades over 600 px
  close(s.map(1e-2), 50);
  close(s.map(1), 250);
  close(s.map(1e4), 650);
  close(s.map(Math.sqrt(10)), 250 + 50); // half a decade
  close(s.invert(350), 10);
  // Flipped (SVG y grows downwards).
  const y = logScale([1e9, 1e15], [400, 100]);
  close(y.map(1e12), 250);
  close(y.invert(100), 1e15, 1e-9);
});

test("decade ticks are the powers of ten inside the domain", () => {
  assert.deepEqual(
    decadeTicks(0.05, 2000).map((t) => t.exp),
    [-1, 0, 1, 2, 3],
  );
  assert.deepEqual(
    decadeTicks(1e9, 1e12).map((t) => t.value),
    [1e9, 1e10, 1e11, 1e12],
  );
  assert.deepEqual(decadeTicks(0, 10), []);
  assert.deepEqual(decadeTicks(10, 1), []);
  assert.equal(intensityTickLabel(-2), "0.01");
  assert.equal(intensityTickLabel(3), "1000");
  assert.equal(intensityTickLabel(-5), "10⁻⁵");
  assert.equal(intensityTickLabel(6), "10⁶");
  assert.equal(flopsTickLabel(12), "1 TFLOP/s");
  assert.equal(flopsTickLabel(11), "100 GFLOP/s");
  assert.equal(flopsTickLabel(16), "10 PFLOP/s");
});

test("domains widen to whole decades and at least the minimum width", () => {
  assert.deepEqual(decadeDomain([0.0046, 707]), [1e-3, 1e3]);
  // 5..6 sits in [1, 10]; grown a decade below, then above, to 3 decades.
  assert.deepEqual(decadeDomain([5, 6], 3), [0.1, 100]);
  assert.deepEqual(decadeDomain([], 2), [1, 100]);
  assert.deepEqual(decadeDomain([100], 1), [100, 1000]);
});

test("roofs: one line per distinct peak, ridge = peak / bandwidth", () => {
  const roofs = roofsOf(A100);
  assert.equal(roofs.complete, true);
  assert.equal(roofs.memory.bandwidth, 2.039e12);
  assert.deepEqual(
    roofs.compute.map((r) => r.key),
    ["fp64", "fp32", "tf32", "fp16/bf16", "int8"],
  );
  const half = roofs.compute.find((r) => r.key === "fp16/bf16");
  close(half.ridge, 312e12 / 2.039e12); // about 153 FLOP/B
  assert.ok(half.ridge > 153 && half.ridge < 153.1);

  const unknown = roofsOf({ name: "unknown", source: "unknown", peak_flops: {}, notes: "run gpuprofile.calibrate()" });
  assert.equal(unknown.complete, false);
  assert.equal(unknown.memory, null);
  assert.deepEqual(unknown.compute, []);
  assert.deepEqual(unknown.missing, ["the hardware is unknown"]);

  const computeOnly = roofsOf({ source: "user", peak_flops: { fp32: 1e13 } });
  assert.equal(computeOnly.memory, null);
  assert.equal(computeOnly.compute[0].ridge, null);
  assert.deepEqual(computeOnly.missing, ["no DRAM bandwidth"]);
});

test("a roof polyline climbs the memory slope to its ridge, then runs flat", () => {
  const bw = 2e12;
  const peak = 2e14; // ridge at 100 FLOP/B
  const line = roofPolyline(peak, bw, [0.01, 1e4], [1e9, 1e16]);
  // The slope enters at the left edge (0.01 * 2e12 = 2e10 >= 1e9).
  assert.deepEqual(line, [
    [0.01, 2e10],
    [100, peak],
    [1e4, peak],
  ]);
  // With a higher floor the slope enters at the bottom: y0 / bw = 1e11 / 2e12 = 0.05.
  const clipped = roofPolyline(peak, bw, [0.01, 1e4], [1e11, 1e16]);
  close(clipped[0][0], 0.05);
  close(clipped[0][1], 1e11);
  // Ridge past the right edge: the slope alone, ending at the edge.
  assert.deepEqual(roofPolyline(peak, bw, [0.01, 10], [1e9, 1e16]), [
    [0.01, 2e10],
    [10, 2e13],
  ]);
  // Ridge left of the plot: flat only.
  assert.deepEqual(roofPolyline(peak, bw, [1000, 1e4], [1e9, 1e16]), [
    [1000, peak],
    [1e4, peak],
  ]);
  // No bandwidth: a flat line across.
  assert.deepEqual(roofPolyline(peak, null, [1, 10], [1e9, 1e16]), [
    [1, peak],
    [10, peak],
  ]);
  assert.deepEqual(roofPolyline(peak, null, [1, 10], [1e9, 1e12]), []);
  // The memory roof alone spans the plot, clipped at the top: y1 / bw = 1e13 / 2e12 = 5.
  assert.deepEqual(memoryPolyline(bw, [0.01, 100], [1e9, 1e13]), [
    [0.01, 2e10],
    [5, 1e13],
  ]);
});

test("points without FLOPs, bytes or intensity are listed, not plotted", () => {
  const ok = { flops: 4e11, bytes: 2e11, intensity: 2, achieved_flops_per_s: 1.5e12 };
  assert.deepEqual(plotStatus(ok), { plotted: true, reason: "" });
  assert.equal(plotStatus({ ...ok, flops: null }).reason, "no FLOP count");
  assert.equal(plotStatus({ ...ok, bytes: null }).reason, "no byte count");
  assert.equal(plotStatus({ ...ok, flops: 0, intensity: 0 }).plotted, false);
  assert.equal(plotStatus({ ...ok, achieved_flops_per_s: null }).plotted, false);
});

test("domains hold every plotted point and every ridge", () => {
  const roofs = roofsOf(A100);
  const points = [
    { flops: 1, bytes: 1, intensity: 0.0046, achieved_flops_per_s: 3e9 },
    { flops: 1, bytes: 1, intensity: 707, achieved_flops_per_s: 2e14 },
    { flops: null, bytes: null, intensity: null, achieved_flops_per_s: null }, // ignored
  ];
  const d = rooflineDomains(points, roofs);
  assert.deepEqual(d.x, [1e-3, 1e3]);
  // Lowest: 3e9 -> 1e9; highest peak 624e12 -> 1e15.
  assert.deepEqual(d.y, [1e9, 1e15]);
});

test("radius: area proportional to time, clamped to a minimum", () => {
  assert.equal(pointRadius(100, 100, 3, 16), 16);
  close(pointRadius(25, 100, 3, 16), 8); // a quarter of the time, a quarter of the area
  assert.equal(pointRadius(1, 1e6, 3, 16), 3); // 16 * 0.001 = 0.016 -> minimum
  assert.equal(pointRadius(null, 100, 3, 16), 3);
  assert.equal(pointRadius(200, 100, 3, 16), 16);
});

test("bounds, related hints and point references", () => {
  assert.equal(boundOf({ bound: "memory" }), "memory");
  assert.equal(boundOf({ bound: "compute" }), "compute");
  assert.equal(boundOf({ bound: "unknown" }), "unknown");
  assert.equal(boundOf({ bound: "<img>" }), "unknown");
  assert.equal(boundOf(null), "unknown");

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

test("a point above the DRAM roof says caches served part of its traffic; others do not", () => {
  const memory = { level: "op", bound: "memory", roof: "dram", pct_of_roof: 127 };
  const note = Object.fromEntries(pointFacts(memory))["above the roof"];
  assert.match(note, /caches served part of the traffic/);
  assert.match(note, /minimal bytes are a lower bound/);
  assert.equal(note, ABOVE_DRAM);
  // At or below the roof, or over a compute roof (a peak set too low, not caches): no note.
  for (const p of [{ ...memory, pct_of_roof: 100 }, { ...memory, pct_of_roof: null }, { ...memory, roof: "bf16", bound: "compute" }]) {
    assert.equal("above the roof" in Object.fromEntries(pointFacts(p)), false, JSON.stringify(p));
  }
});

test("levels of plottable points, ops first", () => {
  const ok = { flops: 1, bytes: 1, intensity: 1, achieved_flops_per_s: 1 };
  assert.deepEqual(levelsOf([{ ...ok, level: "kernel" }, { ...ok, level: "op" }, { level: "zz" }]), ["op", "kernel"]);
  assert.deepEqual(levelsOf([{ ...ok, level: "kernel" }]), ["kernel"]);
  assert.deepEqual(levelsOf([{ level: "op" }]), []);
  // Statuses computed once by the caller are used as given.
  const points = [{ ...ok, level: "kernel" }, { ...ok, level: "op" }];
  assert.deepEqual(levelsOf(points, points.map(plotStatus)), ["op", "kernel"]);
  assert.deepEqual(levelsOf(points, [{ plotted: true }, { plotted: false }]), ["kernel"]);
});

test("an empty chart is left out, with one line that says why", () => {
  const ok = { flops: 10, bytes: 5, intensity: 2, achieved_flops_per_s: 1e9 };
  assert.equal(emptyChartReason([{ flops: null }, ok]), null);
  // No point at all: on a CPU trace only ops with a FLOP count are points.
  assert.equal(
    emptyChartReason([]),
    "Nothing to plot: no op or kernel has a FLOP count " +
      "(FLOPs need recorded input shapes and an op with a known formula).",
  );
  // A multi-rank report whose heaviest points are communication: no FLOP count anywhere.
  const comms = Array.from({ length: 50 }, () => ({ level: "kernel", flops: null, bytes: null }));
  assert.equal(
    emptyChartReason(comms),
    "Nothing to plot: none of the 50 ops and kernels in the report has a FLOP count " +
      "(FLOPs need recorded input shapes and an op with a known formula).",
  );
  assert.match(emptyChartReason([{ flops: 0, bytes: 8 }]), /none of the one op or kernel in the report/);
  // The report says what its format lacks (an Nsight Compute CSV without SASS counts).
  assert.equal(
    emptyChartReason([{ flops: null }], undefined, "the CSV has no SASS op counts"),
    "Nothing to plot: none of the one op or kernel in the report has a FLOP count " +
      "(the CSV has no SASS op counts).",
  );
  assert.match(emptyChartReason([{ flops: 10, bytes: null }]), /no byte count or no measured time/);
  // Statuses computed once by the caller are used as given.
  const points = [{ flops: null }, ok];
  assert.equal(emptyChartReason(points, points.map(plotStatus)), null);
  assert.match(emptyChartReason(points, [{ plotted: false }, { plotted: false }]), /no byte count or no measured time/);
});
