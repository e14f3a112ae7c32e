// What lies under a point of the timeline's canvas: the layout entry at a height, and the event
// (or counter sample) at a point of the plot. No DOM; unit-tested.

import { counterWindow, firstEntryAt, hitEntry } from "./lanes.js";
import { eventAt } from "./segments.js";
import { xToTime } from "./view.js";

/** How far (px) from an event a point may be and still hit it. */
export const HIT_SLACK_PX = 3;

/** The layout entry at canvas height `py` (the plot scrolled by scrollTop, below the axis strip), or null. */
export function entryAt(entries, py, scrollTop, axisH) {
  if (py < axisH) return null;
  const y = py - axisH + scrollTop;
  const e = entries[firstEntryAt(entries, y)];
  return e && e.y <= y ? e : null;
}

/**
 * What is under canvas point (px, py): {ev, lane} for an event, {counter: {lane, t, time, value}}
 * for a counter lane's sample, or null.
 * @param g the frame's geometry: {entries, scrollTop, labelW, plotW, view, detail, dims}; dims:
 *   {axisH, rowH, pad}; detail: the detail window held ({index, table, start, end}) or null
 * @param data what prepareTimeline() derived: counters, counterTimes, counterValues, laneById, tablesAt
 */
export function hitTest(px, py, g, data) {
  const { axisH, rowH, pad } = g.dims;
  if (px < g.labelW || py < axisH) return null;
  const entry = entryAt(g.entries, py, g.scrollTop, axisH);
  if (!entry || entry.kind === "header") return null;
  const { view, plotW } = g;
  const t = xToTime(px - g.labelW, view, plotW);
  const slack = (HIT_SLACK_PX * (view.end - view.start)) / plotW;
  if (entry.kind === "lane" && entry.lanes[0].kind === "counter") {
    const lane = entry.lanes[0];
    const info = data.counters.get(lane.id);
    const times = data.counterTimes;
    if (!info || info.hi <= info.lo || t < times[info.lo]) return null;
    const [k] = counterWindow(times, info.lo, info.hi, t, t);
    return { counter: { lane, t, time: times[k], value: data.counterValues[k] } };
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
