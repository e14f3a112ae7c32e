// @ts-check
// The panel under the plot for a drag-selected time range: its bounds and length, zoom and close
// buttons, and what source.range says about it per rank (GPU busy share, top kernels and ops).

import "./range_panel.css";
import { formatCount, formatFraction, formatInstant, formatPercent, formatTime } from "../model/format.js";
import { elideMiddle, topRows } from "../model/top_rows.js";
import { button, node } from "./dom.js";

/** @typedef {import("../model/view.js").View} View */
/**
 * One rank's part of a range, as Python's range reply sends it (widget/ranges.py).
 * @typedef {{rank: unknown, gpu_busy_pct?: number | null, gpu_busy_ns?: number, kernels?: number,
 *   top_kernels?: TopRow[], top_ops?: TopRow[]}} RangeRank
 */
/** @typedef {{name?: unknown, count: number, total_ns: number}} TopRow */

/**
 * @param {{source: Pick<import("./timeline/timeline.js").TimelineSource, "range"> | null,
 *   onZoom: (range: View) => void, onClose: () => void, isDestroyed: () => boolean}} opts
 */
export function createRangePanel({ source, onZoom, onClose, isDestroyed }) {
  const el = node("div", "gp-popover gp-range-panel");
  el.hidden = true;
  let token = 0;

  /** @param {View} range */
  function head(range) {
    const h = node("div", "gp-range-head");
    const res = (range.end - range.start) / 1000;
    h.append(node("span", "", `${formatInstant(range.start, res)} – ${formatInstant(range.end, res)} · ${formatTime(range.end - range.start)}`));
    const zoom = button("zoom", "Zoom to this range");
    zoom.addEventListener("click", () => onZoom(range));
    const close = button("×", "Clear the selection (Escape)");
    close.addEventListener("click", onClose);
    h.append(zoom, close);
    return h;
  }

  /**
   * @param {string} title
   * @param {TopRow[]} rows
   */
  function topTable(title, rows) {
    const wrap = node("div", "gp-range-top");
    wrap.append(node("div", "gp-details-label", title));
    const t = node("table", "gp-table");
    const tb = node("tbody");
    for (const row of topRows(rows)) {
      const tr = node("tr");
      tr.append(node("td", "gp-name", elideMiddle(String(row.name ?? ""))), node("td", "gp-num", `${formatCount(row.count)}×`), node("td", "gp-num", formatTime(row.total_ns)));
      /** @type {HTMLElement} */ (tr.firstChild).title = String(row.name ?? "");
      tb.append(tr);
    }
    t.append(tb);
    wrap.append(t);
    return wrap;
  }

  /**
   * @param {View} range
   * @param {{recorded_ns?: unknown, ranks?: RangeRank[]} | null | undefined} r the source's reply
   */
  function render(range, r) {
    const parts = [head(range)];
    // A --steps trace was recorded in windows: say how little of the range that may be.
    const length = range.end - range.start;
    const recorded = Number(r?.recorded_ns);
    const partly = Number.isFinite(recorded) && length > 0 && recorded < 0.999 * length;
    if (partly) {
      const share = formatFraction(recorded / length);
      const text = `recorded ${formatTime(recorded)} of it (${share}; the rest lies between recorded windows): shares are of the recorded time`;
      parts.push(node("div", "gp-muted gp-range-recorded", text));
    }
    const before = parts.length;
    for (const rank of r?.ranks ?? []) {
      const box = node("div", "gp-range-rank");
      const busy = rank.gpu_busy_pct === null || rank.gpu_busy_pct === undefined ? "no GPU activity" : `GPU busy ${formatPercent(rank.gpu_busy_pct)} (${formatTime(rank.gpu_busy_ns)})`;
      box.append(node("div", "gp-rank-title", `rank ${rank.rank} · ${busy} · ${formatCount(rank.kernels ?? 0)} kernels`));
      if (rank.top_kernels?.length) box.append(topTable("top kernels", rank.top_kernels));
      if (rank.top_ops?.length) box.append(topTable("top ops", rank.top_ops));
      parts.push(box);
    }
    if (parts.length === before) parts.push(node("div", "gp-muted", "nothing in this range"));
    el.replaceChildren(...parts);
  }

  /**
   * Show the selected range {start, end} (the timeline state's) and ask the source about it.
   * @param {View} range
   */
  function set(range) {
    const mine = ++token;
    el.hidden = false;
    el.replaceChildren(head(range), node("div", "gp-muted", source?.range ? "computing…" : "no source for range aggregates"));
    if (!source?.range) return;
    source.range(range.start, range.end).then(
      (r) => {
        if (isDestroyed() || mine !== token) return;
        render(range, r);
      },
      (err) => {
        if (isDestroyed() || mine !== token) return;
        el.replaceChildren(head(range), node("div", "gp-tl-status gp-bad", `range aggregates failed: ${err.message}`));
      },
    );
  }

  function clear() {
    token += 1;
    el.hidden = true;
  }

  return { el, set, clear };
}
