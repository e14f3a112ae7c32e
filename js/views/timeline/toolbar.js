// @ts-check
// The timeline's toolbar: reset zoom, the visible range in words, the search box, the highlight
// chip (what hints or roofline points are outlined, with a close button), a status line for
// load errors, and the key help.

import { formatCount, formatInstant, formatTime } from "../../model/format.js";
import { button, node } from "../dom.js";

/** @typedef {import("../../model/view.js").View} View */

/** @param {{searchEl: HTMLElement, onReset: () => void, onClearHighlight: () => void}} opts */
export function createToolbar({ searchEl, onReset, onClearHighlight }) {
  const el = node("div", "gp-toolbar");
  const reset = button("Reset zoom", "Show the whole trace (0)");
  const rangeText = node("span", "gp-range");
  const chip = node("span", "gp-chip");
  chip.hidden = true;
  const chipText = node("span", "gp-chip-text");
  const chipClose = button("×", "Stop highlighting", "gp-chip-close");
  chip.append(chipText, chipClose);
  const status = node("span", "gp-tl-status");
  const help = node("span", "gp-help", "W/S zoom · A/D pan · ctrl+wheel zoom · drag select · 0 reset");
  help.title = "W/S: zoom at the mouse · A/D: pan · ctrl/cmd+wheel: zoom · shift+wheel: pan · wheel: scroll lanes · drag: select a range (Escape clears) · double-click: zoom to an event · 0: reset";
  el.append(reset, rangeText, searchEl, chip, status, help);
  reset.addEventListener("click", onReset);
  chipClose.addEventListener("click", onClearHighlight);

  return {
    el,
    /**
     * @param {View} view
     * @param {number} span ns, the whole trace
     */
    showView(view, span) {
      const res = (view.end - view.start) / 1000;
      rangeText.textContent = `${formatInstant(view.start, res)} – ${formatInstant(view.end, res)} (${formatTime(view.end - view.start)} of ${formatTime(span)})`;
    },
    /**
     * @param {string} text
     * @param {boolean} [bad] a failure: shown as one, and cleared by the next success
     */
    setStatus(text, bad = false) {
      status.textContent = text;
      status.classList.toggle("gp-bad", bad);
    },
    statusIsBad: () => status.classList.contains("gp-bad"),
    /**
     * @param {string} label
     * @param {number} count events outlined
     * @param {{total?: number | null, windows?: number}} [opts] total: of which `count` are the longest
     */
    showHighlight(label, count, { total = null, windows = 0 } = {}) {
      const parts = [];
      if (count || !windows) parts.push(total !== null && total > count ? `longest ${formatCount(count)} of ${formatCount(total)}` : formatCount(count));
      if (windows) parts.push(`${formatCount(windows)} window${windows === 1 ? "" : "s"}`);
      chipText.textContent = `highlighting ${label} (${parts.join(", ")})`;
      chip.hidden = false;
    },
    hideHighlight() {
      chip.hidden = true;
    },
  };
}
