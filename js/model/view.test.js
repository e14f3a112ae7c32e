import { test } from "node:test";
import assert from "node:assert/strict";

import {
  axisTicks,
  clampView,
  keyToView,
  niceStep,
  pan,
  planWindowRequest,
  timeToX,
  viewForEvent,
  wheelZoomFactor,
  xToTime,
  zoomAt,
} from "./view.js";

test("time <-> pixel transform round-trips", () => {
  const view = { start: 1000, end: 3000 };
  assert.equal(timeToX(1000, view, 800), 0);
  assert.equal(timeToX(3000, view, 800), 800);
  assert.equal(timeToX(2000, view, 800), 400);
  assert.equal(xToTime(200, view, 800), 1500);
  assert.equal(xToTime(timeToX(2345, view, 800), view, 800), 2345);
});

test("zoom at the cursor keeps the anchor under the same pixel", () => {
  const view = { start: 0, end: 1000 };
  const anchor = 250;
  const z = zoomAt(view, anchor, 0.5, 1000);
  assert.equal(z.end - z.start, 500);
  assert.equal(z.start, 125);
  assert.ok(Math.abs(timeToX(anchor, z, 100) - timeToX(anchor, view, 100)) < 1e-9);
});

test("zoom is clamped to [0, span] and to the minimum span", () => {
  // Zooming out past the full span gives the full span.
  assert.deepEqual(zoomAt({ start: 100, end: 600 }, 500, 10, 1000), { start: 0, end: 1000 });
  // Zooming out near the right edge shifts back inside.
  const z = zoomAt({ start: 800, end: 1000 }, 1000, 2, 1000);
  assert.deepEqual(z, { start: 600, end: 1000 });
  // Zooming in stops at minSpan.
  const m = zoomAt({ start: 0, end: 1000 }, 500, 1e-9, 1000, 20);
  assert.equal(m.end - m.start, 20);
  assert.equal(m.start, 490);
  // Wheel deltas: down zooms out, up zooms in, zero does nothing.
  assert.ok(wheelZoomFactor(100) > 1);
  assert.ok(wheelZoomFactor(-100) < 1);
  assert.equal(wheelZoomFactor(0), 1);
  assert.ok(wheelZoomFactor(3, 1) > wheelZoomFactor(3, 0));
});

test("pan keeps the length and clamps at both ends", () => {
  assert.deepEqual(pan({ start: 100, end: 300 }, 50, 1000), { start: 150, end: 350 });
  assert.deepEqual(pan({ start: 100, end: 300 }, -500, 1000), { start: 0, end: 200 });
  assert.deepEqual(pan({ start: 700, end: 900 }, 500, 1000), { start: 800, end: 1000 });
  assert.deepEqual(clampView({ start: -50, end: 2000 }, 1000), { start: 0, end: 1000 });
  assert.deepEqual(clampView({ start: NaN, end: NaN }, 1000), { start: 0, end: 1000 });
});

test("keys map to view transitions", () => {
  const view = { start: 1000, end: 2000 };
  const opts = { span: 10000, minSpan: 10, anchor: 1200 };
  const w = keyToView("w", view, opts);
  assert.ok(Math.abs(w.end - w.start - 800) < 1e-9);
  // The anchor keeps its place: 20 % from the left before and after.
  assert.ok(Math.abs((1200 - w.start) / (w.end - w.start) - 0.2) < 1e-9);
  const s = keyToView("S", view, opts);
  assert.ok(Math.abs(s.end - s.start - 1250) < 1e-9);
  assert.ok(Math.abs((1200 - s.start) / (s.end - s.start) - 0.2) < 1e-9);
  // Without an anchor: the centre.
  const c = keyToView("w", view, { span: 10000 });
  assert.ok(Math.abs((c.start + c.end) / 2 - 1500) < 1e-9);
  assert.deepEqual(keyToView("a", view, opts), { start: 800, end: 1800 });
  assert.deepEqual(keyToView("d", view, opts), { start: 1200, end: 2200 });
  assert.deepEqual(keyToView("a", { start: 50, end: 1050 }, opts), { start: 0, end: 1000 });
  assert.deepEqual(keyToView("0", view, opts), { start: 0, end: 10000 });
  assert.equal(keyToView("x", view, opts), null);
  // Zooming in stops at minSpan; out at the span.
  let v = view;
  for (let k = 0; k < 100; k++) v = keyToView("w", v, opts);
  assert.ok(Math.abs(v.end - v.start - 10) < 1e-9);
  for (let k = 0; k < 100; k++) v = keyToView("s", v, opts);
  assert.deepEqual(v, { start: 0, end: 10000 });
});

test("zooming to an event leaves a margin and respects the span", () => {
  assert.deepEqual(viewForEvent(1000, 200, 10000, 10, 0.25), { start: 950, end: 1250 });
  const tiny = viewForEvent(1000, 0, 10000, 20, 0.25);
  assert.ok(tiny.start < 1000 && tiny.end > 1000);
  assert.ok(Math.abs(tiny.end - tiny.start - 30) < 1e-9);
  assert.deepEqual(viewForEvent(0, 100, 1000, 10, 0.5), { start: 0, end: 200 });
});

test("window requests: only when the overview or the held window is too coarse", () => {
  const span = 8192e3; // 1000 ns per overview bin
  // Whole span on 1000 px: 8192 ns per pixel, the overview suffices.
  assert.equal(planWindowRequest({ start: 0, end: span }, 1000, span, null), null);
  // 100 us on 1000 px: 100 ns per pixel, finer than the overview's bins.
  const view = { start: 1e6, end: 1.1e6 };
  const plan = planWindowRequest(view, 1000, span, null);
  assert.deepEqual(plan, { start: 1e6 - 25e3, end: 1.1e6 + 25e3, width: 1500 });
  // Real events held over the view: nothing to ask.
  assert.equal(planWindowRequest(view, 1000, span, { start: 0.9e6, end: 1.2e6, merged: false, width: 1 }), null);
  // Merged bins of the plan's own reply: fine at this zoom, too coarse 4x deeper.
  const held = { ...plan, merged: true };
  assert.equal(planWindowRequest(view, 1000, span, held), null);
  assert.notEqual(planWindowRequest({ start: 1.04e6, end: 1.065e6 }, 1000, span, held), null);
  // A window that does not cover the view is asked again; edges are clamped to the span.
  const edge = planWindowRequest({ start: 0, end: 1e5 }, 1000, span, held);
  assert.equal(edge.start, 0);
  assert.equal(edge.width, 1250);
});

test("niceStep uses 1-2-5 steps", () => {
  assert.equal(niceStep(0.7), 1);
  assert.equal(niceStep(1), 1);
  assert.equal(niceStep(1.1), 2);
  assert.equal(niceStep(3), 5);
  assert.equal(niceStep(7), 10);
  assert.equal(niceStep(1300), 2000);
  assert.equal(niceStep(45000), 50000);
});

test("axis ticks adapt units and spacing", () => {
  const ms = axisTicks({ start: 0, end: 10e6 }, 1000, 80);
  assert.equal(ms.step, 1e6); // 10 ms over 1000 px, >= 80 px apart -> 1 ms steps
  assert.equal(ms.unit, "ms");
  assert.deepEqual(ms.ticks.slice(0, 3).map((t) => t.label), ["0 ms", "1 ms", "2 ms"]);
  assert.equal(ms.ticks.length, 11);
  for (let k = 1; k < ms.ticks.length; k++) {
    assert.ok(ms.ticks[k].x - ms.ticks[k - 1].x >= 80);
  }
  const us = axisTicks({ start: 1234, end: 5678 }, 500, 80);
  assert.equal(us.unit, "µs");
  assert.equal(us.step, 1000);
  assert.deepEqual(us.ticks.map((t) => t.label), ["2 µs", "3 µs", "4 µs", "5 µs"]);
  const ns = axisTicks({ start: 0, end: 400 }, 800, 80);
  assert.equal(ns.unit, "ns");
  assert.equal(ns.step, 50);
  // Deep zoom far from 0: the unit follows the magnitude, decimals follow the step.
  const deep = axisTicks({ start: 5.3e9, end: 5.3e9 + 4000 }, 400, 80);
  assert.equal(deep.unit, "s");
  assert.equal(deep.step, 1000);
  assert.equal(deep.ticks[0].label, "5.300000 s");
  assert.equal(deep.ticks[1].label, "5.300001 s");
  const sec = axisTicks({ start: 0, end: 30e9 }, 600, 80);
  assert.equal(sec.unit, "s");
  assert.equal(sec.step, 5e9);
  assert.deepEqual(axisTicks({ start: 0, end: 0 }, 100).ticks, []);
});
