// anywidget entry point: the report header above the timeline.
//
// For tests, the root element carries data-gpuprofile="ready" after the first paint, and
// data-kernels / data-memcpy / data-memset / data-ops (summed over ranks) and data-partial; the
// timeline element carries data-events and data-view-start-ns / data-view-end-ns.

import "./widget.css";
import { decodeTable } from "./model/decode.js";
import { renderSummary, totalCounts, COUNT_KEYS } from "./views/summary.js";
import { createTimeline } from "./views/timeline.js";

function errorBox(message) {
  const box = document.createElement("div");
  box.className = "gp-error";
  box.textContent = message;
  return box;
}

function render({ model, el }) {
  const root = document.createElement("div");
  root.className = "gpuprofile";
  root.dataset.gpuprofile = "loading";
  el.appendChild(root);

  let summaryEl = null;
  let timeline = null;
  const timelineSlot = document.createElement("div");
  timelineSlot.className = "gp-timeline-slot";

  function renderSummaryPart() {
    const summary = model.get("summary") || {};
    const counts = totalCounts(summary);
    for (const key of COUNT_KEYS) root.dataset[key] = String(counts[key]);
    root.dataset.partial = String(Boolean(summary.partial));
    const next = renderSummary(summary);
    if (summaryEl) summaryEl.replaceWith(next);
    else root.insertBefore(next, root.firstChild);
    summaryEl = next;
  }

  function renderTimelinePart() {
    if (timeline) timeline.destroy();
    timeline = null;
    let table;
    try {
      table = decodeTable(model.get("events"));
    } catch (err) {
      const box = errorBox(`gpuprofile: cannot read the timeline: ${err.message}`);
      timelineSlot.replaceChildren(box);
      root.dataset.gpuprofile = "error";
      return;
    }
    timeline = createTimeline(
      {
        lanes: model.get("lanes") || [],
        names: model.get("names") || [],
        kinds: model.get("kinds") || [],
        span: model.get("span_ns"),
        table,
      },
      { onPaint: () => { root.dataset.gpuprofile = "ready"; } },
    );
    timelineSlot.replaceChildren(timeline.el);
  }

  renderSummaryPart();
  root.appendChild(timelineSlot);
  renderTimelinePart();

  const onSummary = () => renderSummaryPart();
  // Python usually sets events, lanes and names together: rebuild once, after all of them.
  let pending = false;
  const onTimeline = () => {
    if (pending) return;
    pending = true;
    queueMicrotask(() => {
      pending = false;
      if (!disposed) renderTimelinePart();
    });
  };
  let disposed = false;
  model.on("change:summary", onSummary);
  model.on("change:events", onTimeline);
  model.on("change:lanes", onTimeline);
  model.on("change:names", onTimeline);
  model.on("change:span_ns", onTimeline);

  return () => {
    disposed = true;
    model.off("change:summary", onSummary);
    model.off("change:events", onTimeline);
    model.off("change:lanes", onTimeline);
    model.off("change:names", onTimeline);
    model.off("change:span_ns", onTimeline);
    if (timeline) timeline.destroy();
  };
}

export default { render };
