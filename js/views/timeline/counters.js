// @ts-check
// The counter lanes of the timeline canvas: step charts (a value holds from its sample until the
// next), filled below, with the lane's maximum written at its top left.

import { formatReading } from "../../model/format.js";
import { counterWindow } from "../../model/lanes.js";
import { timeToX } from "../../model/view.js";
import { AXIS_H } from "./canvas.js";

/**
 * Counter lanes among the visible layout `entries` as step charts, scaled to the lane's range
 * (its declared min/max, stretched to the samples), one point per pixel column at most.
 * @param {CanvasRenderingContext2D} ctx
 * @param {import("./paint.js").Frame} f the frame state
 * @param {import("../../model/lanes.js").LayoutEntry[]} entries
 * @param {import("../theme.js").Theme} c
 * @param {{counters: Map<number, import("../../model/lanes.js").CounterInfo>,
 *   counterTimes?: ArrayLike<number> | null, counterValues?: ArrayLike<number> | null, span: number}} data
 */
export function drawCounters(ctx, f, entries, c, data) {
  const { counters, counterTimes, counterValues, span } = data;
  if (!counterTimes || !counterValues) return;
  const { labelW, view, viewportH, scrollTop, plotW } = f;
  ctx.save();
  ctx.beginPath();
  ctx.rect(labelW, AXIS_H, plotW, viewportH - AXIS_H);
  ctx.clip();
  for (const entry of entries) {
    if (entry.kind !== "lane" || entry.lanes[0].kind !== "counter") continue;
    const lane = entry.lanes[0];
    const info = counters.get(lane.id);
    const y = AXIS_H + entry.y - scrollTop;
    if (!info || info.hi <= info.lo) {
      ctx.fillStyle = c.muted;
      ctx.fillText("no samples", labelW + 6, y + entry.h / 2);
      continue;
    }
    const lo = typeof lane.min === "number" && Number.isFinite(lane.min) ? Math.min(lane.min, info.min) : Math.min(0, info.min);
    let hi = typeof lane.max === "number" && Number.isFinite(lane.max) ? Math.max(lane.max, info.max) : info.max;
    if (!(hi > lo)) hi = lo + 1;
    const top = y + 5;
    const base = y + entry.h - 3;
    const scaleY = (base - top) / (hi - lo);
    /** @param {number} v */
    const yOf = (v) => base - (v - lo) * scaleY;
    /** @param {number} t */
    const xOf = (t) => {
      const x = timeToX(t, view, plotW);
      return labelW + (x < -1 ? -1 : x > plotW + 1 ? plotW + 1 : x);
    };
    const [k0, k1] = counterWindow(counterTimes, info.lo, info.hi, view.start, view.end);
    ctx.beginPath();
    ctx.moveTo(xOf(counterTimes[k0]), base);
    let prevY = base;
    // One point per pixel column (its max) when samples are denser than pixels.
    let px = NaN;
    let pv = 0;
    /**
     * @param {number} x
     * @param {number} v
     */
    const emit = (x, v) => {
      const yv = yOf(v);
      ctx.lineTo(x, prevY);
      ctx.lineTo(x, yv);
      prevY = yv;
    };
    for (let k = k0; k < k1; k++) {
      const x = xOf(counterTimes[k]);
      const v = counterValues[k];
      if (Math.floor(x) === Math.floor(px)) {
        if (v > pv) pv = v;
        continue;
      }
      if (px === px) emit(px, pv);
      px = x;
      pv = v;
    }
    if (px === px) emit(px, pv);
    const xEnd = xOf(k1 < info.hi ? counterTimes[k1] : span);
    ctx.lineTo(xEnd, prevY);
    ctx.lineTo(xEnd, base);
    ctx.closePath();
    ctx.globalAlpha = 0.35;
    ctx.fillStyle = c.counter;
    ctx.fill();
    ctx.globalAlpha = 1;
    ctx.strokeStyle = c.counter;
    ctx.lineWidth = 1;
    ctx.stroke();
    ctx.fillStyle = c.muted;
    ctx.fillText(`max ${formatReading(hi, lane.unit ?? "")}`, labelW + 4, y + 9);
  }
  ctx.restore();
}
