// @ts-check
// What the live panel shows while a cell runs, from the widget's `live` trait: readings grouped
// by device with display text and a bar fill where the unit has a natural full scale. Pure.

import { formatReading, num } from "./format.js";

/**
 * One sampled reading of the `live` trait (fields as Python sends them; any may be missing).
 * @typedef {{device?: unknown, value?: unknown, unit?: unknown, label?: unknown, [key: string]: unknown}} Reading
 */

/**
 * Seconds as "12.3 s", "2 min 05 s".
 * @param {unknown} seconds
 * @returns {string}
 */
export function formatElapsed(seconds) {
  const s = num(seconds);
  if (s === null || s < 0) return "–";
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${String(Math.floor(s - 60 * m)).padStart(2, "0")} s`;
}

/**
 * A reading's value as text in its unit, and its bar fill (0..1) when the unit is a share.
 * @param {Reading | null | undefined} r
 * @returns {{text: string, fill: number | null}}
 */
export function readingView(r) {
  const v = num(r && r.value);
  const unit = String((r && r.unit) || "");
  const text = formatReading(v, unit);
  return { text, fill: v !== null && unit === "%" ? Math.min(1, Math.max(0, v / 100)) : null };
}

/**
 * Readings grouped by device: host (-1) first, then GPUs ascending; order kept within one.
 * @param {Reading[] | null | undefined} readings
 * @returns {{device: number, label: string, readings: Reading[]}[]}
 */
export function readingsByDevice(readings) {
  /** @type {Map<number, Reading[]>} */
  const groups = new Map();
  for (const r of readings || []) {
    const device = r && Number.isInteger(r.device) ? /** @type {number} */ (r.device) : -1;
    let list = groups.get(device);
    if (!list) groups.set(device, (list = []));
    list.push(r);
  }
  return [...groups.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([device, list]) => ({ device, label: device < 0 ? "host" : `GPU ${device}`, readings: list }));
}
