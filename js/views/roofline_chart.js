// @ts-check
// The roofline's SVG chart: log-log axes (FLOP/byte against FLOP/s) with a decade grid, the
// roofs (roofline_roofs.js), an empty layer for roofline.js to draw the points in, and the
// hover card beside it. Built only when some point can be plotted.

import { decadeTicks, flopsTickLabel, intensityTickLabel, logScale, rooflineDomains } from "../model/roofline.js";
import { node } from "./dom.js";
import { drawRoofs, s, svgText } from "./roofline_roofs.js";

const W = 640;
const H = 380;
const M = { left: 78, right: 16, top: 14, bottom: 44 };

/**
 * @param {import("../model/roofline.js").RooflinePoint[]} points summary.roofline.points
 * @param {import("./roofline_roofs.js").Roofs} roofs roofsOf(hardware)
 * @returns {{el: HTMLElement, x: import("./roofline_roofs.js").Scale, y: import("./roofline_roofs.js").Scale,
 *   pointLayer: SVGGElement, tip: HTMLElement}} x and y: the scales (logScale) from data to the SVG's px
 */
export function buildChart(points, roofs) {
  const el = node("div", "gp-rl-chart");
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, class: "gp-rl-svg", role: "img" });
  svg.appendChild(s("title", {}, "Roofline: arithmetic intensity (FLOP/byte) against FLOP/s, log-log"));
  const domains = rooflineDomains(points, roofs);
  const x = logScale(domains.x, [M.left, W - M.right]);
  const y = logScale(domains.y, [H - M.bottom, M.top]);

  const grid = s("g", { class: "gp-rl-grid" });
  const axes = s("g", { class: "gp-rl-axes" });
  for (const t of decadeTicks(...domains.x)) {
    const px = x.map(t.value);
    grid.appendChild(s("line", { x1: px, x2: px, y1: M.top, y2: H - M.bottom }));
    axes.appendChild(svgText(px, H - M.bottom + 14, intensityTickLabel(t.exp), { "text-anchor": "middle" }));
  }
  for (const t of decadeTicks(...domains.y)) {
    const py = y.map(t.value);
    grid.appendChild(s("line", { x1: M.left, x2: W - M.right, y1: py, y2: py }));
    axes.appendChild(svgText(M.left - 6, py + 4, flopsTickLabel(t.exp), { "text-anchor": "end" }));
  }
  const plotW = W - M.left - M.right;
  const plotH = H - M.top - M.bottom;
  axes.appendChild(s("rect", { x: M.left, y: M.top, width: plotW, height: plotH, class: "gp-rl-frame" }));
  const title = { "text-anchor": "middle", class: "gp-rl-axis-title" };
  axes.appendChild(svgText(M.left + plotW / 2, H - 8, "arithmetic intensity (FLOP/byte)", title));
  axes.appendChild(svgText(14, M.top + plotH / 2, "FLOP/s", { ...title, rotate: -90 }));
  svg.appendChild(grid);
  svg.appendChild(axes);
  svg.appendChild(drawRoofs(roofs, domains, x, y, { left: M.left, right: W - M.right, top: M.top, bottom: H - M.bottom }));

  const pointLayer = s("g", { class: "gp-rl-points" });
  svg.appendChild(pointLayer);
  el.appendChild(svg);
  const tip = node("div", "gp-popover gp-rl-tip");
  tip.hidden = true;
  el.appendChild(tip);
  return { el, x, y, pointLayer, tip };
}
