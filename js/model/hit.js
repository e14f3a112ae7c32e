// @ts-check
// What lies under a point of the timeline's canvas: the layout entry at a height, and the event
// (or counter sample) at a point of the plot. No DOM; unit-tested.

import { counterWindow, firstEntryAt, hitEntry } from "./lanes.js";
import { eventAt } from "./segments.js";
import { xToTime } from "./view.js";

/** @typedef {import("./lanes.js").LayoutEntry} LayoutEntry */
/** @typedef {import("./lanes.js").Lane} Lane */
/** @typedef {import("./segments.js").TimelineEvent} TimelineEvent */
/**
 * Where the plot is in the frame: the layout's entries and scroll position, the label column's
 * and plot's widths (px), the view, the detail window held, and the heights of canvas.js.
 * @typedef {{entries: LayoutEntry[], scrollTop: number, labelW: number, plotW: number,
 *   view: import("./view.js").View, detail: import("./timeline_data.js").DetailWindow | null,
 *   dims: {axisH: number, rowH: number, pad: number}}} Geometry
 */
/**
 * @typedef {{ev: TimelineEvent, lane: Lane | undefined} | {counter: {lane: Lane, t: number, time: number, value: number}}} Hit
 */

/** How far (px) from an event a point may be and still hit it. */
export const HIT_SLACK_PX = 3;

/**
 * The layout entry at canvas height `py` (the plot scrolled by scrollTop, below the axis strip), or null.
 * @param {LayoutEntry[]} entries
 * @param {number} py
 * @param {number} scrollTop
 * @param {number} axisH
 * @returns {LayoutEntry | null}
 */
export function entryAt(entries, py, scrollTop, axisH) {
  if (py < axisH) return null;
  const y = py - axisH + scrollTop;
  const e = entries[firstEntryAt(entries, y)];
  return e && e.y <= y ? e : null;
}

/**
 * What is under canvas point (px, py): {ev, lane} for an event, {counter: {lane, t, time, value}}
 * for a counter lane's sample, or null.
 * @param {number} px
 * @param {number} py
 * @param {Geometry} g
 * @param {Pick<import("./timeline_data.js").PreparedTimeline, "counters" | "counterTimes" | "counterValues" | "laneById" | "tablesAt">} data
 *   what prepareTimeline() derived
 * @returns {Hit | null}
 */
export function hitTest(px, py, g, data) {
  const { axisH, rowH, pad } = g.dims;
  if (px < g.labelW || py < axisH) return null;
  const entry = entryAt(g.entries, py, g.scrollTop, axisH);
  if (!entry || entry.kind === "header" || entry.kind === "rank") return null;
  const { view, plotW } = g;
  const t = xToTime(px - g.labelW, view, plotW);
  const slack = (HIT_SLACK_PX * (view.end - view.start)) / plotW;
  if (entry.kind === "lane" && entry.lanes[0].kind === "counter") {
    const lane = entry.lanes[0];
    const info = data.counters.get(lane.id);
    const times = data.counterTimes;
    const values = data.counterValues;
    if (!info || !times || !values || info.hi <= info.lo || t < times[info.lo]) return null;
    const [k] = counterWindow(times, info.lo, info.hi, t, t);
    return { counter: { lane, t, time: times[k], value: values[k] } };
  }
  const top = axisH + entry.y - g.scrollTop;
  const rel = py - top - pad;
  if (rel < 0 || rel >= entry.h - 2 * pad) return null;
  const row = Math.floor(rel / rowH);
  const { index, table } = data.tablesAt(t, g.detail);
  // Rows past the lane's last (a window with more rows than laid out) draw on the last.
  const best = hitEntry(index, entry, row, t, slack);
  if (best < 0) return null;
  const ev = eventAt(index, table, index.perm[best]);
  return { ev, lane: data.laneById.get(ev.lane) };
}
