// The timeline: a canvas with a lane label column, a time axis, lane groups (rank · CPU threads,
// rank · GPU device streams, counters) that collapse, sub-rows for nested ops and overlapping
// kernels, step charts for counters; Perfetto-style navigation (W/S/A/D, ctrl+wheel, drag to
// select a range), hover tooltips, click for details and flow arrows, name search, highlights.
// This module keeps the state, layout, hit testing and API; painting is paint.js, mouse
// and keys input.js, the search box ../search_bar.js, the range panel range_panel.js, the
// tooltip tooltip.js.
//
// Large traces: `data.table` is then the merged overview; after the view settles, the visible
// window is asked from `hooks.source` (windows.js) and drawn over the overview where it
// covers the view.
//
// Trace strings reach the DOM only through textContent; the canvas draws them with fillText.

import "./timeline.css";
import { nameColors } from "../../model/colors.js";
import { createDetailsCache } from "../../model/details_cache.js";
import { formatCount } from "../../model/format.js";
import {
  buildCounterIndex,
  counterWindow,
  firstEntryAt,
  fitLaneRows,
  groupLayout,
  groupMarks,
  hitEntry,
} from "../../model/lanes.js";
import { buildSegmentIndex, eventAt, rowAt, rowOfId, traceSpan } from "../../model/segments.js";
import { clampView, viewForEvent, xToTime } from "../../model/view.js";
import { createDetails } from "../details.js";
import { node } from "../dom.js";
import { createRangePanel } from "../range_panel.js";
import { createSearchBar } from "../search_bar.js";
import { themeColors } from "../theme.js";
import { AXIS_H, DIMS, LANE_PAD, labelWidth, ROW_H } from "./canvas.js";
import { attachTimelineInput } from "./input.js";
import { createTimelinePainter } from "./paint.js";
import { createToolbar } from "./toolbar.js";
import { createTooltip } from "./tooltip.js";
import { createWindowLoader } from "./windows.js";

const MAX_VIEWPORT_H = 560;
const MIN_SPAN_NS = 20;
const HIT_SLACK_PX = 3;
const DETAILS_CACHE = 500;

/**
 * @param {{lanes, names, nameKinds, kinds, span, table, counters, complete, totalEvents}} data
 *   table: the decoded segment table (complete, or the merged overview); counters: decoded
 * @param {{onPaint?: () => void, source?: {window, details, range, search}}} hooks
 */
export function createTimeline(data, hooks = {}) {
  const names = data.names ?? [];
  const nameKinds = data.nameKinds ?? [];
  const kinds = data.kinds ?? [];
  const table = data.table ?? { n: 0, columns: {}, meta: {} };
  let loadError = null;
  let overview;
  try {
    overview = buildSegmentIndex(table);
  } catch (err) {
    loadError = `cannot read the timeline: ${err.message}`;
    overview = buildSegmentIndex(null);
  }
  const complete = data.complete ?? !overview.merged;
  const totalEvents = Number.isFinite(data.totalEvents) ? data.totalEvents : table.n;
  const counters = buildCounterIndex(data.counters);
  const counterTimes = data.counters?.columns?.time_ns;
  const counterValues = data.counters?.columns?.value;

  const lanes = fitLaneRows(Array.isArray(data.lanes) ? data.lanes : [], overview);
  const laneById = new Map(lanes.map((l) => [l.id, l]));
  const span = traceSpan(data.span, overview);
  const minSpan = Math.min(MIN_SPAN_NS, span);

  // Details, ranges and searches are answered by the Python kernel (js/model/source.js).
  const source = hooks.source ?? null;

  const kindName = (nameIdx) => kinds[nameKinds[nameIdx]] ?? "";
  const nameText = (nameIdx) => (nameIdx >= 0 && nameIdx < names.length ? String(names[nameIdx]) : "");
  const colorOf = nameColors(names, kindName);
  function laneText(laneId) {
    const lane = laneById.get(laneId);
    if (!lane) return `lane ${laneId}`;
    return [lane.group, lane.label].filter(Boolean).join(" · ");
  }

  // ---- DOM
  const el = node("div", "gp-timeline");
  // JupyterLab: keys pressed in here are ours, not the notebook's command-mode shortcuts.
  el.setAttribute("data-lm-suppress-shortcuts", "true");
  el.dataset.events = String(totalEvents);
  el.dataset.lanes = String(lanes.length);
  el.dataset.complete = String(complete);
  el.dataset.selectedId = "";
  el.dataset.searchCount = "0";
  el.dataset.highlightCount = "0";
  el.dataset.windowRequests = "0";

  let destroyed = false;
  const isDestroyed = () => destroyed;
  const searchBar = createSearchBar({
    names,
    source,
    root: el,
    onChange: () => schedule(),
    onMatch: (ev) => selectEvent(ev, { zoom: true }),
    isDestroyed,
  });
  const toolbar = createToolbar({
    searchEl: searchBar.el,
    onReset: () => setView({ start: 0, end: span }),
    onClearHighlight: () => clearHighlight(),
  });

  const body = node("div", "gp-tl-body");
  const scroller = node("div", "gp-scroller");
  scroller.tabIndex = 0;
  scroller.setAttribute("aria-label", "Timeline plot: W/S zoom, A/D pan, 0 resets");
  const canvas = node("canvas", "gp-canvas");
  canvas.setAttribute("role", "img");
  canvas.setAttribute("aria-label", `Timeline: ${totalEvents} events in ${lanes.length} lanes`);
  const spacer = node("div", "gp-spacer");
  scroller.append(canvas, spacer);
  const rangePanel = createRangePanel({ source, span, onZoom: (sel) => setView(sel), onClose: () => clearRange(), isDestroyed });
  const detailsCache = createDetailsCache(source?.details ? (id) => source.details(id) : null, DETAILS_CACHE);
  const tooltip = createTooltip({ laneText, nameText, kindName, detailsOf: (id) => detailsCache.get(id) });
  body.append(scroller, rangePanel.el);

  const details = createDetails({
    laneLabel: laneText,
    onJump: (ev) => selectEvent(ev, { zoom: true }),
    onClose: () => clearSelection(),
  });
  el.append(toolbar.el, body, details.el, tooltip.el);

  const painter = createTimelinePainter({
    overview,
    counters,
    counterTimes,
    counterValues,
    laneById,
    laneCount: lanes.length,
    totalEvents,
    span,
    nameText,
    colorOf,
    emptyText: overview.n === 0 && counters.size === 0 ? (loadError ?? "no timeline events") : null,
  });

  // ---- state
  const collapsed = new Set();
  let layout = groupLayout(lanes, collapsed, DIMS);
  let contentH = 0;
  let viewportH = 0;
  let view = { start: 0, end: span };
  let cssW = 0;
  let labelW = 200;
  let frame = 0;
  let painted = false;
  let selected = null;
  let flows = []; // [[from ev, to ev]]
  let marks = null; // {label, count, byLane: Map(lane -> [mark...])}
  const paintFrame = {}; // the painter's view of the state, refilled each frame

  function applyLayout() {
    contentH = AXIS_H + Math.max(layout.total, ROW_H * 2);
    viewportH = Math.min(contentH, MAX_VIEWPORT_H);
    scroller.style.height = `${viewportH}px`;
    canvas.style.height = `${viewportH}px`;
    spacer.style.height = `${contentH - viewportH}px`;
  }
  applyLayout();

  function plotWidth() {
    return Math.max(1, cssW - labelW);
  }

  function setView(next) {
    const v = clampView({ start: Number(next?.start), end: Number(next?.end) }, span, minSpan);
    view = v;
    el.dataset.viewStartNs = String(view.start);
    el.dataset.viewEndNs = String(view.end);
    toolbar.showView(view, span);
    windows.schedule();
    schedule();
  }

  function schedule() {
    if (frame || destroyed) return;
    frame = requestAnimationFrame(() => {
      frame = 0;
      draw();
    });
  }

  const setStatus = toolbar.setStatus;
  if (loadError) setStatus(loadError, true);

  const windows = createWindowLoader({
    enabled: !complete,
    source,
    span,
    // The overview's resolution: fewer bins when a trace has many lane rows (Python's budget).
    overviewBins: Number(table.meta?.bins) || undefined,
    getView: () => view,
    plotWidth: () => (cssW > 0 ? plotWidth() : 0),
    onChange: () => schedule(),
    onRequest: (count) => {
      el.dataset.windowRequests = String(count);
    },
    setStatus,
    statusIsBad: toolbar.statusIsBad,
    isDestroyed,
  });

  // ---- details, selection, flows
  /** Name index of an event known by id, from the tables in memory (-1 if none holds it). */
  function nameIndexOf(ev) {
    if (Number.isInteger(ev.name)) return ev.name;
    const detail = windows.detail;
    for (const [index, tbl] of [[overview, table], detail ? [detail.index, detail.table] : null]) {
      if (!index) continue;
      const r = rowOfId(index, ev.id);
      if (r >= 0) return tbl.columns.name?.[r] ?? -1;
    }
    return -1;
  }

  function evName(ev) {
    if (typeof ev.name === "string") return ev.name;
    return nameText(nameIndexOf(ev));
  }

  function selectEvent(ev, { zoom = false } = {}) {
    selected = {
      id: Number(ev.id),
      lane: Number(ev.lane),
      row: Number(ev.row) || 0,
      start_ns: Number(ev.start_ns),
      dur_ns: Math.max(0, Number(ev.dur_ns) || 0),
      count: ev.count ?? 1,
    };
    const name = evName(ev);
    el.dataset.selectedId = String(selected.id);
    flows = [];
    if (zoom) {
      ensureLaneVisible(selected.lane, selected.row ?? null);
      setView(viewForEvent(selected.start_ns, selected.dur_ns, span, minSpan, 1));
    }
    schedule();
    const id = selected.id;
    if (!(id >= 0)) {
      const count = selected.count > 1 ? `${formatCount(selected.count)} events are` : "several events are";
      details.showMessage(name, `${count} merged in this box at this zoom; zoom in to pick one.`);
      return;
    }
    if (!source?.details) {
      details.show({ ...selected, name, kind: kindName(nameIndexOf(ev)), fields: [] });
      return;
    }
    details.showLoading(selected, name);
    detailsCache.fetch(id).then(
      (d) => {
        if (destroyed || selected?.id !== id) return;
        details.show(d);
        setFlows(d);
      },
      (err) => {
        if (destroyed || selected?.id !== id) return;
        details.showMessage(name, `details unavailable: ${err.message}`);
      },
    );
  }

  function setFlows(d) {
    flows = [];
    const id = d.id;
    for (const k of d.kernels ?? []) flows.push([d, k]);
    if (d.launch) {
      flows.push([d.launch, d]);
      // The launch may have started other GPU work too (e.g. a graph launch): show all of it.
      detailsCache.fetch(d.launch.id).then(
        (launch) => {
          if (destroyed || selected?.id !== id) return;
          for (const k of launch.kernels ?? []) if (k.id !== id) flows.push([d.launch, k]);
          schedule();
        },
        () => {},
      );
    }
    schedule();
  }

  function clearSelection() {
    selected = null;
    flows = [];
    el.dataset.selectedId = "";
    details.hide();
    schedule();
  }

  /** Scroll so the lane (or, given a row, that row of it) is in sight, expanding its group. */
  function ensureLaneVisible(laneId, row = null) {
    let entry = layout.entryOfLane.get(laneId);
    if (!entry) return;
    if (entry.kind !== "lane" && collapsed.has(entry.group)) {
      collapsed.delete(entry.group);
      relayout();
      entry = layout.entryOfLane.get(laneId);
    }
    // A deep CPU stack can be taller than the plot: aim at the row, not the lane's top.
    const top = entry.kind === "lane" && row !== null ? entry.y + LANE_PAD + Math.max(0, row) * ROW_H : entry.y;
    const h = entry.kind === "lane" && row !== null ? ROW_H : entry.h;
    const visibleH = viewportH - AXIS_H;
    if (top < scroller.scrollTop) scroller.scrollTop = Math.max(0, top - ROW_H);
    else if (top + h > scroller.scrollTop + visibleH) scroller.scrollTop = Math.min(top - ROW_H, top + h - visibleH + ROW_H);
  }

  function relayout() {
    layout = groupLayout(lanes, collapsed, DIMS);
    applyLayout();
    schedule();
  }

  function toggleGroup(group) {
    if (collapsed.has(group)) collapsed.delete(group);
    else collapsed.add(group);
    relayout();
  }

  // ---- highlight (hints' evidence, roofline points)
  /**
   * Outline events and shade time windows (a hint's evidence, a roofline point's instances).
   * total: how many events there are when `list` holds only the longest of them.
   */
  function highlight(list, label, { windows = [], total = null } = {}) {
    const { count, byLane, longest } = groupMarks(list);
    const bands = (windows ?? []).filter((w) => Array.isArray(w) && w[1] >= w[0]);
    marks = { label: String(label ?? ""), count, byLane, windows: bands };
    // Deep CPU stacks can push GPU lanes below the fold: bring the marked events into sight.
    if (longest) ensureLaneVisible(longest.lane, longest.row);
    toolbar.showHighlight(marks.label, count, { total, windows: bands.length });
    el.dataset.highlightCount = String(count);
    el.dataset.highlightWindows = String(bands.length);
    schedule();
  }

  function clearHighlight() {
    marks = null;
    toolbar.hideHighlight();
    el.dataset.highlightCount = "0";
    el.dataset.highlightWindows = "0";
    schedule();
  }

  // ---- range selection
  function setRange(a, b) {
    rangePanel.set(a, b);
    schedule();
  }

  function clearRange() {
    input.clearRangeDraft();
    rangePanel.clear();
    schedule();
  }

  // ---- drawing
  function draw() {
    if (destroyed) return;
    const width = scroller.clientWidth;
    if (width <= 0) return; // not attached yet; the ResizeObserver calls back
    const t0 = performance.now();
    const widthChanged = width !== cssW;
    cssW = width;
    labelW = labelWidth(cssW);
    const dpr = window.devicePixelRatio || 1;
    const pw = Math.round(cssW * dpr);
    const ph = Math.round(viewportH * dpr);
    if (canvas.width !== pw || canvas.height !== ph) {
      canvas.width = pw;
      canvas.height = ph;
      canvas.style.width = `${cssW}px`;
    }
    const ctx = canvas.getContext("2d");
    if (!ctx) return;
    const c = themeColors(el);
    const font = `11px ${c.fontFamily}`;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.font = font;
    ctx.textBaseline = "middle";
    ctx.fillStyle = c.bg;
    ctx.fillRect(0, 0, cssW, viewportH);

    const f = paintFrame;
    f.view = view;
    f.layout = layout;
    f.cssW = cssW;
    f.labelW = labelW;
    f.plotW = plotWidth();
    f.viewportH = viewportH;
    f.scrollTop = scroller.scrollTop;
    f.detail = windows.detail;
    f.pendingWindow = windows.pending;
    f.mask = searchBar.mask();
    f.marks = marks;
    f.hover = input.hover;
    f.selected = selected;
    f.flows = flows;
    f.range = input.rangeDraft ?? rangePanel.selection();
    painter.paint(ctx, f, c, font);

    el.dataset.drawMs = (performance.now() - t0).toFixed(2);
    if (widthChanged) windows.schedule();
    if (!painted) {
      painted = true;
      if (hooks.onPaint) hooks.onPaint();
    }
  }

  // ---- hit testing
  function entryAt(py) {
    if (py < AXIS_H) return null;
    const y = py - AXIS_H + scroller.scrollTop;
    const e = layout.entries[firstEntryAt(layout.entries, y)];
    return e && e.y <= y ? e : null;
  }

  /** What is under a canvas point: {ev, lane} for events, {counter} for counter lanes, or null. */
  function hitTest(px, py) {
    if (px < labelW || py < AXIS_H) return null;
    const entry = entryAt(py);
    if (!entry || entry.kind === "header") return null;
    const plotW = plotWidth();
    const t = xToTime(px - labelW, view, plotW);
    const slack = (HIT_SLACK_PX * (view.end - view.start)) / plotW;
    const top = AXIS_H + entry.y - scroller.scrollTop;
    if (entry.kind === "lane" && entry.lanes[0].kind === "counter") {
      const lane = entry.lanes[0];
      const info = counters.get(lane.id);
      if (!info || info.hi <= info.lo || t < counterTimes[info.lo]) return null;
      const [k] = counterWindow(counterTimes, info.lo, info.hi, t, t);
      return { counter: { lane, t, time: counterTimes[k], value: counterValues[k] } };
    }
    const rel = py - top - LANE_PAD;
    if (rel < 0 || rel >= entry.h - 2 * LANE_PAD) return null;
    const row = Math.floor(rel / ROW_H);
    const detail = windows.detail;
    const useDetail = detail && t >= detail.start && t <= detail.end;
    const index = useDetail ? detail.index : overview;
    const tbl = useDetail ? detail.table : table;
    // Rows past the lane's last (a window with more rows than laid out) draw on the last.
    const best = hitEntry(index, entry, row, t, slack);
    if (best < 0) return null;
    const ev = eventAt(index, tbl, index.perm[best]);
    return { ev, lane: laneById.get(ev.lane) };
  }

  // ---- mouse and keys
  const input = attachTimelineInput({
    el,
    canvas,
    scroller,
    tooltip,
    detailsCache,
    canFetchDetails: Boolean(source?.details),
    laneById,
    span,
    minSpan,
    getView: () => view,
    setView,
    labelWidth: () => labelW,
    plotWidth,
    entryAt,
    hitTest,
    onToggleGroup: toggleGroup,
    onSelect: (ev) => selectEvent(ev),
    onClickEmpty() {
      clearSelection();
      if (rangePanel.selection()) clearRange();
    },
    onRange: setRange,
    onEscape() {
      if (input.rangeDraft || rangePanel.selection()) clearRange();
      else if (selected) clearSelection();
      else if (marks) clearHighlight();
      else return false;
      return true;
    },
    schedule,
    isDestroyed,
  });

  const resizeObserver = typeof ResizeObserver !== "undefined" ? new ResizeObserver(() => schedule()) : null;
  resizeObserver?.observe(scroller);
  const mediaQuery = window.matchMedia?.(`(resolution: ${window.devicePixelRatio || 1}dppx)`);
  mediaQuery?.addEventListener?.("change", schedule);

  setView(view);

  return {
    el,
    redraw: schedule,
    getView: () => ({ ...view }),
    /** Whether the view shows less than the whole trace (the user zoomed or panned). */
    zoomed: () => view.start > 0 || view.end < span,
    /** The selected event as new data of the same run can find it again (ids change). */
    selection() {
      const lane = selected && laneById.get(selected.lane);
      return lane && selected.id >= 0
        ? { label: lane.label, group: lane.group, start_ns: selected.start_ns, dur_ns: selected.dur_ns }
        : null;
    },
    /** Select again the event a selection() of earlier data named, if this data holds it. */
    restoreSelection(sel) {
      const lane = lanes.find((l) => l.label === sel.label && l.group === sel.group);
      if (!lane || overview.merged) return;
      const r = rowAt(overview, table, lane.id, sel.start_ns, sel.dur_ns);
      if (r >= 0) selectEvent(eventAt(overview, table, r));
    },
    setView,
    zoomTo(start, end) {
      setView({ start, end });
    },
    highlight,
    clearHighlight,
    destroy() {
      destroyed = true;
      if (frame) cancelAnimationFrame(frame);
      windows.destroy();
      searchBar.destroy();
      input.destroy();
      resizeObserver?.disconnect();
      mediaQuery?.removeEventListener?.("change", schedule);
      details.destroy();
    },
  };
}
