// @ts-check
// The roofline's SVG chart as Python laid it out: the decade grid, the ticks and axis titles,
// the roofs (roofline_roofs.js), an empty layer for roofline.js to draw the points in, and the
// hover card beside it. Built only when some point can be plotted.

import { node } from "./dom.js";
import { drawRoofs, labelText, s } from "./roofline_roofs.js";

/**
 * @param {import("../model/roofline.js").RooflineLayout} layout summary.roofline_layout
 * @returns {{el: HTMLElement, pointLayer: SVGElement, tip: HTMLElement}}
 */
export function buildChart(layout) {
  const { width, height, plot } = layout;
  const el = node("div", "gp-rl-chart");
  const svg = s("svg", { viewBox: `0 0 ${width} ${height}`, class: "gp-rl-svg", role: "img" });
  svg.appendChild(s("title", {}, "Roofline: arithmetic intensity (FLOP/byte) against FLOP/s, log-log"));
  const grid = s("g", { class: "gp-rl-grid" });
  const axes = s("g", { class: "gp-rl-axes" });
  for (const t of layout.x.ticks) {
    const px = t.at;
    grid.appendChild(s("line", { x1: px, x2: px, y1: plot.top, y2: plot.bottom }));
    axes.appendChild(labelText(t.label, "gp-rl-tick"));
  }
  for (const t of layout.y.ticks) {
    const py = t.at;
    grid.appendChild(s("line", { x1: plot.left, x2: plot.right, y1: py, y2: py }));
    axes.appendChild(labelText(t.label, "gp-rl-tick"));
  }
  axes.appendChild(s("rect", { x: plot.left, y: plot.top, width: plot.right - plot.left, height: plot.bottom - plot.top, class: "gp-rl-frame" }));
  axes.appendChild(labelText(layout.x.title, "gp-rl-axis-title"));
  axes.appendChild(labelText(layout.y.title, "gp-rl-axis-title"));
  svg.appendChild(grid);
  svg.appendChild(axes);
  svg.appendChild(drawRoofs(layout));
  const pointLayer = s("g", { class: "gp-rl-points" });
  svg.appendChild(pointLayer);
  el.appendChild(svg);
  const tip = node("div", "gp-popover gp-rl-tip");
  tip.hidden = true;
  el.appendChild(tip);
  return { el, pointLayer, tip };
}

