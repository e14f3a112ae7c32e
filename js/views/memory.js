// @ts-check
// The memory view: summary.memory_layout (report/memory_layout.py) drawn as given, one rank's
// memory in use over time as stacked areas by category with the peak and an out-of-memory
// failure marked; above it, the failure's post-mortem (report.ranks[i].memory.failure): the
// error, what it asked for and the fixes ranked by the bytes each frees. Error text, module
// paths and fixes come from the trace or the program: they reach the DOM only through
// textContent.
//
// For browser tests: the root carries data-rank, data-areas (categories drawn) and data-oom
// ("yes" with a post-mortem); each band data-category.

import "./memory.css";
import { formatSI } from "../model/format.js";
import { node } from "./dom.js";
import { labelText, s } from "./roofline_roofs.js";

/** @typedef {import("./report_types.js").Report} Report */

// report/memory_layout.py's COLOURS, by the index each band carries.
const COLOURS = ["#1f77b4", "#ff7f0e", "#9467bd", "#2ca02c", "#bcbd22", "#7f7f7f"];
const FIXES_SHOWN = 6;

/**
 * The memory panel, or {el: null} when no rank recorded memory.
 * @param {Report | null | undefined} summary the summary trait: the report and its layouts
 */
export function createMemory(summary) {
  summary = summary || {};
  const layout = summary.memory_layout;
  if (!layout) return { el: null, destroy() {} };
  const rank = (summary.ranks || []).find((r) => r && r.rank === layout.rank);
  const memory = rank ? rank.memory : null;

  const root = node("div", "gp-memory-panel");
  root.dataset.rank = String(layout.rank);
  root.dataset.areas = String(layout.areas.length);
  root.dataset.oom = memory && memory.failure ? "yes" : "no";
  root.appendChild(node("div", "gp-panel-title", layout.title));

  const failure = memory ? memory.failure : null;
  if (memory && failure) {
    const box = node("div", "gp-oom");
    const asked = failure.requested_bytes == null ? "" : ` It asked for ${formatSI(failure.requested_bytes, "B")}.`;
    const where = failure.module ? ` in ${failure.module}` : "";
    const by = failure.op ? ` Asked for by ${failure.op}${where}.` : "";
    box.appendChild(node("div", "", `Out of memory: ${failure.error}.${asked}${by} Live when it failed: ${formatSI(memory.end.total_bytes, "B")}.`));
    if (failure.fixes.length) {
      const list = node("ol", "gp-oom-fixes");
      for (const fix of failure.fixes.slice(0, FIXES_SHOWN)) {
        const enough = fix.enough == null ? "" : fix.enough ? "; enough on its own" : "; not enough alone";
        list.appendChild(node("li", "", `frees ${formatSI(fix.frees_bytes, "B")}: ${fix.fix} (${fix.why})${enough}`));
      }
      box.appendChild(list);
    }
    root.appendChild(box);
  }

  const [left, top, right, bottom] = layout.plot;
  const svg = s("svg", { viewBox: `0 0 ${layout.width} ${layout.height}`, class: "gp-mem-svg", role: "img" });
  svg.setAttribute("aria-label", layout.title);
  svg.style.maxWidth = `${layout.width}px`;
  svg.appendChild(s("rect", { x: left, y: top, width: right - left, height: bottom - top, class: "gp-mem-frame" }));
  for (const area of layout.areas) {
    const colour = COLOURS[area.colour % COLOURS.length];
    const band = s("polygon", {
      points: area.points.map(([x, y]) => `${x},${y}`).join(" "),
      fill: colour,
      "fill-opacity": 0.75,
      "data-category": area.category,
    });
    band.appendChild(s("title", {}, area.legend.text));
    svg.appendChild(band);
    svg.appendChild(s("rect", { x: area.swatch[0], y: area.swatch[1], width: 10, height: 10, fill: colour }));
    svg.appendChild(labelText(area.legend, "gp-mem-label"));
  }
  for (const tick of [...layout.y_ticks, ...layout.x_ticks]) svg.appendChild(labelText(tick.label, "gp-mem-tick"));
  for (const marker of layout.markers) {
    const kind = marker.kind === "failure" ? "gp-mem-marker gp-mem-failure" : "gp-mem-marker";
    svg.appendChild(s("line", { x1: marker.x, y1: marker.top, x2: marker.x, y2: bottom, class: kind }));
    svg.appendChild(labelText(marker.label, "gp-mem-label"));
  }
  root.appendChild(svg);
  return { el: root, destroy() { root.remove(); } };
}
