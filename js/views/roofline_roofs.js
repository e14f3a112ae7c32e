// @ts-check
// The roofline chart's roofs: the memory slope, a flat line per compute peak with its ridge,
// their labels placed by js/model/roof_labels.js so none covers another, and the roofs as one
// line of text under the chart. SVG helpers shared with roofline.js and roofline_chart.js.

import { formatFlopsPerS, formatIntensity, ROOF_SOURCE_WORDS } from "../model/format.js";
import { computeRoofLabel, layoutRoofLabels, memoryRoofLabel, ridgeLabel } from "../model/roof_labels.js";
import { memoryPolyline, roofPolyline } from "../model/roofline.js";
import { node } from "./dom.js";

const SVG_NS = "http://www.w3.org/2000/svg";

/** @typedef {import("../model/roofline.js").Pair} Pair */
/** @typedef {ReturnType<typeof import("../model/roofline.js").logScale>} Scale */
/** @typedef {ReturnType<typeof import("../model/roofline.js").roofsOf>} Roofs */
/** @typedef {import("../model/roof_labels.js").Label} Label */
/** @typedef {Record<string, string | number>} Attrs */

/**
 * An SVG element with these attributes, and its text through textContent.
 * @template {keyof SVGElementTagNameMap} K
 * @param {K} tag
 * @param {Attrs} [attrs]
 * @param {unknown} [text]
 * @returns {SVGElementTagNameMap[K]}
 */
export function s(tag, attrs = {}, text) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = String(text);
  return el;
}

/**
 * SVG text set through textContent; `rotate` (degrees) turns it about its anchor.
 * @param {number} x
 * @param {number} y
 * @param {unknown} text
 * @param {Attrs & {rotate?: number}} [attrs]
 */
export function svgText(x, y, text, { rotate, ...attrs } = {}) {
  const el = s("text", { x, y, ...attrs }, text);
  if (rotate) el.setAttribute("transform", `rotate(${Number(rotate).toFixed(1)} ${x} ${y})`);
  return el;
}

/**
 * @param {Pair[]} line points in data space
 * @param {Scale} x
 * @param {Scale} y
 */
function polylineAttr(line, x, y) {
  return line.map(([a, b]) => `${x.map(a).toFixed(1)},${y.map(b).toFixed(1)}`).join(" ");
}

/**
 * The roofs as an SVG group.
 * @param {Roofs} roofs roofsOf(hardware)
 * @param {{x: Pair, y: Pair}} domains the chart's {x, y} data domains
 * @param {Scale} x the x scale (logScale)
 * @param {Scale} y the y scale
 * @param {{left: number, right: number, top: number, bottom: number}} plot the plot's {left, right, top, bottom} in px
 */
export function drawRoofs(roofs, domains, x, y, plot) {
  const g = s("g", { class: "gp-rl-roofs" });
  const bw = roofs.memory ? roofs.memory.bandwidth : null;
  // The memory roof's label runs along the slope of the highest compute roof, or of the memory
  // roof drawn alone.
  /** @type {Pair[]} */
  let slopeLine = [];
  if (bw && !roofs.compute.length) {
    slopeLine = memoryPolyline(bw, domains.x, domains.y);
    if (slopeLine.length) {
      g.appendChild(s("polyline", { points: polylineAttr(slopeLine, x, y), class: "gp-rl-roof", "data-roof": "dram" }));
    }
  }
  /** @type {{text: string, y: number}[]} */
  const compute = [];
  /** @type {{text: string, x: number}[]} */
  const ridges = [];
  let highest = -Infinity;
  for (const roof of roofs.compute) {
    const line = roofPolyline(roof.peak, bw, domains.x, domains.y);
    if (roof.peak > highest) {
      highest = roof.peak;
      slopeLine = line;
    }
    if (!line.length) continue;
    const poly = s("polyline", { points: polylineAttr(line, x, y), class: "gp-rl-roof", "data-roof": roof.key });
    poly.appendChild(s("title", {}, `${roof.key}: ${formatFlopsPerS(roof.peak)}`));
    g.appendChild(poly);
    compute.push({ text: computeRoofLabel(roof), y: y.map(roof.peak) });
    if (roof.ridge !== null && roof.ridge >= domains.x[0] && roof.ridge <= domains.x[1]) {
      const rx = x.map(roof.ridge);
      const ry = y.map(roof.peak);
      g.appendChild(s("line", { x1: rx, x2: rx, y1: ry, y2: plot.bottom, class: "gp-rl-ridge-drop" }));
      const mark = s("circle", { cx: rx, cy: ry, r: 3, class: "gp-rl-ridge" });
      mark.appendChild(s("title", {}, `${roof.key} ridge: ${formatIntensity(roof.ridge)}`));
      g.appendChild(mark);
      ridges.push({ text: ridgeLabel(roof.ridge), x: rx });
    }
  }
  let slope = null;
  if (bw && slopeLine.length >= 2) {
    const [a, b] = slopeLine;
    slope = { text: memoryRoofLabel(bw), x0: x.map(a[0]), y0: y.map(a[1]), x1: x.map(b[0]), y1: y.map(b[1]) };
  }
  const labels = layoutRoofLabels({ plot, compute, ridges, slope });
  /**
   * @param {Label} label
   * @param {string} className
   */
  const text = (label, className) =>
    svgText(label.x, label.y, label.text, {
      rotate: label.angle,
      class: className,
      ...(label.anchor === "end" ? { "text-anchor": "end" } : {}),
    });
  for (const label of labels.compute) g.appendChild(text(label, "gp-rl-roof-label"));
  if (labels.slope) g.appendChild(text(labels.slope, "gp-rl-roof-label"));
  for (const label of labels.ridges) if (label.shown) g.appendChild(text(label, "gp-rl-ridge-label"));
  return g;
}

/**
 * The roofs in one line of text, with their source ("Roofs of NVIDIA H100 (datasheet): ...").
 * @param {Roofs} roofs
 * @param {import("../model/roofline.js").Hardware} hardware
 */
export function roofList(roofs, hardware) {
  const box = node("div", "gp-rl-roofs-list");
  if (!roofs.memory && !roofs.compute.length) return box;
  const words = /** @type {Record<string, string | undefined>} */ (ROOF_SOURCE_WORDS);
  const source = words[String(hardware.source)] ?? hardware.source;
  const parts = [];
  if (roofs.memory) parts.push(memoryRoofLabel(roofs.memory.bandwidth));
  for (const r of roofs.compute) {
    const ridge = r.ridge !== null ? `, ridge at ${formatIntensity(r.ridge)}` : "";
    parts.push(`${computeRoofLabel(r)}${ridge}`);
  }
  const name = `${hardware.name ?? "this GPU"}${source ? ` (${source})` : ""}`;
  box.textContent = `Roofs of ${name}: ${parts.join(" · ")}`;
  if (hardware.citation) box.title = String(hardware.citation);
  return box;
}
