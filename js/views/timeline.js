// The timeline: a canvas with a lane label column, a time axis, lane groups (rank · CPU threads,
// rank · GPU device streams, counters) that collapse, sub-rows for nested ops and overlapping
// kernels, step charts for counters; Perfetto-style navigation (W/S/A/D, ctrl+wheel, drag to
// select a range), hover tooltips, click for details and flow arrows, name search, highlights.
// This module keeps the state, layout, interaction and API; painting is timeline_paint.js, the
// search box search_bar.js, the range panel range_panel.js, the tooltip timeline_tooltip.js.
//
// Large traces: `data.table` is then the merged overview; after the view settles, the visible
// window is asked from `hooks.source` and drawn over the overview where it covers the view.
//
// Trace strings reach the DOM only through textContent; the canvas draws them with fillText.

import "./timeline.css";
import {
  buildCounterIndex,
  buildSegmentIndex,
  clampView,
  colorIndex,
  counterWindow,
  createDetailsCache,
  eventAt,
  firstEntryAt,
  groupLayout,
  groupMarks,
  hitEntry,
  keyToView,
  pan,
  planWindowRequest,
  rowOfId,
  viewForEvent,
  wheelZoomFactor,
  xToTime,
  zoomAt,
} from "../model/timeline.js";
import { createLocalSource } from "../model/source.js";
import { createDetails } from "./details.js";
import { node } from "./dom.js";
import { createRangePanel } from "./range_panel.js";
import { createSearchBar } from "./search_bar.js";
import { themeColors } from "./theme.js";
import { AXIS_H, DIMS, LANE_PAD, labelWidth, ROW_H } from "./timeline_canvas.js";
import { createTimelinePainter } from "./timeline_paint.js";
import { createToolbar } from "./timeline_toolbar.js";
import { createTooltip } from "./timeline_tooltip.js";

const MAX_VIEWPORT_H = 560;
const MIN_SPAN_NS = 20;
const WINDOW_DEBOUNCE_MS = 80;
const HOVER_DWELL_MS = 150;
const DRAG_THRESHOLD_PX = 4;
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

  // A lane is as many rows tall as it says, or as the table needs.
  const lanes = (Array.isArray(data.lanes) ? data.lanes : []).map((lane) => {
    let rows = Math.max(1, lane.rows | 0);
    for (const chunk of overview.lanes.get(lane.id) ?? []) rows = Math.max(rows, chunk.rows);
    return rows === lane.rows ? lane : { ...lane, rows };
  });
  const laneById = new Map(lanes.map((l) => [l.id, l]));

  let span = Number(data.span) || 0;
  for (const chunks of overview.lanes.values()) {
    for (const chunk of chunks) {
      for (let r = 0; r < chunk.rows; r++) {
        if (chunk.hi[r] > chunk.lo[r] && overview.maxEnd[chunk.hi[r] - 1] > span) span = overview.maxEnd[chunk.hi[r] - 1];
      }
    }
  }
  if (!(span > 0)) span = 1;
  const minSpan = Math.min(MIN_SPAN_NS, span);

  const ownSource = !hooks.source && complete && overview.n > 0;
  const source = hooks.source ?? (ownSource ? createLocalSource({ table, lanes, names, nameKinds, kinds, index: overview }) : null);

  const kindName = (nameIdx) => kinds[nameKinds[nameIdx]] ?? "";
  const nameText = (nameIdx) => (nameIdx >= 0 && nameIdx < names.length ? String(names[nameIdx]) : "");
  const colorOfName = new Int16Array(names.length).fill(-1);
  function colorOf(nameIdx) {
    if (!(nameIdx >= 0 && nameIdx < colorOfName.length)) return colorIndex("", "kernel");
    let c = colorOfName[nameIdx];
    if (c < 0) {
      c = colorIndex(names[nameIdx], kindName(nameIdx));
      colorOfName[nameIdx] = c;
    }
    return c;
  }
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
  let mouseX = null; // plot x of the pointer, for W/S anchoring
  let lastPointer = null; // {clientX, clientY} for re-rendering the tooltip
  let hover = null; // event under the pointer
  let selected = null;
  let flows = []; // [[from ev, to ev]]
  let detail = null; // {index, table, start, end, merged, width}
  let pendingWindow = null;
  let windowToken = 0;
  let windowTimer = 0;
  let windowRequests = 0;
  let marks = null; // {label, count, byLane: Map(lane -> [mark...])}
  let rangeDraft = null; // the range being dragged out, before it is set on the panel
  let drag = null;
  let dwellTimer = 0;
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
    scheduleWindow();
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

  // ---- detail windows (complete=false)
  function scheduleWindow() {
    if (complete || !source?.window || destroyed) return;
    clearTimeout(windowTimer);
    windowTimer = setTimeout(requestWindow, WINDOW_DEBOUNCE_MS);
  }

  function requestWindow() {
    if (destroyed || cssW <= 0) return;
    const held = pendingWindow ?? detail;
    const plan = planWindowRequest(view, plotWidth(), span, held);
    if (!plan) return;
    const token = ++windowToken;
    pendingWindow = { ...plan, merged: true, token };
    windowRequests += 1;
    el.dataset.windowRequests = String(windowRequests);
    schedule();
    source.window(plan.start, plan.end, plan.width).then(
      (reply) => {
        if (destroyed || token !== windowToken || !reply) return; // a newer request owns the view
        pendingWindow = null;
        try {
          const index = buildSegmentIndex(reply);
          const v = index.view ?? [plan.start, plan.end];
          detail = { index, table: reply, start: v[0], end: v[1], merged: index.merged, width: plan.width };
          if (toolbar.statusIsBad()) setStatus("");
        } catch (err) {
          setStatus(`detail window unreadable: ${err.message}`, true);
        }
        schedule();
        scheduleWindow(); // the view may have moved on while this was in flight
      },
      (err) => {
        if (destroyed || token !== windowToken) return;
        pendingWindow = null;
        setStatus(`detail window failed: ${err.message}`, true);
        schedule();
      },
    );
  }

  // ---- details, selection, flows
  /** Name index of an event known by id, from the tables in memory (-1 if none holds it). */
  function nameIndexOf(ev) {
    if (Number.isInteger(ev.name)) return ev.name;
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
      const count = selected.count > 1 ? `${selected.count.toLocaleString("en-US")} events are` : "several events are";
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
  function highlight(list, label) {
    const { count, byLane, longest } = groupMarks(list);
    marks = { label: String(label ?? ""), count, byLane };
    // Deep CPU stacks can push GPU lanes below the fold: bring the marked events into sight.
    if (longest) ensureLaneVisible(longest.lane, longest.row);
    toolbar.showHighlight(marks.label, count);
    el.dataset.highlightCount = String(count);
    schedule();
  }

  function clearHighlight() {
    marks = null;
    toolbar.hideHighlight();
    el.dataset.highlightCount = "0";
    schedule();
  }

  // ---- range selection
  function setRange(a, b) {
    rangePanel.set(a, b);
    schedule();
  }

  function clearRange() {
    rangeDraft = null;
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
    f.detail = detail;
    f.pendingWindow = pendingWindow;
    f.mask = searchBar.mask();
    f.marks = marks;
    f.hover = hover;
    f.selected = selected;
    f.flows = flows;
    f.range = rangeDraft ?? rangePanel.selection();
    painter.paint(ctx, f, c, font);

    el.dataset.drawMs = (performance.now() - t0).toFixed(2);
    if (widthChanged) scheduleWindow();
    if (!painted) {
      painted = true;
      if (hooks.onPaint) hooks.onPaint();
    }
  }

  // ---- hit testing and hover
  function localPoint(e) {
    const r = canvas.getBoundingClientRect();
    return { x: e.clientX - r.left, y: e.clientY - r.top };
  }

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
    const useDetail = detail && t >= detail.start && t <= detail.end;
    const index = useDetail ? detail.index : overview;
    const tbl = useDetail ? detail.table : table;
    // Rows past the lane's last (a window with more rows than laid out) draw on the last.
    const best = hitEntry(index, entry, row, t, slack);
    if (best < 0) return null;
    const ev = eventAt(index, tbl, index.perm[best]);
    return { ev, lane: laneById.get(ev.lane) };
  }

  function updateHover(e) {
    const p = localPoint(e);
    mouseX = p.x >= labelW ? p.x - labelW : null;
    lastPointer = { clientX: e.clientX, clientY: e.clientY };
    const hit = hitTest(p.x, p.y);
    const ev = hit?.ev ?? null;
    const changed = (ev?.id ?? null) !== (hover?.id ?? null) || (ev && hover && (ev.start_ns !== hover.start_ns || ev.lane !== hover.lane));
    hover = ev;
    if (hit) tooltip.show(hit, e.clientX, e.clientY, view, el);
    else tooltip.hide();
    if (!changed) return;
    schedule();
    clearTimeout(dwellTimer);
    if (ev && ev.id >= 0 && source?.details && !detailsCache.has(ev.id)) {
      const id = ev.id;
      dwellTimer = setTimeout(() => {
        detailsCache.fetch(id).then(
          () => {
            if (destroyed || hover?.id !== id || tooltip.hidden || !lastPointer) return;
            tooltip.show({ ev: hover, lane: laneById.get(hover.lane) }, lastPointer.clientX, lastPointer.clientY, view, el);
          },
          () => {},
        );
      }, HOVER_DWELL_MS);
    }
  }

  function hideHover() {
    clearTimeout(dwellTimer);
    tooltip.hide();
    mouseX = null;
    if (hover) {
      hover = null;
      schedule();
    }
  }

  // ---- mouse and keys
  function anchorTime() {
    return mouseX === null ? null : xToTime(mouseX, view, plotWidth());
  }

  function onWheel(e) {
    const unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? 400 : 1;
    if (e.ctrlKey || e.metaKey) {
      e.preventDefault();
      const p = localPoint(e);
      const x = Math.min(Math.max(p.x - labelW, 0), plotWidth());
      setView(zoomAt(view, xToTime(x, view, plotWidth()), wheelZoomFactor(e.deltaY, e.deltaMode), span, minSpan));
      return;
    }
    const horizontal = e.shiftKey ? e.deltaY || e.deltaX : Math.abs(e.deltaX) > Math.abs(e.deltaY) ? e.deltaX : 0;
    if (horizontal) {
      e.preventDefault();
      setView(pan(view, ((horizontal * unit) / plotWidth()) * (view.end - view.start), span, minSpan));
    }
    // A plain vertical wheel scrolls the lanes natively (and the page at the ends).
  }

  function onPointerDown(e) {
    scroller.focus({ preventScroll: true });
    const p = localPoint(e);
    const panning = e.button === 1 || (e.button === 0 && (e.altKey || p.y < AXIS_H));
    if (e.button !== 0 && !panning) return;
    if (!panning) {
      const entry = entryAt(p.y);
      if (entry?.kind === "header") {
        toggleGroup(entry.group);
        return;
      }
      if (p.x < labelW) return;
    }
    e.preventDefault();
    hideHover();
    drag = panning
      ? { mode: "pan", x: e.clientX, y: e.clientY, view, scrollTop: scroller.scrollTop, id: e.pointerId }
      : { mode: "select", x: e.clientX, y: e.clientY, t0: xToTime(p.x - labelW, view, plotWidth()), moved: false, id: e.pointerId, point: p };
    canvas.setPointerCapture?.(e.pointerId);
    if (panning) canvas.classList.add("gp-dragging");
  }

  function onPointerMove(e) {
    if (!drag) {
      updateHover(e);
      return;
    }
    const dx = e.clientX - drag.x;
    const dy = e.clientY - drag.y;
    if (drag.mode === "pan") {
      setView(pan(drag.view, (-dx / plotWidth()) * (drag.view.end - drag.view.start), span, minSpan));
      scroller.scrollTop = drag.scrollTop - dy;
      return;
    }
    if (!drag.moved && Math.abs(dx) < DRAG_THRESHOLD_PX) return;
    drag.moved = true;
    const p = localPoint(e);
    const x = Math.min(Math.max(p.x - labelW, 0), plotWidth());
    rangeDraft = { start: drag.t0, end: xToTime(x, view, plotWidth()) };
    schedule();
  }

  function onPointerUp(e) {
    if (!drag) return;
    const d = drag;
    drag = null;
    canvas.releasePointerCapture?.(d.id);
    canvas.classList.remove("gp-dragging");
    if (d.mode !== "select") return;
    if (d.moved && rangeDraft) {
      const { start, end } = rangeDraft;
      rangeDraft = null;
      if (Math.abs(end - start) > 0) setRange(start, end);
      else schedule();
      return;
    }
    const hit = hitTest(d.point.x, d.point.y);
    if (hit?.ev) selectEvent(hit.ev);
    else {
      clearSelection();
      if (rangePanel.selection()) clearRange();
    }
    updateHover(e);
  }

  function onDoubleClick(e) {
    const p = localPoint(e);
    const hit = hitTest(p.x, p.y);
    if (!hit?.ev) return;
    setView(viewForEvent(hit.ev.start_ns, hit.ev.dur_ns, span, minSpan, 0.1));
  }

  function isTyping(target) {
    const tag = target?.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || target?.isContentEditable;
  }

  function onKeyDown(e) {
    if (isTyping(e.target) || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "Escape") {
      if (rangeDraft || rangePanel.selection()) clearRange();
      else if (selected) clearSelection();
      else if (marks) clearHighlight();
      else return;
      e.preventDefault();
      e.stopPropagation();
      return;
    }
    const next = keyToView(e.key, view, { span, minSpan, anchor: anchorTime() });
    if (!next) return;
    e.preventDefault();
    e.stopPropagation();
    setView(next);
  }

  canvas.addEventListener("wheel", onWheel, { passive: false });
  canvas.addEventListener("pointerdown", onPointerDown);
  canvas.addEventListener("pointermove", onPointerMove);
  canvas.addEventListener("pointerup", onPointerUp);
  canvas.addEventListener("pointercancel", onPointerUp);
  canvas.addEventListener("pointerleave", () => { if (!drag) hideHover(); });
  canvas.addEventListener("dblclick", onDoubleClick);
  el.addEventListener("keydown", onKeyDown);
  scroller.addEventListener("focus", () => scroller.classList.add("gp-focused"));
  scroller.addEventListener("blur", () => scroller.classList.remove("gp-focused"));
  scroller.addEventListener("scroll", () => { tooltip.hide(); schedule(); });

  const resizeObserver = typeof ResizeObserver !== "undefined" ? new ResizeObserver(() => schedule()) : null;
  resizeObserver?.observe(scroller);
  const mediaQuery = window.matchMedia?.(`(resolution: ${window.devicePixelRatio || 1}dppx)`);
  mediaQuery?.addEventListener?.("change", schedule);

  setView(view);

  return {
    el,
    redraw: schedule,
    getView: () => ({ ...view }),
    setView,
    zoomTo(start, end) {
      setView({ start, end });
    },
    highlight,
    clearHighlight,
    destroy() {
      destroyed = true;
      if (frame) cancelAnimationFrame(frame);
      clearTimeout(windowTimer);
      searchBar.destroy();
      clearTimeout(dwellTimer);
      resizeObserver?.disconnect();
      mediaQuery?.removeEventListener?.("change", schedule);
      if (ownSource) source.destroy?.();
      details.destroy();
    },
  };
}
