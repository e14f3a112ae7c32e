// @ts-check
// anywidget entry point: the report header, gauges, hints and roofline, then the timeline, and
// the links between them (a hint's evidence, a roofline point or a row of the top kernels or
// top ops, or a module of the module view, outlines its events on the timeline and zooms there;
// a module also rings its ops on the roofline). Views render; the numbers all
// come from Python's report.
//
// For tests, the root element carries data-gpuprofile="ready" after the first paint, and
// data-kernels / data-memcpy / data-memset / data-ops (summed over ranks) and data-partial.

import "./widget.css";
import { decodeWire } from "./model/decode.js";
import { envelope, eventRows, evidenceGroup, indexMarks, pointGroup, zoomSpan } from "./model/marks.js";
import { createRemoteSource } from "./model/source.js";
import { createBaseline } from "./views/baseline.js";
import { createGauges } from "./views/gauges.js";
import { createHints } from "./views/hints.js";
import { createLive } from "./views/live.js";
import { createMemory } from "./views/memory.js";
import { createModules } from "./views/modules.js";
import { moduleGroup, pointsOfModule } from "./model/modules.js";
import { createRankSteps } from "./views/rank_steps.js";
import { stragglerOf } from "./model/ranks.js";
import { createRoofline } from "./views/roofline.js";
import { renderSummary, renderTextReport, totalCounts, COUNT_KEYS } from "./views/summary.js";
import { node } from "./views/dom.js";
import { createTimeline } from "./views/timeline/timeline.js";

/** @typedef {import("./views/report_types.js").Report} Report */
/** @typedef {import("./views/timeline/timeline.js").Timeline} Timeline */
/** @typedef {import("./model/marks.js").EventRow} EventRow */
/**
 * The part of anywidget's model the widget uses: traits by name (their change events), and the
 * custom messages js/model/source.js sends and hears.
 * @typedef {{get: (name: string) => any, on: (event: string, fn: (...args: any[]) => void) => void,
 *   off: (event: string, fn: (...args: any[]) => void) => void,
 *   send: (content: object) => void}} Model
 */
/**
 * The panels above the timeline, rebuilt with each report.
 * @typedef {{gauges: ReturnType<typeof createGauges>, hints: ReturnType<typeof createHints>,
 *   roofline: ReturnType<typeof createRoofline>, ranks: ReturnType<typeof createRankSteps>,
 *   baseline: ReturnType<typeof createBaseline>, modules: ReturnType<typeof createModules>,
 *   memory: ReturnType<typeof createMemory>}} Panels
 */

const TIMELINE_TRAITS = [
  "events", "counters", "marks", "lanes", "names", "name_kinds", "kinds", "span_ns",
  "total_events", "complete", "opening_view",
];

/** @param {{model: Model, el: HTMLElement}} args */
function render({ model, el }) {
  const root = node("div", "gpuprofile");
  root.dataset.gpuprofile = "loading";
  el.appendChild(root);

  const source = createRemoteSource(model);
  /** @type {Report} */
  let summary = {};
  /** @type {HTMLElement | null} */
  let summaryEl = null;
  /** @type {Panels | null} */
  let panels = null;
  /** @type {Timeline | null} */
  let timeline = null;
  let marks = indexMarks(null);
  const live = createLive(model.get("live"));
  const panelSlot = node("div", "gp-panels");
  const timelineSlot = node("div", "gp-timeline-slot");
  // The text report last: a fallback to read or copy, below what the live panel showed.
  const textSlot = node("div");
  root.append(live.el, panelSlot, timelineSlot, textSlot);

  /**
   * Outline `rows` (and shade `windows`) on the timeline; zoom to [start, end] if given.
   * @param {EventRow[]} rows
   * @param {string} label
   * @param {{total?: number | null, windows?: [number, number][], zoom?: [number, number] | null}} [opts]
   */
  function show(rows, label, { total, windows = [], zoom = null } = {}) {
    if (!timeline) return;
    if (rows.length || windows.length) timeline.highlight(rows, label, { windows, total });
    else timeline.clearHighlight();
    if (zoom && zoom[1] > zoom[0]) timeline.zoomTo(zoom[0], zoom[1]);
  }

  /**
   * @param {number} group a marks group (-1: none)
   * @param {string} label
   * @param {((rows: EventRow[]) => [number, number] | null) | null} zoom where to zoom, from the rows
   * @param {[number, number][]} [windows]
   */
  function showMarks(group, label, zoom, windows = []) {
    if (!timeline || group < 0) return;
    const rows = marks.rowsOf(group);
    show(rows, label, { total: (marks.groups[group] || {}).total, windows, zoom: zoom ? zoom(rows) : null });
  }

  // A row of the top kernels or top ops: the kernel lists that name's instances on that rank.
  let namedToken = 0;
  /** @param {import("./views/summary.js").NamePick} pick */
  function onSelectName({ table, name, rank }) {
    const mine = ++namedToken;
    source.named(table, name, rank).then(
      (reply) => {
        if (disposed || mine !== namedToken) return;
        const rows = eventRows(reply.table);
        show(rows, name, { total: reply.count, zoom: zoomSpan(rows, reply.heaviest) });
        timelineSlot.scrollIntoView?.({ block: "nearest", behavior: "smooth" });
      },
      (err) => {
        if (!disposed && mine === namedToken && timeline) timeline.setStatus(`cannot show ${name}: ${err.message}`, true);
      },
    );
  }

  /**
   * @param {number} i a hint
   * @param {number} j its evidence
   */
  function onEvidence(i, j) {
    const hint = (summary.hints || [])[i] || {};
    const evidence = (hint.evidence || [])[j] || {};
    const label = [hint.title, evidence.label].filter(Boolean).join(": ");
    const windows = evidence.windows || [];
    showMarks(evidenceGroup(marks.groups, i, j), label, (rows) => {
      /** @type {[number, number][]} */
      const around = windows.length ? windows : rows.map((r) => [r.start_ns, r.start_ns + r.dur_ns]);
      return envelope(around) || [0, 0];
    }, windows);
    timelineSlot.scrollIntoView?.({ block: "nearest", behavior: "smooth" });
  }

  /** @param {number} k a roofline point */
  function onSelectPoint(k) {
    const point = ((summary.roofline || {}).points || [])[k] || {};
    const group = pointGroup(marks.groups, k);
    // Python names the heaviest instance (by GPU time for op points); else the longest.
    showMarks(group, point.name || "roofline point", (rows) => zoomSpan(rows, (marks.groups[group] || {}).heaviest));
  }

  /**
   * A row of the module view: its calls outlined on the timeline (zoomed around them), its
   * ops and their modules' ops ringed on the roofline.
   * @param {number} rank
   * @param {number} index its place in summary.ranks[rank].modules
   */
  function onSelectModule(rank, index) {
    const row = ((summary.ranks || []).find((r) => r && r.rank === rank)?.modules || [])[index];
    if (!row) return;
    panels?.roofline.highlightPoints(pointsOfModule((summary.roofline || {}).points, row.path));
    showMarks(moduleGroup(marks.groups, rank, index), row.path, (rows) => envelope(rows.map((r) => [r.start_ns, r.start_ns + r.dur_ns])));
    timelineSlot.scrollIntoView?.({ block: "nearest", behavior: "smooth" });
  }

  function renderPanels() {
    if (panels) for (const p of Object.values(panels)) p.destroy();
    const roofline = createRoofline(summary, { onSelectPoint });
    const hints = createHints(summary, {
      onEvidence,
      onSelectHint: (/** @type {number} */ i) => roofline.highlightPoints(((summary.hints || [])[i] || {}).related || []),
    });
    const gauges = createGauges(summary);
    // A multi-rank job: the rank x step view; a click on a rank focuses the timeline on it.
    const ranks = createRankSteps(summary, { onFocusRank });
    // A profile with a baseline: the diff next, before the hints and the roofline.
    const baseline = createBaseline(summary);
    // Module rows in the report: the tree of the model, after the hints and the roofline.
    const modules = createModules(summary, { onSelectModule });
    // Memory in use by category; an out-of-memory post-mortem goes first, after the gauges.
    const memory = createMemory(summary);
    const oom = memory.el?.dataset.oom === "yes";
    panels = { gauges, hints, roofline, ranks, baseline, modules, memory };
    const row = node("div", "gp-panel-row");
    row.append(hints.el, roofline.el);
    const memoryEl = memory.el ? [memory.el] : [];
    panelSlot.replaceChildren(gauges.el, ...(oom ? memoryEl : []), ...(baseline.el ? [baseline.el] : []), row, ...(modules.el ? [modules.el] : []), ...(oom ? [] : memoryEl), ...(ranks.el ? [ranks.el] : []));
    if (timeline) {
      timeline.setStraggler(stragglerOf(summary)?.rank ?? null);
      ranks.showFocused(timeline.focusedRank());
    }
  }

  /** @param {number} rank */
  function onFocusRank(rank) {
    if (!timeline) return;
    timeline.focusRank(rank);
    timelineSlot.scrollIntoView?.({ block: "nearest", behavior: "smooth" });
  }

  // A live widget has no report until its cell ends: only the live panel shows until then.
  function showReportParts() {
    const none = !summary.schema;
    for (const part of [summaryEl, panelSlot, timelineSlot]) if (part) part.hidden = none;
  }

  function renderSummaryPart() {
    summary = model.get("summary") || {};
    const counts = totalCounts(summary);
    for (const key of COUNT_KEYS) root.dataset[key] = String(counts[key]);
    root.dataset.partial = String(Boolean(summary.partial));
    const next = renderSummary(summary, { onSelectName });
    if (summaryEl) summaryEl.replaceWith(next);
    else root.insertBefore(next, root.firstChild);
    summaryEl = next;
    const text = renderTextReport(summary);
    textSlot.replaceChildren(...(text ? [text] : []));
    renderPanels();
    showReportParts();
  }

  function renderTimelinePart() {
    // New data for the same run (a live refill with more windows, then the whole profile):
    // a view the user zoomed or panned stays where it was; the whole view grows with the run.
    const kept = timeline?.zoomed() ? timeline.getView() : null;
    const keptSelection = timeline ? timeline.selection() : null;
    if (timeline) timeline.destroy();
    timeline = null;
    let table;
    let counters;
    try {
      table = decodeWire(model.get("events"), "events");
      counters = decodeWire(model.get("counters"), "counters");
      marks = indexMarks(decodeWire(model.get("marks"), "marks"));
    } catch (err) {
      const why = /** @type {Error} */ (err).message;
      timelineSlot.replaceChildren(node("div", "gp-error", `gpuprofile: cannot read the timeline: ${why}`));
      root.dataset.gpuprofile = "error";
      return;
    }
    timeline = createTimeline(
      {
        lanes: model.get("lanes") || [],
        names: model.get("names") || [],
        nameKinds: model.get("name_kinds") || [],
        kinds: model.get("kinds") || [],
        span: model.get("span_ns"),
        table,
        counters,
        complete: model.get("complete"),
        totalEvents: model.get("total_events"),
      },
      {
        onPaint: () => { root.dataset.gpuprofile = "ready"; },
        onFocusRank: (rank) => panels?.ranks.showFocused(rank),
        source,
      },
    );
    timeline.setStraggler(stragglerOf(summary)?.rank ?? null);
    timelineSlot.replaceChildren(timeline.el);
    const opening = model.get("opening_view");
    if (kept) timeline.setView(kept);
    else if (opening?.length === 2) timeline.setView({ start: opening[0], end: opening[1] });
    if (keptSelection) timeline.restoreSelection(keptSelection);
  }

  renderSummaryPart();
  renderTimelinePart();

  let disposed = false;
  const onSummary = () => renderSummaryPart();
  // The sampler thread updates this while the cell runs, often: only the live panel redraws.
  const onLive = () => live.update(model.get("live"));
  // Python usually sets the timeline's traits together: rebuild once, after all of them.
  let pending = false;
  const onTimeline = () => {
    if (pending) return;
    pending = true;
    queueMicrotask(() => {
      pending = false;
      if (!disposed) renderTimelinePart();
    });
  };
  model.on("change:summary", onSummary);
  model.on("change:live", onLive);
  for (const trait of TIMELINE_TRAITS) model.on(`change:${trait}`, onTimeline);

  return () => {
    disposed = true;
    model.off("change:summary", onSummary);
    model.off("change:live", onLive);
    for (const trait of TIMELINE_TRAITS) model.off(`change:${trait}`, onTimeline);
    if (timeline) timeline.destroy();
    if (panels) for (const p of Object.values(panels)) p.destroy();
    source.destroy();
  };
}

export default { render };
