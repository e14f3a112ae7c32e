// @ts-check
// Painting the timeline canvas: lane backgrounds and grid, events (level of detail per pixel,
// search dimming, labels in the boxes that fit them), counter step charts (counters.js), then
// the overlays, label column and axis of overlays.js. Per-frame scratch (boxes, paths, labels) is
// allocated once here and reused, so a frame allocates nothing in proportion to the events.

import { DIM_COLOR, palette, PALETTE_SIZE } from "../../model/colors.js";
import { firstEntryAt } from "../../model/lanes.js";
import { blockMatches, createBoxes, lodRow } from "../../model/lod.js";
import { rowRange } from "../../model/segments.js";
import { formatCount } from "../../model/format.js";
import { axisTicks, timeToX } from "../../model/view.js";
import { AXIS_H, fitText, LANE_PAD, ROW_H } from "./canvas.js";
import { drawCounters } from "./counters.js";
import { drawAxis, drawLabels, drawOverlays } from "./overlays.js";

const LABEL_MIN_PX = 28;

/** @typedef {import("../../model/timeline_data.js").PreparedTimeline} PreparedTimeline */
/** @typedef {import("../../model/segments.js").SegmentIndex} SegmentIndex */
/** @typedef {import("../../model/lanes.js").LayoutEntry} LayoutEntry */
/** @typedef {import("../../model/lanes.js").Lane} Lane */
/** @typedef {import("../theme.js").Theme} Theme */
/** @typedef {ReturnType<typeof import("../../model/timeline_state.js").createTimelineState>} TimelineState */
/**
 * The frame state the timeline fills before each paint (timeline.js, render.js), read by the
 * painters: the view, the layout and the canvas's sizes (px), the detail window held and the one
 * asked for, the search mask, and what is highlighted, hovered, selected and marked.
 * @typedef {{view: import("../../model/view.js").View, layout: import("../../model/lanes.js").Layout,
 *   cssW: number, labelW: number, plotW: number, viewportH: number, scrollTop: number,
 *   detail: import("../../model/timeline_data.js").DetailWindow | null,
 *   pendingWindow: import("./windows.js").PendingWindow | null, mask: Uint8Array | null,
 *   marks: TimelineState["marks"], hover: import("../../model/segments.js").TimelineEvent | null,
 *   selected: TimelineState["selected"], flows: TimelineState["flows"], range: TimelineState["range"],
 *   straggler: number | null, focusedRank: number | null}} Frame
 */

/**
 * @param {PreparedTimeline} data what stays fixed for the timeline's life: prepareTimeline()'s result
 * @returns {{paint: (ctx: CanvasRenderingContext2D, f: Frame, c: Theme, font: string) => void}}
 */
export function createTimelinePainter(data) {
  const { overview, laneById, totalEvents, nameText, colorOf, emptyText } = data;
  const laneCount = data.lanes.length;
  // The axis headline's fixed part: lanes and events do not change for the painter's life.
  const counts = `${laneCount} lane${laneCount === 1 ? "" : "s"} · ${formatCount(totalEvents)} events`;
  const countsLoading = `${counts} · loading detail…`;
  const textWidths = new Map();
  const boxes = createBoxes(4096);
  /** @type {(Path2D | null)[]} */
  const paths = new Array(PALETTE_SIZE).fill(null);
  let labels = { n: 0, x: new Float64Array(1024), y: new Float64Array(1024), w: new Float64Array(1024), name: new Int32Array(1024) };
  // The frame being painted: set for the length of paint(), dropped after it.
  let f = /** @type {Frame} */ (/** @type {unknown} */ (null));

  /**
   * @param {number} x
   * @param {number} y
   * @param {number} w
   * @param {number} nameIdx
   */
  function pushLabel(x, y, w, nameIdx) {
    if (labels.n === labels.x.length) {
      const cap = labels.n * 2;
      /**
       * @template {Float64Array | Int32Array} A
       * @param {A} a
       * @param {new (n: number) => A} T
       * @returns {A}
       */
      const grow = (a, T) => { const b = new T(cap); b.set(a); return b; };
      labels = { n: labels.n, x: grow(labels.x, Float64Array), y: grow(labels.y, Float64Array), w: grow(labels.w, Float64Array), name: grow(labels.name, Int32Array) };
    }
    const i = labels.n++;
    labels.x[i] = x;
    labels.y[i] = y;
    labels.w[i] = w;
    labels.name[i] = nameIdx;
  }

  /**
   * The entries on screen, and the index of the first (lane shading alternates by index).
   * @param {number} scrollTop
   */
  function visibleEntries(scrollTop) {
    const { layout, viewportH } = f;
    /** @type {LayoutEntry[]} */
    const entries = [];
    const bottom = scrollTop + viewportH - AXIS_H;
    const first = firstEntryAt(layout.entries, scrollTop);
    for (let i = first; i < layout.entries.length; i++) {
      const e = layout.entries[i];
      if (e.y >= bottom) break;
      entries.push(e);
    }
    return { first, entries };
  }

  /**
   * @param {LayoutEntry} entry
   * @returns {Lane[]}
   */
  function eventLanesOf(entry) {
    if (entry.kind === "summary") return entry.lanes;
    if (entry.kind === "lane" && entry.lanes[0].kind !== "counter") return entry.lanes;
    return [];
  }

  // Block summaries of the search mask, per table index, rebuilt when the mask changes.
  /** @type {WeakMap<SegmentIndex, {mask: Uint8Array, blocks: Uint8Array}>} */
  const maskBlockCache = new WeakMap();
  /**
   * @param {SegmentIndex} index
   * @param {Uint8Array} mask
   */
  function maskBlocksFor(index, mask) {
    const hit = maskBlockCache.get(index);
    if (hit && hit.mask === mask) return hit.blocks;
    const blocks = blockMatches(index, mask);
    maskBlockCache.set(index, { mask, blocks });
    return blocks;
  }

  /**
   * Events of `index` overlapping [t0, t1], clipped to that stretch of the plot.
   * @param {CanvasRenderingContext2D} ctx
   * @param {SegmentIndex} index
   * @param {number} t0
   * @param {number} t1
   * @param {LayoutEntry[]} entries
   * @param {number} scrollTop
   * @param {number} plotW
   * @param {Theme} c
   */
  function drawEvents(ctx, index, t0, t1, entries, scrollTop, plotW, c) {
    const { labelW, view, viewportH } = f;
    const xa = labelW + Math.max(0, timeToX(t0, view, plotW));
    const xb = labelW + Math.min(plotW, timeToX(t1, view, plotW));
    if (!(xb > xa) || index.n === 0) return;
    ctx.save();
    ctx.beginPath();
    ctx.rect(xa, AXIS_H, xb - xa, viewportH - AXIS_H);
    ctx.clip();
    paths.fill(null);
    labels.n = 0;
    const mask = f.mask;
    const maskBlocks = mask ? maskBlocksFor(index, mask) : null;
    const nameCol = index.names;
    for (const entry of entries) {
      const summary = entry.kind === "summary";
      const y = AXIS_H + entry.y - scrollTop;
      for (const lane of eventLanesOf(entry)) {
        const chunks = index.lanes.get(lane.id);
        if (!chunks) continue;
        for (const chunk of chunks) {
          for (let r = 0; r < chunk.rows; r++) {
            if (chunk.hi[r] <= chunk.lo[r]) continue;
            const [k0, k1] = rowRange(index, chunk.lo[r], chunk.hi[r], t0, t1);
            if (k1 <= k0) continue;
            boxes.n = 0;
            lodRow(index, k0, k1, view, plotW, 1, boxes, mask, maskBlocks);
            const by = y + LANE_PAD + (summary ? 0 : Math.min(r, (lane.rows ?? 1) - 1)) * ROW_H + 1;
            for (let b = 0; b < boxes.n; b++) {
              const x = labelW + boxes.x0[b];
              const w = Math.max(1, boxes.x1[b] - boxes.x0[b]);
              const nameIdx = nameCol ? nameCol[index.perm[boxes.pos[b]]] : -1;
              const color = mask && !boxes.match[b] ? DIM_COLOR : colorOf(nameIdx);
              let path = paths[color];
              if (!path) path = paths[color] = new Path2D();
              path.rect(x, by, w, ROW_H - 2);
              if (!summary && w >= LABEL_MIN_PX && boxes.count[b] === 1) pushLabel(x, by, w, nameIdx);
            }
          }
        }
      }
    }
    const fills = palette(c.dark);
    // Non-matches first, so matches that overlap them stay on top.
    for (let k = 0; k < PALETTE_SIZE; k++) {
      const i = (k + DIM_COLOR) % PALETTE_SIZE;
      if (!paths[i]) continue;
      ctx.fillStyle = fills[i];
      ctx.fill(paths[i]);
      paths[i] = null;
    }
    ctx.fillStyle = c.onBox;
    for (let i = 0; i < labels.n; i++) {
      const x0 = Math.max(labels.x[i], xa);
      const x1 = Math.min(labels.x[i] + labels.w[i], xb);
      const text = fitText(ctx, nameText(labels.name[i]), x1 - x0 - 6, textWidths);
      if (text) ctx.fillText(text, x0 + 3, labels.y[i] + (ROW_H - 2) / 2 + 0.5);
    }
    ctx.restore();
  }

  /**
   * Paint one frame; ctx is already scaled to CSS pixels, filled with the background.
   * @param {CanvasRenderingContext2D} ctx
   * @param {Frame} frame
   * @param {Theme} c
   * @param {string} font
   */
  function paint(ctx, frame, c, font) {
    f = frame;
    const { view, labelW, plotW, viewportH, scrollTop, detail } = f;
    const ticks = axisTicks(view, plotW, 90);
    const { first: firstIndex, entries } = visibleEntries(scrollTop);

    // Lane backgrounds (alternating) and grid lines.
    for (let k = 0; k < entries.length; k++) {
      const entry = entries[k];
      if (entry.kind === "header" || entry.kind === "rank") continue;
      const y = AXIS_H + entry.y - scrollTop;
      ctx.fillStyle = (firstIndex + k) % 2 ? c.bgAlt : c.bg;
      ctx.fillRect(labelW, y, plotW, entry.h);
    }
    ctx.strokeStyle = c.grid;
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (const tick of ticks.ticks) {
      const x = Math.round(labelW + tick.x) + 0.5;
      ctx.moveTo(x, AXIS_H);
      ctx.lineTo(x, viewportH);
    }
    ctx.stroke();

    // Events: the detail window where it covers the view, the overview elsewhere.
    if (detail && detail.end > view.start && detail.start < view.end) {
      if (view.start < detail.start) drawEvents(ctx, overview, view.start, detail.start, entries, scrollTop, plotW, c);
      drawEvents(ctx, detail.index, Math.max(view.start, detail.start), Math.min(view.end, detail.end), entries, scrollTop, plotW, c);
      if (detail.end < view.end) drawEvents(ctx, overview, detail.end, view.end, entries, scrollTop, plotW, c);
    } else {
      drawEvents(ctx, overview, view.start, view.end, entries, scrollTop, plotW, c);
    }
    drawCounters(ctx, f, entries, c, data);
    drawOverlays(ctx, f, c, laneById);
    drawLabels(ctx, f, c, font, entries, textWidths);
    if (emptyText) {
      ctx.fillStyle = c.muted;
      ctx.fillText(emptyText, labelW + 12, AXIS_H + ROW_H);
    }
    drawAxis(ctx, f, c, ticks, f.pendingWindow ? countsLoading : counts, textWidths);
    f = /** @type {Frame} */ (/** @type {unknown} */ (null));
  }

  return { paint };
}
