// @ts-check
// Gauges: GPU busy, DRAM bandwidth, FLOP/s, host link, peak memory, each against its roof
// (report["gauges"]). A gauge with an unknown value or roof says so with its note; it never draws
// a bar it cannot fill honestly. Strings reach the DOM through textContent only.
//
// For browser tests: the root carries data-gauges (count); each gauge data-gauge (key),
// data-value and data-roof (the numbers, or "unknown"), data-rank ("" when run-wide).

import "./gauges.css";
import { gaugeReading, gaugesByRank, ROOF_SOURCE_WORDS } from "../model/format.js";
import { node } from "./dom.js";

/** @typedef {import("./report_types.js").Report} Report */
/** @typedef {import("../model/format.js").Gauge} Gauge */
/** Roof sources in words, by the report's name for them. @type {Record<string, string | undefined>} */
const SOURCE_WORDS = ROOF_SOURCE_WORDS;

/** @param {Gauge} g one of the report's gauges */
function gaugeEl(g) {
  const r = gaugeReading(g);
  const box = node("div", "gp-gauge");
  box.dataset.gauge = String(g.key ?? "");
  box.dataset.value = r.value === null ? "unknown" : String(r.value);
  box.dataset.roof = r.roofKnown ? String(r.roof) : "unknown";
  box.dataset.rank = g.rank == null ? "" : String(g.rank);
  if (!r.known) box.classList.add("gp-gauge-unknown");
  if (r.over) box.classList.add("gp-gauge-over");

  const head = node("div", "gp-gauge-head");
  head.appendChild(node("span", "gp-gauge-label", g.label || g.key || "gauge"));
  head.appendChild(node("span", "gp-gauge-value", r.valueText));
  box.appendChild(head);

  if (r.known && r.value !== null && r.roof !== null && r.fill !== null) {
    const bar = node("div", "gp-gauge-bar");
    bar.setAttribute("role", "meter");
    bar.setAttribute("aria-valuemin", "0");
    bar.setAttribute("aria-valuemax", String(r.roof));
    bar.setAttribute("aria-valuenow", String(Math.min(r.value, r.roof)));
    bar.setAttribute("aria-label", `${g.label || g.key}: ${r.percentText} of the roof`);
    const fill = node("div", "gp-gauge-fill");
    fill.style.width = `${(r.fill * 100).toFixed(2)}%`;
    bar.appendChild(fill);
    box.appendChild(bar);
  }

  const roofLine = node("div", "gp-gauge-roof");
  if (r.known) {
    // A percentage of 100% needs no "of 100.0%".
    const ofRoof = g.unit === "%" && r.roof === 100 ? "" : ` of ${r.roofText}`;
    roofLine.appendChild(node("span", "gp-gauge-pct", `${r.percentText}${ofRoof}`));
  } else if (!r.valueKnown && r.roofKnown) {
    roofLine.appendChild(node("span", "gp-gauge-pct", `value unknown; roof ${r.roofText}`));
  } else if (r.valueKnown) {
    roofLine.appendChild(node("span", "gp-gauge-pct", "roof unknown"));
  } else {
    roofLine.appendChild(node("span", "gp-gauge-pct", "value and roof unknown"));
  }
  const source = g.roof_source == null || g.roof_source === "unknown" ? null : (SOURCE_WORDS[g.roof_source] ?? g.roof_source);
  // Labels from the report often name their source already ("... (datasheet)").
  const named = source && String(g.roof_label ?? "").includes(String(g.roof_source));
  const roofName = [g.roof_label, named ? null : source]
    .filter((s) => s !== undefined && s !== null && s !== "")
    .map(String);
  // "measured" twice ("measured · measured") says nothing more.
  const uniqueNames = roofName.filter((s, i) => roofName.indexOf(s) === i);
  if (uniqueNames.length) roofLine.appendChild(node("span", "gp-gauge-roofname", uniqueNames.join(" · ")));
  box.appendChild(roofLine);
  if (r.over) {
    const why = g.unit === "B/s" ? ": caches can serve more than a DRAM roof, or the roof is set too low" : "";
    box.appendChild(node("div", "gp-gauge-note", `above its roof${why}`));
  }
  if (g.note) box.appendChild(node("div", "gp-gauge-note", g.note));
  return box;
}

/**
 * @param {HTMLElement} root
 * @param {Report} summary
 */
function render(root, summary) {
  const gauges = summary ? summary.gauges : undefined;
  root.replaceChildren();
  root.appendChild(node("div", "gp-panel-title", "Gauges"));
  if (!Array.isArray(gauges)) {
    root.dataset.gauges = "0";
    root.appendChild(node("div", "gp-muted", "No gauges in this report: it was made by a gpuprofile without them."));
    return;
  }
  root.dataset.gauges = String(gauges.length);
  if (!gauges.length) {
    root.appendChild(node("div", "gp-muted", "No gauges: the trace has nothing to measure against a roof."));
    return;
  }
  const groups = gaugesByRank(gauges);
  const titled = groups.length > 1 || groups.some((g) => g.rank !== null && (summary.ranks || []).length > 1);
  for (const group of groups) {
    const section = node("div", "gp-gauge-group");
    if (titled) {
      const title = group.rank === null ? "whole run" : `rank ${group.rank}`;
      section.appendChild(node("div", "gp-gauge-group-title", title));
    }
    const row = node("div", "gp-gauge-row");
    for (const g of group.gauges) row.appendChild(gaugeEl(g || {}));
    section.appendChild(row);
    root.appendChild(section);
  }
}

/**
 * The gauges panel for a report; update(summary) redraws in place.
 * @param {Report | null | undefined} summary
 */
export function createGauges(summary) {
  const root = node("div", "gp-gauges");
  render(root, summary || {});
  return {
    el: root,
    /** @param {Report | null | undefined} next */
    update(next) {
      render(root, next || {});
    },
    destroy() {
      root.remove();
    },
  };
}
