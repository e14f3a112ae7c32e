// @ts-check
// The visible time window: time <-> pixels, zoom, pan and keyboard navigation, axis ticks, and
// when to fetch a finer detail window. No DOM; unit-tested. Numbers are spelt by format.js.
//
// Times are nanoseconds from the trace start (float64). A "view" is {start, end} in ns.

import { decimalsFor, formatTimeIn, timeUnitFor } from "./format.js";

/** @typedef {{start: number, end: number}} View a time window, ns from the trace start */

// ---------------------------------------------------------------------------------------------
// Time <-> pixels, zoom and pan

/**
 * @param {number} t
 * @param {View} view
 * @param {number} width px
 * @returns {number} x, px from the plot's left
 */
export function timeToX(t, view, width) {
  return ((t - view.start) / (view.end - view.start)) * width;
}

/**
 * @param {number} x px from the plot's left
 * @param {View} view
 * @param {number} width px
 * @returns {number}
 */
export function xToTime(x, view, width) {
  return view.start + (x / width) * (view.end - view.start);
}

/**
 * Clamp a view to [0, span], keeping its length when it fits.
 * @param {View} view
 * @param {number} span
 * @param {number} [minSpan]
 * @returns {View}
 */
export function clampView(view, span, minSpan = 1) {
  const full = Math.max(span, minSpan);
  let len = Math.min(Math.max(view.end - view.start, Math.min(minSpan, full)), full);
  let start = view.start;
  if (!Number.isFinite(start)) start = 0;
  if (!Number.isFinite(len) || len <= 0) len = full;
  start = Math.min(Math.max(start, 0), full - len);
  return { start, end: start + len };
}

/**
 * Zoom by `factor` (< 1 zooms in) keeping time `anchor` under the same pixel.
 * The result is clamped to [0, span] and no narrower than minSpan.
 * @param {View} view
 * @param {number} anchor
 * @param {number} factor
 * @param {number} span
 * @param {number} [minSpan]
 * @returns {View}
 */
export function zoomAt(view, anchor, factor, span, minSpan = 1) {
  const len = view.end - view.start;
  const full = Math.max(span, minSpan);
  const newLen = Math.min(Math.max(len * factor, Math.min(minSpan, full)), full);
  const frac = len > 0 ? (anchor - view.start) / len : 0.5;
  const start = anchor - frac * newLen;
  return clampView({ start, end: start + newLen }, span, minSpan);
}

/**
 * Shift the view by dt nanoseconds (positive moves later), clamped to [0, span].
 * @param {View} view
 * @param {number} dt
 * @param {number} span
 * @param {number} [minSpan]
 * @returns {View}
 */
export function pan(view, dt, span, minSpan = 1) {
  return clampView({ start: view.start + dt, end: view.end + dt }, span, minSpan);
}

/**
 * Wheel delta (pixels, or lines/pages via deltaMode) to a zoom factor; deltaY > 0 zooms out.
 * @param {number} deltaY
 * @param {number} [deltaMode] 0 pixels, 1 lines, 2 pages
 * @returns {number}
 */
export function wheelZoomFactor(deltaY, deltaMode = 0) {
  const px = deltaMode === 1 ? deltaY * 16 : deltaMode === 2 ? deltaY * 400 : deltaY;
  const clamped = Math.max(-500, Math.min(500, px));
  return Math.exp(clamped * 0.002);
}

// ---------------------------------------------------------------------------------------------
// Navigation (pure view transitions) and detail windows

export const ZOOM_STEP = 0.8;
export const PAN_STEP = 0.2;

/**
 * Perfetto-style keys: W/S zoom in/out keeping `anchor` (the time under the mouse; the view's
 * centre without one) in place, A/D pan by a fifth of the view, 0 shows everything. Returns the
 * new view, or null for keys that are not navigation.
 * @param {string} key
 * @param {View} view
 * @param {{span: number, minSpan?: number, anchor?: number | null}} opts
 * @returns {View | null}
 */
export function keyToView(key, view, { span, minSpan = 1, anchor = null }) {
  const len = view.end - view.start;
  const at = anchor ?? view.start + len / 2;
  switch (String(key).toLowerCase()) {
    case "w": return zoomAt(view, at, ZOOM_STEP, span, minSpan);
    case "s": return zoomAt(view, at, 1 / ZOOM_STEP, span, minSpan);
    case "a": return pan(view, -PAN_STEP * len, span, minSpan);
    case "d": return pan(view, PAN_STEP * len, span, minSpan);
    case "0": return clampView({ start: 0, end: span }, span, minSpan);
    default: return null;
  }
}

/**
 * The view that shows one event with `margin` (a fraction of its length) on each side.
 * @param {number} start
 * @param {number} dur
 * @param {number} span
 * @param {number} [minSpan]
 * @param {number} [margin]
 * @returns {View}
 */
export function viewForEvent(start, dur, span, minSpan = 1, margin = 0.25) {
  const len = Math.max(dur, minSpan);
  const mid = start + dur / 2;
  const half = (len * (1 + 2 * margin)) / 2;
  return clampView({ start: mid - half, end: mid + half }, span, minSpan);
}

/**
 * Whether a detail window must be fetched for `view` across `width` pixels, and which. null when
 * the overview (`overviewBins` bins across the span) or the window already held or in flight
 * (`current`: {start, end, merged, width}) is fine enough: real events covering the view, or
 * merged bins no wider than a pixel. Otherwise {start, end, width}: the view widened by `pad` on
 * each side (so small pans need no new request), with the width scaled to keep the resolution.
 * @param {View} view
 * @param {number} width px
 * @param {number} span
 * @param {{start: number, end: number, merged: boolean, width: number} | null} current
 * @param {{overviewBins?: number, pad?: number}} [opts]
 * @returns {{start: number, end: number, width: number} | null}
 */
export function planWindowRequest(view, width, span, current, { overviewBins = 8192, pad = 0.25 } = {}) {
  const len = view.end - view.start;
  if (!(len > 0) || !(width > 0)) return null;
  const pixel = len / width;
  if (span / overviewBins <= pixel / 2) return null;
  if (current && current.start <= view.start && current.end >= view.end) {
    if (!current.merged) return null;
    if ((current.end - current.start) / (2 * current.width) <= pixel) return null;
  }
  const start = Math.max(0, view.start - pad * len);
  const end = Math.min(span, view.end + pad * len);
  return { start, end, width: Math.max(1, Math.round((width * (end - start)) / len)) };
}

// ---------------------------------------------------------------------------------------------
// Axis ticks

/**
 * Smallest 1-2-5 x 10^k step >= raw.
 * @param {number} raw
 * @returns {number}
 */
export function niceStep(raw) {
  if (!(raw > 0) || !Number.isFinite(raw)) return 1;
  const exp = Math.floor(Math.log10(raw));
  const base = 10 ** exp;
  for (const m of [1, 2, 5, 10]) {
    if (m * base >= raw * (1 - 1e-12)) return m * base;
  }
  return 10 * base;
}

/**
 * Axis ticks for the view across `width` pixels, at least `minSpacingPx` apart, on a 1-2-5 step
 * (never below 1 ns). Labels share one unit chosen by the view's end, with as many decimals as
 * the step needs (format.js's units and rounding).
 * @param {View} view
 * @param {number} width px
 * @param {number} [minSpacingPx]
 * @returns {{step: number, unit: string, ticks: {t: number, x: number, label: string}[]}}
 */
export function axisTicks(view, width, minSpacingPx = 80) {
  const len = view.end - view.start;
  if (!(len > 0) || !(width > 0)) return { step: 0, unit: "ns", ticks: [] };
  const step = Math.max(1, niceStep((len * minSpacingPx) / width));
  const unit = timeUnitFor(Math.max(Math.abs(view.end), step));
  const decimals = decimalsFor(unit, step);
  const ticks = [];
  const first = Math.ceil(view.start / step - 1e-9) * step;
  for (let k = 0; ; k++) {
    const t = first + k * step;
    if (t > view.end + step * 1e-9 || k > 10000) break;
    ticks.push({ t, x: ((t - view.start) / len) * width, label: formatTimeIn(t, unit, decimals) });
  }
  return { step, unit: unit.label, ticks };
}
