// @ts-check
// The sweep's widget: each metric's log-log plot as report/sweep_layout.py laid it out (the
// same geometry report/sweep_svg.py draws for the page), then the sweep's text. Module paths
// come from the user's model: they reach the DOM only through textContent.
//
// For browser tests: the root carries data-plots (charts drawn); each chart data-metric and
// data-series; each point circle.point.

import { s, labelText } from "./views/roofline_roofs.js";

/** @typedef {import("./model/report_types.js").Label} Label */
/** @typedef {[number, number]} Pt */
/** @typedef {{value: number, at: number, label: Label, major: boolean}} Tick */
/** @typedef {{subject: string, metric: string, colour: number, points: Pt[], values: Pt[],
 *   line: [Pt, Pt] | null, label: Label | null, leader: [Pt, Pt] | null, title: string}} SeriesPlot */
/** @typedef {{width: number, height: number, box: {left: number, top: number, right: number,
 *   bottom: number}, parameter: string, metric: string, x_ticks: Tick[], y_ticks: Tick[],
 *   x_title: Label, y_title: Label, series: SeriesPlot[], empty: string | null}} SweepPlot */
/** @typedef {{get: (name: string) => any, on: (event: string, f: () => void) => void,
 *   off: (event: string, f: () => void) => void}} Model */

/**
 * One chart, drawn as laid out.
 * @param {SweepPlot} plot
 * @param {string[]} palette the page's colours, by series index
 * @returns {SVGElement}
 */
export function sweepChart(plot, palette) {
  const { box } = plot;
  const svg = s("svg", { viewBox: `0 0 ${plot.width} ${plot.height}`, class: "gp-sweep-chart", "data-metric": plot.metric, "data-series": plot.series.length });
  svg.style.maxWidth = `${plot.width}px`;
  svg.style.width = "100%";
  for (const t of plot.x_ticks) svg.appendChild(s("line", { x1: t.at, y1: box.top, x2: t.at, y2: box.bottom, stroke: t.major ? "#ddd" : "#eee" }));
  for (const t of plot.y_ticks) svg.appendChild(s("line", { x1: box.left, y1: t.at, x2: box.right, y2: t.at, stroke: t.major ? "#ddd" : "#eee" }));
  svg.appendChild(s("rect", { x: box.left, y: box.top, width: box.right - box.left, height: box.bottom - box.top, fill: "none", stroke: "#bbb" }));
  for (const series of plot.series) {
    const colour = palette[series.colour % palette.length] || "#333";
    const group = s("g", { class: "gp-sweep-series", "data-subject": series.subject });
    group.appendChild(s("title", {}, series.title));
    if (series.line) {
      const [a, b] = series.line;
      group.appendChild(s("line", { x1: a[0], y1: a[1], x2: b[0], y2: b[1], stroke: colour, "stroke-width": 1.5 }));
    }
    if (series.leader) {
      const [a, b] = series.leader;
      group.appendChild(s("line", { x1: a[0], y1: a[1], x2: b[0], y2: b[1], stroke: colour, "stroke-width": 0.75 }));
    }
    for (const [x, y] of series.points) group.appendChild(s("circle", { class: "point", cx: x, cy: y, r: 3, fill: colour }));
    if (series.label) {
      const text = labelText(series.label, "gp-sweep-label");
      text.setAttribute("fill", colour);
      group.appendChild(text);
    }
    svg.appendChild(group);
  }
  for (const label of [...plot.x_ticks.map((t) => t.label), ...plot.y_ticks.map((t) => t.label), plot.x_title, plot.y_title]) {
    const text = labelText(label, "gp-sweep-tick");
    text.setAttribute("fill", "#333");
    svg.appendChild(text);
  }
  if (plot.empty) {
    svg.appendChild(s("text", { x: (box.left + box.right) / 2, y: (box.top + box.bottom) / 2, "text-anchor": "middle", fill: "#777" }, plot.empty));
  }
  return svg;
}

/** @param {{model: Model, el: HTMLElement}} ctx */
function render({ model, el }) {
  const root = document.createElement("div");
  root.className = "gpuprofile-sweep-live";
  el.appendChild(root);
  function draw() {
    /** @type {SweepPlot[]} */
    const plots = model.get("plots") || [];
    /** @type {string[]} */
    const palette = model.get("palette") || [];
    const pre = document.createElement("pre");
    pre.textContent = String(model.get("text") || "");
    root.replaceChildren(...plots.map((p) => sweepChart(p, palette)), pre);
    root.dataset.plots = String(plots.length);
  }
  draw();
  model.on("change:plots", draw);
  model.on("change:text", draw);
  return () => {
    model.off("change:plots", draw);
    model.off("change:text", draw);
  };
}

export default { render };
