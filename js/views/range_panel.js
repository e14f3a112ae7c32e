// The panel under the plot for a drag-selected time range: its bounds and length, zoom and close
// buttons, and what source.range says about it per rank (GPU busy share, top kernels and ops).

import "./range_panel.css";
import { formatCount, formatFraction, formatInstant, formatPercent, formatTime } from "../model/format.js";
import { button, node } from "./dom.js";

/**
 * @param {{source: {range?}|null, span: number, onZoom: (sel) => void, onClose: () => void,
 *   isDestroyed: () => boolean}} opts
 */
export function createRangePanel({ source, span, onZoom, onClose, isDestroyed }) {
  const el = node("div", "gp-popover gp-range-panel");
  el.hidden = true;
  let selection = null; // {start, end}
  let token = 0;

  function head() {
    const h = node("div", "gp-range-head");
    const res = (selection.end - selection.start) / 1000;
    h.append(node("span", "", `${formatInstant(selection.start, res)} – ${formatInstant(selection.end, res)} · ${formatTime(selection.end - selection.start)}`));
    const zoom = button("zoom", "Zoom to this range");
    zoom.addEventListener("click", () => selection && onZoom(selection));
    const close = button("×", "Clear the selection (Escape)");
    close.addEventListener("click", onClose);
    h.append(zoom, close);
    return h;
  }

  function topTable(title, rows) {
    const wrap = node("div", "gp-range-top");
    wrap.append(node("div", "gp-details-label", title));
    const t = node("table", "gp-table");
    const tb = node("tbody");
    for (const row of rows) {
      const tr = node("tr");
      tr.append(node("td", "gp-name", String(row.name ?? "")), node("td", "gp-num", `${formatCount(row.count)}×`), node("td", "gp-num", formatTime(Number(row.total_ns))));
      tr.firstChild.title = String(row.name ?? "");
      tb.append(tr);
    }
    t.append(tb);
    wrap.append(t);
    return wrap;
  }

  function render(r) {
    const parts = [head()];
    // A --steps trace was recorded in windows: say how little of the range that may be.
    const length = selection.end - selection.start;
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
      const busy = rank.gpu_busy_pct === null || rank.gpu_busy_pct === undefined ? "no GPU activity" : `GPU busy ${formatPercent(rank.gpu_busy_pct)} (${formatTime(Number(rank.gpu_busy_ns))})`;
      box.append(node("div", "gp-rank-title", `rank ${rank.rank} · ${busy} · ${formatCount(rank.kernels ?? 0)} kernels`));
      if (rank.top_kernels?.length) box.append(topTable("top kernels", rank.top_kernels));
      if (rank.top_ops?.length) box.append(topTable("top ops", rank.top_ops));
      parts.push(box);
    }
    if (parts.length === before) parts.push(node("div", "gp-muted", "nothing in this range"));
    el.replaceChildren(...parts);
  }

  /** Select [a, b] (either order, clamped to the trace) and ask the source about it. */
  function set(a, b) {
    const start = Math.max(0, Math.min(a, b));
    const end = Math.min(span, Math.max(a, b));
    selection = { start, end };
    const mine = ++token;
    el.hidden = false;
    el.replaceChildren(head(), node("div", "gp-muted", source?.range ? "computing…" : "no source for range aggregates"));
    if (!source?.range) return;
    source.range(start, end).then(
      (r) => {
        if (isDestroyed() || mine !== token) return;
        render(r);
      },
      (err) => {
        if (isDestroyed() || mine !== token) return;
        el.replaceChildren(head(), node("div", "gp-tl-status gp-bad", `range aggregates failed: ${err.message}`));
      },
    );
  }

  function clear() {
    selection = null;
    token += 1;
    el.hidden = true;
  }

  return { el, selection: () => selection, set, clear };
}
