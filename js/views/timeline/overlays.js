// @ts-check
// What the timeline draws over its events: highlight marks, hover and selection outlines, flow
// arrows and the selected range; then the lane label column and the time axis on top. All read
// the frame state `f` the timeline fills before each paint (see paint.js).

import { formatTime } from "../../model/format.js";
import { timeToX } from "../../model/view.js";
import { AXIS_H, fitText, HEADER_H, LANE_PAD, ROW_H } from "./canvas.js";

/** @typedef {import("./paint.js").Frame} Frame */
/** @typedef {import("../theme.js").Theme} Theme */
/** @typedef {import("../../model/lanes.js").Lane} Lane */
/** @typedef {import("../../model/lanes.js").LayoutEntry} LayoutEntry */

/**
 * Screen rectangle of an event ({lane, row, start_ns, dur_ns}); null when its lane is not laid out.
 * @param {Frame} f
 * @param {Map<number, Lane>} laneById
 * @param {{lane: number, row?: number, start_ns: number, dur_ns: number}} ev
 * @param {number} [minW] px
 */
function eventRect(f, laneById, ev, minW = 3) {
  const { layout, labelW, view, plotW, scrollTop } = f;
  const entry = layout.entryOfLane.get(ev.lane);
  if (!entry) return null;
  const lane = laneById.get(ev.lane);
  const y0 = AXIS_H + entry.y - scrollTop;
  /** @type {number} */
  let y;
  let h = ROW_H - 2;
  if (entry.kind === "lane") y = y0 + LANE_PAD + Math.min(/** @type {number} */ (ev.row) | 0, (lane?.rows ?? 1) - 1) * ROW_H + 1;
  else if (entry.kind === "summary") y = y0 + LANE_PAD + 1;
  else { y = y0 + 2; h = HEADER_H - 4; }
  let x0 = timeToX(ev.start_ns, view, plotW);
  let x1 = timeToX(ev.start_ns + ev.dur_ns, view, plotW);
  if (x1 - x0 < minW) {
    const mid = (x0 + x1) / 2;
    x0 = mid - minW / 2;
    x1 = mid + minW / 2;
  }
  x0 = Math.max(-4, x0);
  x1 = Math.min(plotW + 4, x1);
  return { x: labelW + x0, y, w: x1 - x0, h };
}

/**
 * Highlight marks, hover and selection outlines, flow arrows, the selected range.
 * @param {CanvasRenderingContext2D} ctx
 * @param {Frame} f
 * @param {Theme} c
 * @param {Map<number, Lane>} laneById
 */
export function drawOverlays(ctx, f, c, laneById) {
  const { layout, labelW, view, plotW, viewportH, scrollTop, marks, hover, selected, flows } = f;
  ctx.save();
  ctx.beginPath();
  ctx.rect(labelW, AXIS_H, plotW, viewportH - AXIS_H);
  ctx.clip();
  const visibleTop = AXIS_H - ROW_H;
  if (marks?.windows?.length) {
    // Evidence windows (idle gaps, sync waits) shaded across every lane, at least a pixel wide.
    ctx.globalAlpha = 0.18;
    ctx.fillStyle = c.highlight;
    for (const [start, end] of marks.windows) {
      if (end < view.start || start > view.end) continue;
      const x0 = labelW + Math.max(-1, timeToX(start, view, plotW));
      const x1 = labelW + Math.min(plotW + 1, timeToX(end, view, plotW));
      ctx.fillRect(x0, AXIS_H, Math.max(1, x1 - x0), viewportH - AXIS_H);
    }
    ctx.globalAlpha = 1;
  }
  if (marks) {
    const path = new Path2D();
    for (const [laneId, list] of marks.byLane) {
      const entry = layout.entryOfLane.get(laneId);
      if (!entry) continue;
      const y = AXIS_H + entry.y - scrollTop;
      if (y > viewportH || y + entry.h < visibleTop) continue;
      for (const m of list) {
        if (m.start_ns > view.end) break;
        if (m.start_ns + m.dur_ns < view.start) continue;
        const r = eventRect(f, laneById, m, 4);
        if (r) path.rect(r.x - 1, r.y - 1, r.w + 2, r.h + 2);
      }
    }
    ctx.strokeStyle = c.highlight;
    ctx.lineWidth = 2;
    ctx.stroke(path);
  }
  if (hover && (!selected || hover.id !== selected.id || hover.lane !== selected.lane)) {
    const r = eventRect(f, laneById, hover);
    if (r) {
      ctx.strokeStyle = c.text;
      ctx.lineWidth = 1;
      ctx.strokeRect(r.x + 0.5, r.y + 0.5, r.w - 1, r.h - 1);
    }
  }
  if (selected) {
    const r = eventRect(f, laneById, selected);
    if (r) {
      ctx.strokeStyle = c.strong;
      ctx.lineWidth = 2;
      ctx.strokeRect(r.x - 1, r.y - 1, r.w + 2, r.h + 2);
    }
  }
  if (flows.length) {
    ctx.strokeStyle = c.flow;
    ctx.fillStyle = c.flow;
    ctx.lineWidth = 1.5;
    for (const [from, to] of flows) {
      const a = eventRect(f, laneById, from, 0);
      const b = eventRect(f, laneById, to, 0);
      if (!a || !b) continue;
      const x0 = a.x;
      const y0 = a.y + a.h / 2;
      const x1 = b.x;
      const y1 = b.y + b.h / 2;
      const bend = Math.max(20, Math.abs(y1 - y0) / 2);
      ctx.beginPath();
      ctx.moveTo(x0, y0);
      ctx.bezierCurveTo(x0, y0 + Math.sign(y1 - y0 || 1) * bend, x1 - 30, y1, x1, y1);
      ctx.stroke();
      ctx.beginPath();
      ctx.moveTo(x1, y1);
      ctx.lineTo(x1 - 7, y1 - 4);
      ctx.lineTo(x1 - 7, y1 + 4);
      ctx.closePath();
      ctx.fill();
    }
  }
  const sel = f.range;
  if (sel) {
    const x0 = labelW + Math.max(-2, timeToX(Math.min(sel.start, sel.end), view, plotW));
    const x1 = labelW + Math.min(plotW + 2, timeToX(Math.max(sel.start, sel.end), view, plotW));
    if (x1 >= labelW - 2 && x0 <= labelW + plotW + 2) {
      ctx.globalAlpha = 0.12;
      ctx.fillStyle = c.range;
      ctx.fillRect(x0, AXIS_H, Math.max(1, x1 - x0), viewportH - AXIS_H);
      ctx.globalAlpha = 1;
      ctx.strokeStyle = c.range;
      ctx.lineWidth = 1;
      ctx.beginPath();
      ctx.moveTo(Math.round(x0) + 0.5, AXIS_H);
      ctx.lineTo(Math.round(x0) + 0.5, viewportH);
      ctx.moveTo(Math.round(x1) + 0.5, AXIS_H);
      ctx.lineTo(Math.round(x1) + 0.5, viewportH);
      ctx.stroke();
    }
  }
  ctx.restore();
}

/**
 * The lane label column: group headers, badges and lane names, row separators.
 * @param {CanvasRenderingContext2D} ctx
 * @param {Frame} f
 * @param {Theme} c
 * @param {string} font
 * @param {LayoutEntry[]} entries the visible ones
 * @param {Map<string, number>} textWidths fitText's cache
 */
export function drawLabels(ctx, f, c, font, entries, textWidths) {
  const { cssW, labelW, viewportH, scrollTop } = f;
  ctx.fillStyle = c.labelBg;
  ctx.fillRect(0, AXIS_H, labelW, viewportH - AXIS_H);
  ctx.save();
  ctx.beginPath();
  ctx.rect(0, AXIS_H, cssW, viewportH - AXIS_H);
  ctx.clip();
  ctx.strokeStyle = c.border;
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (const entry of entries) {
    const y = AXIS_H + entry.y - scrollTop;
    if (entry.kind === "rank") {
      drawRankHeader(ctx, f, c, font, entry, y, textWidths);
    } else if (entry.kind === "header") {
      ctx.fillStyle = c.headerBg;
      ctx.fillRect(0, y, cssW, entry.h);
      ctx.fillStyle = c.text;
      ctx.font = `600 ${font}`;
      const arrow = entry.collapsed ? "▸" : "▾";
      const count = entry.lanes.length;
      // Under a rank's header, a group is indented and named without the rank.
      const x = entry.rank === undefined ? 6 : 16;
      ctx.fillText(fitText(ctx, `${arrow} ${entry.label ?? entry.group} (${count} lane${count === 1 ? "" : "s"})`, cssW - x - 6, textWidths), x, y + entry.h / 2 + 0.5);
      ctx.font = font;
    } else {
      const mid = y + Math.min(entry.h, LANE_PAD * 2 + ROW_H) / 2;
      if (entry.kind === "summary") {
        ctx.fillStyle = c.muted;
        ctx.fillText(fitText(ctx, entry.label ?? `${entry.lanes.length} lanes (collapsed)`, labelW - 16, textWidths), 14, mid + 0.5);
      } else {
        const lane = entry.lanes[0];
        const badge = lane.kind === "gpu" ? "GPU" : lane.kind === "counter" ? "CTR" : "CPU";
        ctx.fillStyle = lane.kind === "gpu" ? c.gpu : lane.kind === "counter" ? c.counter : c.cpu;
        ctx.fillRect(6, mid - 6, 28, 12);
        ctx.fillStyle = "#fff";
        ctx.font = `bold 9px ${c.fontFamily}`;
        ctx.fillText(badge, 9, mid + 0.5);
        ctx.font = font;
        ctx.fillStyle = c.text;
        // A counter's unit is in its values ("max 1.50 GB", the tooltip), scaled: "(B)" here
        // beside "GB" there only puzzled.
        ctx.fillText(fitText(ctx, String(lane.label ?? lane.id), labelW - 46, textWidths), 40, mid + 0.5);
      }
    }
    ctx.moveTo(0, Math.round(y + entry.h) + 0.5);
    ctx.lineTo(cssW, Math.round(y + entry.h) + 0.5);
  }
  ctx.moveTo(labelW + 0.5, AXIS_H);
  ctx.lineTo(labelW + 0.5, viewportH);
  ctx.stroke();
  ctx.restore();
}

/**
 * A rank's header across the label column and the plot: its arrow (a click there collapses or
 * expands it), "rank N" and its lane count, "focused" when the others are collapsed for it, and
 * the straggler's mark (the rank the others waited for most).
 * @param {CanvasRenderingContext2D} ctx
 * @param {Frame} f
 * @param {Theme} c
 * @param {string} font
 * @param {LayoutEntry} entry
 * @param {number} y px
 * @param {Map<string, number>} textWidths
 */
function drawRankHeader(ctx, f, c, font, entry, y, textWidths) {
  const { cssW } = f;
  const focused = f.focusedRank === entry.rank;
  const straggler = f.straggler === entry.rank;
  ctx.fillStyle = c.headerBg;
  ctx.fillRect(0, y, cssW, entry.h);
  ctx.fillStyle = focused ? c.strong : c.text;
  ctx.fillRect(0, y, 3, entry.h);
  ctx.font = `bold ${font}`;
  const arrow = entry.collapsed ? "▸" : "▾";
  const count = entry.lanes.length;
  const mid = y + entry.h / 2 + 0.5;
  ctx.fillText(arrow, 7, mid);
  let text = `${entry.label} (${count} lane${count === 1 ? "" : "s"})`;
  if (focused) text += " · focused: click again to show every rank";
  const x = 22;
  let badgeW = 0;
  if (straggler) {
    const badge = "straggler";
    badgeW = ctx.measureText(badge).width + 10;
    const bx = cssW - badgeW - 8;
    ctx.fillStyle = c.straggler;
    ctx.fillRect(bx, y + 3, badgeW, entry.h - 6);
    ctx.fillStyle = "#fff";
    ctx.fillText(badge, bx + 5, mid);
  }
  ctx.fillStyle = straggler ? c.straggler : c.text;
  ctx.fillText(fitText(ctx, text, cssW - x - badgeW - 20, textWidths), x, mid);
  ctx.font = font;
}

/**
 * The time axis strip: headline, ticks and their labels, the selected range's length.
 * @param {CanvasRenderingContext2D} ctx
 * @param {Frame} f
 * @param {Theme} c
 * @param {ReturnType<typeof import("../../model/view.js").axisTicks>} ticks
 * @param {string} headline
 * @param {Map<string, number>} textWidths
 */
export function drawAxis(ctx, f, c, ticks, headline, textWidths) {
  const { cssW, labelW, view, plotW } = f;
  ctx.fillStyle = c.bg;
  ctx.fillRect(0, 0, cssW, AXIS_H);
  ctx.fillStyle = c.muted;
  ctx.fillText(fitText(ctx, headline, labelW - 8, textWidths), 6, AXIS_H / 2);
  ctx.strokeStyle = c.border;
  ctx.lineWidth = 1;
  ctx.beginPath();
  ctx.moveTo(0, AXIS_H - 0.5);
  ctx.lineTo(cssW, AXIS_H - 0.5);
  for (const tick of ticks.ticks) {
    const x = Math.round(labelW + tick.x) + 0.5;
    ctx.moveTo(x, AXIS_H - 6);
    ctx.lineTo(x, AXIS_H);
  }
  ctx.stroke();
  ctx.fillStyle = c.text;
  ctx.save();
  ctx.beginPath();
  ctx.rect(labelW, 0, plotW, AXIS_H);
  ctx.clip();
  for (const tick of ticks.ticks) ctx.fillText(tick.label, labelW + tick.x + 3, AXIS_H / 2 - 2);
  const sel = f.range;
  if (sel) {
    const a = Math.min(sel.start, sel.end);
    const b = Math.max(sel.start, sel.end);
    const x = labelW + (timeToX(a, view, plotW) + timeToX(b, view, plotW)) / 2;
    const text = formatTime(b - a);
    const w = ctx.measureText(text).width + 8;
    ctx.fillStyle = c.range;
    ctx.fillRect(x - w / 2, AXIS_H - 12, w, 12);
    ctx.fillStyle = "#fff";
    ctx.fillText(text, x - w / 2 + 4, AXIS_H - 6);
  }
  ctx.restore();
}
