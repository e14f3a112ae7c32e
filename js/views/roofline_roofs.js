// @ts-check
// The roofline chart's roofs as Python laid them out (summary.roofline_layout): each roof's
// line, each ridge with its drop line, and the labels where the layout put them (clear of every
// other label and line). SVG helpers shared with roofline.js and roofline_chart.js.

/** @typedef {import("../model/roofline.js").RooflineLayout} RooflineLayout */
/** @typedef {import("../model/roofline.js").Label} Label */
/** @typedef {import("../model/roofline.js").Pair} Pair */

const SVG_NS = "http://www.w3.org/2000/svg";

/**
 * An SVG element with attributes, its text set through textContent.
 * @param {string} tag
 * @param {Record<string, unknown>} [attrs]
 * @param {unknown} [text]
 * @returns {SVGElement}
 */
export function s(tag, attrs = {}, text) {
  const el = /** @type {SVGElement} */ (document.createElementNS(SVG_NS, tag));
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = String(text);
  return el;
}

/**
 * A layout label as SVG text: its anchor, rotation and font size as laid out (the font size
 * inline, so no stylesheet makes the text larger than the box it was placed by).
 * @param {Label} label
 * @param {string} className
 * @returns {SVGElement}
 */
export function labelText(label, className) {
  const el = s("text", { x: label.x, y: label.y, class: className }, label.text);
  if (label.anchor !== "start") el.setAttribute("text-anchor", label.anchor);
  if (label.angle) el.setAttribute("transform", `rotate(${label.angle.toFixed(1)} ${label.x} ${label.y})`);
  el.style.fontSize = `${label.font}px`;
  return el;
}

/**
 * @param {Pair[]} path
 * @returns {string}
 */
function points(path) {
  return path.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(" ");
}

/**
 * The roofs, ridges and their labels as an SVG group.
 * @param {RooflineLayout} layout
 * @returns {SVGElement}
 */
export function drawRoofs(layout) {
  const g = s("g", { class: "gp-rl-roofs" });
  for (const roof of layout.roofs) {
    if (roof.path.length < 2) continue;
    const line = s("polyline", { points: points(roof.path), class: "gp-rl-roof", "data-roof": roof.key });
    line.appendChild(s("title", {}, roof.title));
    g.appendChild(line);
  }
  for (const ridge of layout.ridges) {
    const [[x1, y1], [x2, y2]] = ridge.drop;
    g.appendChild(s("line", { x1, y1, x2, y2, class: "gp-rl-ridge-drop" }));
    const mark = s("circle", { cx: ridge.at[0], cy: ridge.at[1], r: 3, class: "gp-rl-ridge" });
    mark.appendChild(s("title", {}, ridge.title));
    g.appendChild(mark);
  }
  for (const roof of layout.roofs) if (roof.label) g.appendChild(labelText(roof.label, "gp-rl-roof-label"));
  if (layout.memory_label) g.appendChild(labelText(layout.memory_label, "gp-rl-roof-label"));
  for (const ridge of layout.ridges) if (ridge.label) g.appendChild(labelText(ridge.label, "gp-rl-ridge-label"));
  return g;
}
