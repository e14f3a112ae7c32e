// @ts-check
// Where the roofline's roof labels go, so that none covers another: the compute roofs' labels
// at the right edge, spread apart when roofs lie close together (fp8, fp16 and tf32 peaks are
// a factor of 2 apart); the memory roof's label along its slope, at the first place clear of
// them; a ridge's label beside its drop line, left out where it would cover another label (the
// ridge's tooltip and the roofs list under the chart still say it); and the labels' text, so
// that what is measured is what is drawn. Pure: no DOM, unit-tested.
//
// Units: px of the chart's SVG (y down). Text is measured by estimate, generously: a label
// takes `font * CHAR_EM` per character and `font * (ASCENT + DESCENT)` of height.

import { formatBytesPerS, formatFlopsPerS, formatIntensity } from "./format.js";

const CHAR_EM = 0.66;
const ASCENT = 0.95;
const DESCENT = 0.25;
const PAD = 1; // px of air kept around every label

/**
 * A compute roof's label as the chart draws it: "fp16/bf16 990 TFLOP/s".
 * @param {{key: string, peak: unknown}} roof
 * @returns {string}
 */
export function computeRoofLabel(roof) {
  return `${roof.key} ${formatFlopsPerS(roof.peak)}`;
}

/**
 * A ridge's label as the chart draws it: "ridge 295 FLOP/B".
 * @param {unknown} ridge FLOP per byte
 * @returns {string}
 */
export function ridgeLabel(ridge) {
  return `ridge ${formatIntensity(ridge)}`;
}

/**
 * The memory roof's label as the chart draws it: "DRAM 3.35 TB/s".
 * @param {unknown} bandwidth bytes per second
 * @returns {string}
 */
export function memoryRoofLabel(bandwidth) {
  return `DRAM ${formatBytesPerS(bandwidth)}`;
}

/** @typedef {[number, number]} Pt */
/** @typedef {{left: number, right: number, top: number, bottom: number}} Rect */
/**
 * A label as SVG draws it: baseline anchor (x, y), text-anchor, rotation (degrees) about the
 * anchor, font size; `poly` is its box's corners on the chart.
 * @typedef {{text: string, x: number, y: number, anchor: "start" | "end", angle: number, font: number, poly: Pt[]}} Label
 */

/**
 * The corners of a label's box: the text's extent along its baseline and from its ascent to
 * its descent, padded, rotated about the anchor.
 * @param {string} text
 * @param {number} x
 * @param {number} y
 * @param {{anchor?: "start" | "end", angle?: number, font?: number}} [opts]
 * @returns {Pt[]}
 */
export function labelPolygon(text, x, y, { anchor = "start", angle = 0, font = 10 } = {}) {
  const w = String(text).length * font * CHAR_EM;
  const x0 = (anchor === "end" ? -w : 0) - PAD;
  const x1 = (anchor === "end" ? 0 : w) + PAD;
  const y0 = -font * ASCENT - PAD;
  const y1 = font * DESCENT + PAD;
  const a = (angle * Math.PI) / 180;
  const cos = Math.cos(a);
  const sin = Math.sin(a);
  /** @type {Pt[]} */
  const local = [[x0, y0], [x1, y0], [x1, y1], [x0, y1]];
  return local.map(([u, v]) => [x + u * cos - v * sin, y + u * sin + v * cos]);
}

/**
 * Whether two convex polygons overlap (touching is not overlapping): no edge normal of either
 * separates them.
 * @param {Pt[]} a
 * @param {Pt[]} b
 * @returns {boolean}
 */
export function polygonsOverlap(a, b) {
  for (const poly of [a, b]) {
    for (let i = 0; i < poly.length; i++) {
      const [x0, y0] = poly[i];
      const [x1, y1] = poly[(i + 1) % poly.length];
      const nx = y0 - y1;
      const ny = x1 - x0;
      /** @param {Pt[]} p */
      const span = (p) => {
        const d = p.map(([x, y]) => x * nx + y * ny);
        return [Math.min(...d), Math.max(...d)];
      };
      const [amin, amax] = span(a);
      const [bmin, bmax] = span(b);
      const eps = 1e-9 * (Math.abs(nx) + Math.abs(ny));
      if (amax <= bmin + eps || bmax <= amin + eps) return false;
    }
  }
  return true;
}

/**
 * @param {Pt[]} poly
 * @param {Rect} r
 */
function inside(poly, r) {
  return poly.every(([x, y]) => x >= r.left - 1e-9 && x <= r.right + 1e-9 && y >= r.top - 1e-9 && y <= r.bottom + 1e-9);
}

/**
 * Positions as close to `wanted` as they can be, in the same order, each at least `gap` from
 * the next and all within [lo, hi] (when they fit there): labels that would touch form a
 * cluster centred on what its members want, and clusters merge until none touch.
 * @param {number[]} wanted
 * @param {number} gap
 * @param {number} lo
 * @param {number} hi
 * @returns {number[]}
 */
export function spread(wanted, gap, lo, hi) {
  const order = wanted.map((_, i) => i).sort((i, j) => wanted[i] - wanted[j]);
  /** @type {{members: number[], start: number}[]} */
  const clusters = [];
  /** @param {{members: number[]}} c */
  const ideal = (c) => {
    // The start that puts the members, `gap` apart, nearest (least squares) to what they want.
    const mean = c.members.reduce((acc, i, k) => acc + wanted[i] - k * gap, 0) / c.members.length;
    const room = Math.max(lo, hi - (c.members.length - 1) * gap);
    return Math.min(Math.max(mean, lo), room);
  };
  for (const i of order) {
    /** @type {{members: number[], start: number}} */
    let c = { members: [i], start: 0 };
    c.start = ideal(c);
    // Merge with the cluster before while they touch.
    while (clusters.length) {
      const prev = clusters[clusters.length - 1];
      if (prev.start + prev.members.length * gap <= c.start) break;
      clusters.pop();
      c = { members: [...prev.members, ...c.members], start: 0 };
      c.start = ideal(c);
    }
    clusters.push(c);
  }
  const out = new Array(wanted.length);
  for (const c of clusters) c.members.forEach((i, k) => (out[i] = c.start + k * gap));
  return out;
}

/**
 * @param {{
 *   plot: Rect,
 *   compute?: {text: string, y: number}[],
 *   slope?: {text: string, x0: number, y0: number, x1: number, y1: number} | null,
 *   ridges?: {text: string, x: number}[],
 *   font?: number,
 *   ridgeFont?: number,
 * }} input compute: each compute roof's label and the y of its line; slope: the memory roof's
 *   label and the ends of its slope as drawn; ridges: each ridge's label and x
 * @returns {{compute: Label[], slope: Label | null, ridges: (Label & {shown: boolean})[]}}
 */
export function layoutRoofLabels({ plot, compute = [], slope = null, ridges = [], font = 10, ridgeFont = 9 }) {
  /** @type {Pt[][]} */
  const placed = [];
  const clear = (/** @type {Pt[]} */ poly) => inside(poly, plot) && !placed.some((p) => polygonsOverlap(p, poly));

  // Compute roofs: baselines 4 px above their lines, spread apart, right-aligned at the edge.
  const gap = font * (ASCENT + DESCENT) + 2 * PAD;
  const ys = spread(
    compute.map((c) => c.y - 4),
    gap,
    plot.top + font * ASCENT + PAD,
    plot.bottom - font * DESCENT - PAD,
  );
  const x = plot.right - 4;
  const computeLabels = compute.map((c, i) => {
    const poly = labelPolygon(c.text, x, ys[i], { anchor: "end", font });
    placed.push(poly);
    return { text: c.text, x, y: ys[i], anchor: /** @type {const} */ ("end"), angle: 0, font, poly };
  });

  // The memory roof: along its slope, 10 px in and 5 px above the line (else below it), at the
  // first place from where the slope enters the plot that is inside it and clear of the
  // compute labels.
  /** @type {Label | null} */
  let slopeLabel = null;
  if (slope) {
    const dx = slope.x1 - slope.x0;
    const dy = slope.y1 - slope.y0;
    const angle = (Math.atan2(dy, dx) * 180) / Math.PI;
    /** @type {Label[]} */
    const candidates = [];
    for (const below of [false, true]) {
      for (let k = 0; k < 20; k++) {
        const t = k / 20;
        const lx = slope.x0 + t * dx + 10;
        const ly = slope.y0 + t * dy + (10 * dy) / (dx || 1) + (below ? font * ASCENT + 4 : -5);
        const poly = labelPolygon(slope.text, lx, ly, { angle, font });
        candidates.push({ text: slope.text, x: lx, y: ly, anchor: "start", angle, font, poly });
      }
    }
    slopeLabel = candidates.find((c) => clear(c.poly)) ?? null;
    if (slopeLabel) placed.push(slopeLabel.poly);
  }

  // Ridges: rotated up their drop lines from the bottom; shown where they cover nothing.
  const ridgeLabels = ridges.map((r) => {
    const lx = r.x - 3;
    const ly = plot.bottom - 4;
    const poly = labelPolygon(r.text, lx, ly, { angle: -90, font: ridgeFont });
    const shown = clear(poly);
    if (shown) placed.push(poly);
    return { text: r.text, x: lx, y: ly, anchor: /** @type {const} */ ("start"), angle: -90, font: ridgeFont, poly, shown };
  });

  return { compute: computeLabels, slope: slopeLabel, ridges: ridgeLabels };
}
