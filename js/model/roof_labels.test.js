import { test } from "node:test";
import assert from "node:assert/strict";

import {
  computeRoofLabel,
  labelPolygon,
  layoutRoofLabels,
  memoryRoofLabel,
  polygonsOverlap,
  ridgeLabel,
  spread,
} from "./roof_labels.js";
import { roofsOf } from "./roofline.js";

const PLOT = { left: 78, right: 624, top: 14, bottom: 336 };

/** Every pair of shown labels apart, and every shown label inside the plot. */
function assertApart(out) {
  const labels = [...out.compute, ...(out.slope ? [out.slope] : []), ...out.ridges.filter((r) => r.shown)];
  for (let i = 0; i < labels.length; i++) {
    for (const [x, y] of labels[i].poly) {
      assert.ok(x >= PLOT.left - 1e-6 && x <= PLOT.right + 1e-6 && y >= PLOT.top - 1e-6 && y <= PLOT.bottom + 1e-6,
        `${labels[i].text} leaves the plot at ${x},${y}`);
    }
    for (let j = i + 1; j < labels.length; j++) {
      assert.ok(!polygonsOverlap(labels[i].poly, labels[j].poly), `${labels[i].text} covers ${labels[j].text}`);
    }
  }
}

test("spread keeps positions that are apart and parts those that are not", () => {
  assert.deepEqual(spread([10, 50, 90], 12, 0, 100), [10, 50, 90]);
  const ys = spread([50, 52, 54], 12, 0, 100);
  assert.deepEqual(ys, [40, 52, 64]); // centred on what they wanted, 12 apart
  // Order is kept whatever order they come in.
  assert.deepEqual(spread([54, 50, 52], 12, 0, 100), [64, 40, 52]);
  // Pushed inside the bounds as a block.
  assert.deepEqual(spread([1, 2], 12, 0, 100), [0, 12]);
  assert.deepEqual(spread([99, 100], 12, 0, 100), [88, 100]);
  // A cluster that grows into its neighbour merges with it.
  const merged = spread([20, 40, 41, 42], 12, 0, 100);
  for (let i = 1; i < merged.length; i++) assert.ok(merged[i] - merged[i - 1] >= 12 - 1e-9, merged);
});

test("polygons that touch do not overlap; rotated boxes are tested as drawn", () => {
  const a = labelPolygon("abc", 0, 20);
  assert.ok(polygonsOverlap(a, labelPolygon("abc", 5, 22)));
  assert.ok(!polygonsOverlap(a, labelPolygon("abc", 0, 60)));
  // A steep slope label's axis-aligned box would reach this box; the label itself does not.
  const slope = labelPolygon(memoryRoofLabel(3.35e12), 100, 200, { angle: -45 });
  const corner = labelPolygon("x", 160, 200);
  assert.ok(!polygonsOverlap(slope, corner));
});

test("close compute roofs get labels that do not cover each other, near their lines", () => {
  // H100-like peaks a factor of 2 apart, and two roofs 10% apart: 2-5 px between lines.
  const lines = [300, 180, 168, 120, 116, 112, 60];
  const compute = lines.map((y, i) => ({ text: computeRoofLabel({ key: `roof${i}`, peak: 1.98e15 }), y }));
  const out = layoutRoofLabels({ plot: PLOT, compute });
  assertApart(out);
  // A label that had room stays where it was (4 px above its line).
  assert.equal(out.compute[0].y, 296);
  assert.equal(out.compute[6].y, 56);
  // Labels keep the order of their lines.
  const ys = out.compute.map((l) => l.y);
  for (let i = 1; i < ys.length; i++) assert.ok(ys[i] < ys[i - 1], ys);
});

test("the memory roof's label moves along its slope off the compute labels", () => {
  // A slope that enters at the bottom right, where the compute labels are.
  const slope = { text: memoryRoofLabel(3.35e12), x0: 480, y0: 336, x1: 600, y1: 40 };
  const compute = [
    { text: computeRoofLabel({ key: "fp32", peak: 67e12 }), y: 300 },
    { text: computeRoofLabel({ key: "fp16", peak: 990e12 }), y: 40 },
  ];
  const out = layoutRoofLabels({ plot: PLOT, compute, slope });
  assert.ok(out.slope, "the DRAM label was dropped");
  assertApart(out);
  // With nothing in the way it sits where the slope enters the plot.
  const free = layoutRoofLabels({ plot: PLOT, slope: { ...slope, x0: 90, y0: 336, x1: 300, y1: 100 } });
  assert.equal(free.slope.x, 100);
});

test("labels are spelt as the chart draws them, through format.js", () => {
  assert.equal(computeRoofLabel({ key: "fp16/bf16", peak: 989.5e12 }), "fp16/bf16 990 TFLOP/s");
  assert.equal(ridgeLabel(295.5), "ridge 296 FLOP/B");
  assert.equal(memoryRoofLabel(3.35e12), "DRAM 3.35 TB/s");
  assert.equal(ridgeLabel(null), "ridge –");
});

test("ridge labels that would cover another label are left out, the rest are shown", () => {
  const compute = [
    { text: computeRoofLabel({ key: "tf32", peak: 495e12 }), y: 60 },
    { text: computeRoofLabel({ key: "fp16", peak: 990e12 }), y: 48 },
  ];
  const ridges = [
    { text: ridgeLabel(148), x: 400 },
    { text: ridgeLabel(156), x: 404 }, // 4 px from the previous one
    { text: ridgeLabel(295), x: 500 },
  ];
  const slope = { text: memoryRoofLabel(3.35e12), x0: 80, y0: 330, x1: 400, y1: 60 };
  const out = layoutRoofLabels({ plot: PLOT, compute, ridges, slope });
  assert.deepEqual(out.ridges.map((r) => r.shown), [true, false, true]);
  assertApart(out);
});

test("a plot of the real roofs of an H100 keeps every label apart", () => {
  // The roofs of the widget's H100 chart (viewBox px), as drawn on the OWLv2 trace.
  const y = (flops) => 14 + ((16 - Math.log10(flops)) / 8) * 322;
  const x = (intensity) => 78 + ((Math.log10(intensity) + 3) / 6) * 546;
  // Its roofs as report["hardware"] gives them, labelled as the chart labels them.
  const roofs = roofsOf({
    source: "datasheet",
    dram_bytes_per_s: 3.35e12,
    peak_flops: { fp64: 34e12, fp32: 67e12, tf32: 495e12, fp16: 990e12, bf16: 990e12, fp8: 1.98e15, int8: 1.98e15 },
  });
  assert.deepEqual(roofs.compute.map(computeRoofLabel), [
    "fp64 34.0 TFLOP/s", "fp32 67.0 TFLOP/s", "tf32 495 TFLOP/s", "fp16/bf16 990 TFLOP/s", "fp8/int8 1.98 PFLOP/s",
  ]);
  const compute = roofs.compute.map((r) => ({ text: computeRoofLabel(r), y: y(r.peak) }));
  const ridges = roofs.compute.map((r) => ({ text: ridgeLabel(r.ridge), x: x(r.ridge) }));
  assert.equal(ridges[4].text, "ridge 591 FLOP/B");
  const bw = roofs.memory.bandwidth;
  const slope = { text: memoryRoofLabel(bw), x0: x(1e-3), y0: y(bw * 1e-3), x1: x(1.98e15 / bw), y1: y(1.98e15) };
  const out = layoutRoofLabels({ plot: PLOT, compute, ridges, slope });
  assertApart(out);
  assert.ok(out.slope);
  assert.ok(out.ridges.every((r) => r.shown), "ridges a factor of 2 apart all have room");
});
