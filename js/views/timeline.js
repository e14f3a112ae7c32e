// The timeline: a canvas with a lane label column, a time axis, lane groups (rank · CPU threads,
// rank · GPU device streams, counters) that collapse, sub-rows for nested ops and overlapping
// kernels, step charts for counters; Perfetto-style navigation (W/S/A/D, ctrl+wheel, drag to
// select a range), hover tooltips, click for details and flow arrows, name search, highlights.
//
// Large traces: `data.table` is then the merged overview; after the view settles, the visible
// window is asked from `hooks.source` and drawn over the overview where it covers the view.
//
// Trace strings reach the DOM only through textContent; the canvas draws them with fillText.

import "./timeline.css";
import {
  axisTicks,
  blockMatches,
  buildCounterIndex,
  buildSegmentIndex,
  clampView,
  colorIndex,
  counterWindow,
  createBoxes,
  DIM_COLOR,
  eventAt,
  firstEntryAt,
  formatDuration,
  formatTime,
  formatValue,
  groupLayout,
  hitRow,
  keyToView,
  lodRow,
  palette,
  PALETTE_SIZE,
  pan,
  planWindowRequest,
  rowOfId,
  rowRange,
  timeToX,
  viewForEvent,
  wheelZoomFactor,
  xToTime,
  zoomAt,
} from "../model/timeline.js";
import { compileMatcher, maskFromIndexes, matchNames, matchStatus, stepMatch } from "../model/search.js";
import { createLocalSource } from "../model/source.js";
import { createDetails } from "./details.js";

const AXIS_H = 24;
const ROW_H = 16;
const LANE_PAD = 3;
const HEADER_H = 20;
const COUNTER_H = 36;
const DIMS = { rowH: ROW_H, pad: LANE_PAD, headerH: HEADER_H, counterH: COUNTER_H };
const MAX_VIEWPORT_H = 560;
const MIN_SPAN_NS = 20;
const WINDOW_DEBOUNCE_MS = 80;
const HOVER_DWELL_MS = 150;
const SEARCH_DEBOUNCE_MS = 200;
const DRAG_THRESHOLD_PX = 4;
const LABEL_MIN_PX = 28;
const HIT_SLACK_PX = 3;
const DETAILS_CACHE = 500;

function cssVar(style, name, fallback) {
  const v = style.getPropertyValue(name).trim();
  return v || fallback;
}

/** Dark theme: JupyterLab says so on <body>; otherwise judge by the background's luminance. */
function isDark(bg) {
  const flag = document.body?.dataset?.jpThemeLight;
  if (flag === "false") return true;
  if (flag === "true") return false;
  let r;
  let g;
  let b;
  const hex = /^#([0-9a-f]{3}|[0-9a-f]{6})$/i.exec(bg);
  const rgb = /^rgba?\(\s*(\d+)[,\s]+(\d+)[,\s]+(\d+)/i.exec(bg);
  if (hex) {
    const h = hex[1].length === 3 ? hex[1].replace(/./g, "$&$&") : hex[1];
    [r, g, b] = [0, 2, 4].map((i) => parseInt(h.slice(i, i + 2), 16));
  } else if (rgb) {
    [r, g, b] = [rgb[1], rgb[2], rgb[3]].map(Number);
  } else return false;
  return 0.2126 * r + 0.7152 * g + 0.0722 * b < 128;
}

function themeColors(el) {
  const st = getComputedStyle(el);
  const bg = cssVar(st, "--jp-layout-color0", "#ffffff");
  const dark = isDark(bg);
  return {
    dark,
    bg,
    bgAlt: cssVar(st, "--jp-layout-color1", dark ? "#1e1e1e" : "#f7f7f7"),
    labelBg: cssVar(st, "--jp-layout-color2", dark ? "#2a2a2a" : "#eeeeee"),
    headerBg: cssVar(st, "--jp-layout-color3", dark ? "#3a3a3a" : "#e0e0e0"),
    border: cssVar(st, "--jp-border-color2", dark ? "#555" : "#d0d0d0"),
    grid: cssVar(st, "--jp-border-color3", dark ? "#333" : "#e8e8e8"),
    text: cssVar(st, "--jp-ui-font-color1", dark ? "#e0e0e0" : "#1f1f1f"),
    strong: cssVar(st, "--jp-ui-font-color0", dark ? "#ffffff" : "#000000"),
    muted: cssVar(st, "--jp-ui-font-color2", dark ? "#aaaaaa" : "#616161"),
    cpu: cssVar(st, "--jp-brand-color1", "#1976d2"),
    gpu: cssVar(st, "--jp-accent-color1", "#388e3c"),
    counter: cssVar(st, "--jp-brand-color2", "#64b5f6"),
    highlight: cssVar(st, "--jp-warn-color1", "#f57c00"),
    flow: cssVar(st, "--jp-error-color1", "#d32f2f"),
    range: cssVar(st, "--jp-brand-color1", "#1976d2"),
    onBox: dark ? "#0b0b0b" : "#111111",
    fontFamily: cssVar(st, "--jp-ui-font-family", "system-ui, -apple-system, 'Segoe UI', sans-serif"),
  };
}

function node(tag, className, text) {
  const el = document.createElement(tag);
  if (className) el.className = className;
  if (text !== undefined) el.textContent = text;
  return el;
}

function button(text, title) {
  const b = node("button", "gp-button", text);
  b.type = "button";
  if (title) {
    b.title = title;
    b.setAttribute("aria-label", title);
  }
  return b;
}

/** Cut text to maxWidth px with an ellipsis, estimating from the cached full width (no loop). */
function fitText(ctx, text, maxWidth, cache) {
  if (maxWidth <= 8) return "";
  let full = cache.get(text);
  if (full === undefined) {
    full = ctx.measureText(text).width;
    cache.set(text, full);
  }
  if (full <= maxWidth) return text;
  const n = Math.floor((text.length * maxWidth) / full) - 2;
  return n > 0 ? `${text.slice(0, n)}…` : "";
}

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

  const toolbar = node("div", "gp-toolbar");
  const reset = button("Reset zoom", "Show the whole trace (0)");
  const rangeText = node("span", "gp-range");
  const searchBox = node("span", "gp-search");
  const searchInput = node("input", "gp-search-input");
  searchInput.type = "search";
  searchInput.placeholder = "search names";
  searchInput.setAttribute("aria-label", "Search event names");
  const regexLabel = node("label", "gp-search-regex");
  const regexBox = node("input");
  regexBox.type = "checkbox";
  regexLabel.append(regexBox, document.createTextNode("regex"));
  const prevButton = button("‹", "Previous match (shift+Enter)");
  const nextButton = button("›", "Next match (Enter)");
  const searchStatus = node("span", "gp-search-status");
  searchBox.append(searchInput, regexLabel, prevButton, nextButton, searchStatus);
  const chip = node("span", "gp-chip");
  chip.hidden = true;
  const chipText = node("span", "gp-chip-text");
  const chipClose = node("button", "gp-chip-close", "×");
  chipClose.type = "button";
  chipClose.title = "Stop highlighting";
  chipClose.setAttribute("aria-label", "Stop highlighting");
  chip.append(chipText, chipClose);
  const status = node("span", "gp-tl-status");
  const help = node("span", "gp-help", "W/S zoom · A/D pan · ctrl+wheel zoom · drag select · 0 reset");
  help.title = "W/S: zoom at the mouse · A/D: pan · ctrl/cmd+wheel: zoom · shift+wheel: pan · wheel: scroll lanes · drag: select a range (Escape clears) · double-click: zoom to an event · 0: reset";
  toolbar.append(reset, rangeText, searchBox, chip, status, help);

  const body = node("div", "gp-tl-body");
  const scroller = node("div", "gp-scroller");
  scroller.tabIndex = 0;
  scroller.setAttribute("aria-label", "Timeline plot: W/S zoom, A/D pan, 0 resets");
  const canvas = node("canvas", "gp-canvas");
  canvas.setAttribute("role", "img");
  canvas.setAttribute("aria-label", `Timeline: ${totalEvents} events in ${lanes.length} lanes`);
  const spacer = node("div", "gp-spacer");
  scroller.append(canvas, spacer);
  const rangePanel = node("div", "gp-range-panel");
  rangePanel.hidden = true;
  const tooltip = node("div", "gp-tooltip");
  tooltip.hidden = true;
  body.append(scroller, rangePanel);

  const details = createDetails({
    laneLabel: laneText,
    onJump: (ev) => selectEvent(ev, { zoom: true }),
    onClose: () => clearSelection(),
  });
  el.append(toolbar, body, details.el, tooltip);

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
  let destroyed = false;
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
  let search = null; // {pattern, regex, mask, count, list, k, error, pendingStep}
  let searchToken = 0;
  let searchTimer = 0;
  let marks = null; // {label, count, byLane: Map(lane -> [mark...])}
  let rangeSel = null;
  let rangeDraft = null;
  let rangeToken = 0;
  let drag = null;
  let dwellTimer = 0;
  const detailsCache = new Map();
  const detailsInflight = new Map();
  const textWidths = new Map();
  const boxes = createBoxes(4096);
  const paths = new Array(PALETTE_SIZE).fill(null);
  let labels = { n: 0, x: new Float64Array(1024), y: new Float64Array(1024), w: new Float64Array(1024), name: new Int32Array(1024) };

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
    const res = (view.end - view.start) / 1000;
    rangeText.textContent = `${formatTime(view.start, res)} – ${formatTime(view.end, res)} (${formatDuration(view.end - view.start)} of ${formatDuration(span)})`;
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

  function setStatus(text, bad = false) {
    status.textContent = text;
    status.classList.toggle("gp-bad", bad);
  }
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
          if (status.classList.contains("gp-bad")) setStatus("");
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
  function fetchDetails(id) {
    if (detailsCache.has(id)) return Promise.resolve(detailsCache.get(id));
    if (detailsInflight.has(id)) return detailsInflight.get(id);
    if (!source?.details) return Promise.reject(new Error("no details source"));
    const p = source.details(id).then(
      (d) => {
        detailsInflight.delete(id);
        detailsCache.set(id, d);
        if (detailsCache.size > DETAILS_CACHE) detailsCache.delete(detailsCache.keys().next().value);
        return d;
      },
      (err) => {
        detailsInflight.delete(id);
        throw err;
      },
    );
    detailsInflight.set(id, p);
    return p;
  }

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
    fetchDetails(id).then(
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
      fetchDetails(d.launch.id).then(
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

  // ---- search
  function showSearchStatus() {
    if (!search) {
      searchStatus.textContent = "";
      searchStatus.classList.remove("gp-bad");
      return;
    }
    const bad = Boolean(search.error);
    searchStatus.classList.toggle("gp-bad", bad);
    if (bad) searchStatus.textContent = search.error;
    else if (search.count === null) searchStatus.textContent = "searching…";
    else searchStatus.textContent = matchStatus(search.k, search.count, search.list?.n ?? 0);
  }

  function runSearch() {
    clearTimeout(searchTimer);
    const pattern = searchInput.value;
    const regex = regexBox.checked;
    const token = ++searchToken;
    if (!pattern) {
      search = null;
      el.dataset.searchCount = "0";
      showSearchStatus();
      schedule();
      return;
    }
    const matcher = compileMatcher(pattern, regex);
    search = {
      pattern,
      regex,
      mask: matcher && !matcher.error ? matchNames(names, matcher).mask : null,
      count: null,
      list: null,
      k: -1,
      error: matcher?.error ?? null,
      pendingStep: 0,
    };
    if (!source?.search) {
      search.count = 0;
      if (!search.error) search.error = "search needs the kernel (no source)";
    } else {
      source.search(pattern, regex).then(
        (reply) => {
          if (destroyed || token !== searchToken) return;
          search.count = Number(reply.count) || 0;
          search.list = reply.table ?? null;
          search.error = null;
          if (Array.isArray(reply.names)) search.mask = maskFromIndexes(names.length, reply.names);
          el.dataset.searchCount = String(search.count);
          const step = search.pendingStep;
          search.pendingStep = 0;
          if (step) stepSearch(step);
          showSearchStatus();
          schedule();
        },
        (err) => {
          if (destroyed || token !== searchToken) return;
          search.error = err.message;
          search.count = 0;
          search.mask = null;
          el.dataset.searchCount = "0";
          showSearchStatus();
          schedule();
        },
      );
    }
    showSearchStatus();
    schedule();
  }

  function stepSearch(dir) {
    if (!search || search.pattern !== searchInput.value || search.regex !== regexBox.checked) {
      runSearch();
      if (search) search.pendingStep = dir;
      return;
    }
    if (!search.list) {
      search.pendingStep = dir;
      return;
    }
    const listed = search.list.n;
    if (!listed) return;
    search.k = stepMatch(search.k, listed, dir);
    const c = search.list.columns;
    const k = search.k;
    selectEvent({ id: c.id[k], lane: c.lane[k], row: c.row?.[k] ?? 0, start_ns: c.start_ns[k], dur_ns: c.dur_ns[k] }, { zoom: true });
    showSearchStatus();
  }

  // ---- highlight (hints' evidence, roofline points)
  function highlight(list, label) {
    const byLane = new Map();
    let count = 0;
    for (const m of list ?? []) {
      if (!m || !Number.isFinite(Number(m.start_ns))) continue;
      const lane = Number(m.lane);
      if (!byLane.has(lane)) byLane.set(lane, []);
      byLane.get(lane).push({ id: Number(m.id), lane, row: Number(m.row) || 0, start_ns: Number(m.start_ns), dur_ns: Math.max(0, Number(m.dur_ns) || 0) });
      count += 1;
    }
    let longest = null;
    for (const arr of byLane.values()) {
      arr.sort((a, b) => a.start_ns - b.start_ns);
      for (const m of arr) if (!longest || m.dur_ns > longest.dur_ns) longest = m;
    }
    marks = { label: String(label ?? ""), count, byLane };
    // Deep CPU stacks can push GPU lanes below the fold: bring the marked events into sight.
    if (longest) ensureLaneVisible(longest.lane, longest.row);
    chipText.textContent = `highlighting ${marks.label} (${count.toLocaleString("en-US")})`;
    chip.hidden = false;
    el.dataset.highlightCount = String(count);
    schedule();
  }

  function clearHighlight() {
    marks = null;
    chip.hidden = true;
    el.dataset.highlightCount = "0";
    schedule();
  }

  // ---- range selection
  function setRange(a, b) {
    const start = Math.max(0, Math.min(a, b));
    const end = Math.min(span, Math.max(a, b));
    rangeSel = { start, end };
    const token = ++rangeToken;
    rangePanel.hidden = false;
    rangePanel.replaceChildren(rangeHead(), node("div", "gp-muted", source?.range ? "computing…" : "no source for range aggregates"));
    if (source?.range) {
      source.range(start, end).then(
        (r) => {
          if (destroyed || token !== rangeToken) return;
          renderRange(r);
        },
        (err) => {
          if (destroyed || token !== rangeToken) return;
          rangePanel.replaceChildren(rangeHead(), node("div", "gp-tl-status gp-bad", `range aggregates failed: ${err.message}`));
        },
      );
    }
    schedule();
  }

  function rangeHead() {
    const head = node("div", "gp-range-head");
    const res = (rangeSel.end - rangeSel.start) / 1000;
    head.append(node("span", "", `${formatTime(rangeSel.start, res)} – ${formatTime(rangeSel.end, res)} · ${formatDuration(rangeSel.end - rangeSel.start)}`));
    const zoom = button("zoom", "Zoom to this range");
    zoom.addEventListener("click", () => rangeSel && setView(rangeSel));
    const close = button("×", "Clear the selection (Escape)");
    close.addEventListener("click", clearRange);
    head.append(zoom, close);
    return head;
  }

  function topTable(title, rows) {
    const wrap = node("div", "gp-range-top");
    wrap.append(node("div", "gp-details-label", title));
    const t = node("table", "gp-table");
    const tb = node("tbody");
    for (const row of rows) {
      const tr = node("tr");
      tr.append(node("td", "gp-name", String(row.name ?? "")), node("td", "gp-num", `${Number(row.count).toLocaleString("en-US")}×`), node("td", "gp-num", formatDuration(Number(row.total_ns))));
      tr.firstChild.title = String(row.name ?? "");
      tb.append(tr);
    }
    t.append(tb);
    wrap.append(t);
    return wrap;
  }

  function renderRange(r) {
    const parts = [rangeHead()];
    for (const rank of r?.ranks ?? []) {
      const box = node("div", "gp-range-rank");
      const busy = rank.gpu_busy_pct === null || rank.gpu_busy_pct === undefined ? "no GPU activity" : `GPU busy ${Number(rank.gpu_busy_pct).toFixed(1)} % (${formatDuration(Number(rank.gpu_busy_ns))})`;
      box.append(node("div", "gp-rank-title", `rank ${rank.rank} · ${busy} · ${Number(rank.kernels ?? 0).toLocaleString("en-US")} kernels`));
      if (rank.top_kernels?.length) box.append(topTable("top kernels", rank.top_kernels));
      if (rank.top_ops?.length) box.append(topTable("top ops", rank.top_ops));
      parts.push(box);
    }
    if (parts.length === 1) parts.push(node("div", "gp-muted", "nothing in this range"));
    rangePanel.replaceChildren(...parts);
  }

  function clearRange() {
    rangeSel = null;
    rangeDraft = null;
    rangeToken += 1;
    rangePanel.hidden = true;
    schedule();
  }

  // ---- drawing
  function pushLabel(x, y, w, nameIdx) {
    if (labels.n === labels.x.length) {
      const cap = labels.n * 2;
      const grow = (a, T) => { const b = new T(cap); b.set(a); return b; };
      labels = { n: labels.n, x: grow(labels.x, Float64Array), y: grow(labels.y, Float64Array), w: grow(labels.w, Float64Array), name: grow(labels.name, Int32Array) };
    }
    const i = labels.n++;
    labels.x[i] = x;
    labels.y[i] = y;
    labels.w[i] = w;
    labels.name[i] = nameIdx;
  }

  function visibleEntries(scrollTop) {
    const out = [];
    const bottom = scrollTop + viewportH - AXIS_H;
    for (let i = firstEntryAt(layout.entries, scrollTop); i < layout.entries.length; i++) {
      const e = layout.entries[i];
      if (e.y >= bottom) break;
      out.push(e);
    }
    return out;
  }

  function eventLanesOf(entry) {
    if (entry.kind === "summary") return entry.lanes;
    if (entry.kind === "lane" && entry.lanes[0].kind !== "counter") return entry.lanes;
    return [];
  }

  // Block summaries of the search mask, per table index, rebuilt when the mask changes.
  const maskBlockCache = new WeakMap();
  function maskBlocksFor(index, mask) {
    const hit = maskBlockCache.get(index);
    if (hit && hit.mask === mask) return hit.blocks;
    const blocks = blockMatches(index, mask);
    maskBlockCache.set(index, { mask, blocks });
    return blocks;
  }

  /** Events of `index` overlapping [t0, t1], clipped to that stretch of the plot. */
  function drawEvents(ctx, index, t0, t1, entries, scrollTop, plotW, c) {
    const xa = labelW + Math.max(0, timeToX(t0, view, plotW));
    const xb = labelW + Math.min(plotW, timeToX(t1, view, plotW));
    if (!(xb > xa) || index.n === 0) return;
    ctx.save();
    ctx.beginPath();
    ctx.rect(xa, AXIS_H, xb - xa, viewportH - AXIS_H);
    ctx.clip();
    paths.fill(null);
    labels.n = 0;
    const mask = search?.mask ?? null;
    const maskBlocks = mask ? maskBlocksFor(index, mask) : null;
    const nameCol = index.names;
    for (const entry of entries) {
      const summary = entry.kind === "summary";
      const y = AXIS_H + entry.y - scrollTop;
      for (const lane of eventLanesOf(entry)) {
        const chunks = index.lanes.get(lane.id);
        if (!chunks) continue;
        for (const chunk of chunks) {
          for (let r = 0; r < chunk.rows; r++) {
            if (chunk.hi[r] <= chunk.lo[r]) continue;
            const [k0, k1] = rowRange(index, chunk.lo[r], chunk.hi[r], t0, t1);
            if (k1 <= k0) continue;
            boxes.n = 0;
            lodRow(index, k0, k1, view, plotW, 1, boxes, mask, maskBlocks);
            const by = y + LANE_PAD + (summary ? 0 : Math.min(r, lane.rows - 1)) * ROW_H + 1;
            for (let b = 0; b < boxes.n; b++) {
              const x = labelW + boxes.x0[b];
              const w = Math.max(1, boxes.x1[b] - boxes.x0[b]);
              const nameIdx = nameCol ? nameCol[index.perm[boxes.pos[b]]] : -1;
              const color = mask && !boxes.match[b] ? DIM_COLOR : colorOf(nameIdx);
              let path = paths[color];
              if (!path) path = paths[color] = new Path2D();
              path.rect(x, by, w, ROW_H - 2);
              if (!summary && w >= LABEL_MIN_PX && boxes.count[b] === 1) pushLabel(x, by, w, nameIdx);
            }
          }
        }
      }
    }
    const fills = palette(c.dark);
    // Non-matches first, so matches that overlap them stay on top.
    for (let k = 0; k < PALETTE_SIZE; k++) {
      const i = (k + DIM_COLOR) % PALETTE_SIZE;
      if (!paths[i]) continue;
      ctx.fillStyle = fills[i];
      ctx.fill(paths[i]);
      paths[i] = null;
    }
    ctx.fillStyle = c.onBox;
    for (let i = 0; i < labels.n; i++) {
      const x0 = Math.max(labels.x[i], xa);
      const x1 = Math.min(labels.x[i] + labels.w[i], xb);
      const text = fitText(ctx, nameText(labels.name[i]), x1 - x0 - 6, textWidths);
      if (text) ctx.fillText(text, x0 + 3, labels.y[i] + (ROW_H - 2) / 2 + 0.5);
    }
    ctx.restore();
  }

  function drawCounters(ctx, entries, scrollTop, plotW, c) {
    if (!counterTimes || !counterValues) return;
    ctx.save();
    ctx.beginPath();
    ctx.rect(labelW, AXIS_H, plotW, viewportH - AXIS_H);
    ctx.clip();
    for (const entry of entries) {
      if (entry.kind !== "lane" || entry.lanes[0].kind !== "counter") continue;
      const lane = entry.lanes[0];
      const info = counters.get(lane.id);
      const y = AXIS_H + entry.y - scrollTop;
      if (!info || info.hi <= info.lo) {
        ctx.fillStyle = c.muted;
        ctx.fillText("no samples", labelW + 6, y + entry.h / 2);
        continue;
      }
      const lo = Number.isFinite(lane.min) ? Math.min(lane.min, info.min) : Math.min(0, info.min);
      let hi = Number.isFinite(lane.max) ? Math.max(lane.max, info.max) : info.max;
      if (!(hi > lo)) hi = lo + 1;
      const top = y + 5;
      const base = y + entry.h - 3;
      const scaleY = (base - top) / (hi - lo);
      const yOf = (v) => base - (v - lo) * scaleY;
      const xOf = (t) => {
        const x = timeToX(t, view, plotW);
        return labelW + (x < -1 ? -1 : x > plotW + 1 ? plotW + 1 : x);
      };
      const [k0, k1] = counterWindow(counterTimes, info.lo, info.hi, view.start, view.end);
      ctx.beginPath();
      ctx.moveTo(xOf(counterTimes[k0]), base);
      let prevY = base;
      // One point per pixel column (its max) when samples are denser than pixels.
      let px = NaN;
      let pv = 0;
      const emit = (x, v) => {
        const yv = yOf(v);
        ctx.lineTo(x, prevY);
        ctx.lineTo(x, yv);
        prevY = yv;
      };
      for (let k = k0; k < k1; k++) {
        const x = xOf(counterTimes[k]);
        const v = counterValues[k];
        if (Math.floor(x) === Math.floor(px)) {
          if (v > pv) pv = v;
          continue;
        }
        if (px === px) emit(px, pv);
        px = x;
        pv = v;
      }
      if (px === px) emit(px, pv);
      const xEnd = xOf(k1 < info.hi ? counterTimes[k1] : span);
      ctx.lineTo(xEnd, prevY);
      ctx.lineTo(xEnd, base);
      ctx.closePath();
      ctx.globalAlpha = 0.35;
      ctx.fillStyle = c.counter;
      ctx.fill();
      ctx.globalAlpha = 1;
      ctx.strokeStyle = c.counter;
      ctx.lineWidth = 1;
      ctx.stroke();
      ctx.fillStyle = c.muted;
      ctx.fillText(`max ${formatValue(hi, lane.unit ?? "")}`, labelW + 4, y + 9);
    }
    ctx.restore();
  }

  /** Screen rectangle of an event ({lane, row, start_ns, dur_ns}); null when its lane is not laid out. */
  function eventRect(ev, scrollTop, plotW, minW = 3) {
    const entry = layout.entryOfLane.get(ev.lane);
    if (!entry) return null;
    const lane = laneById.get(ev.lane);
    const y0 = AXIS_H + entry.y - scrollTop;
    let y;
    let h = ROW_H - 2;
    if (entry.kind === "lane") y = y0 + LANE_PAD + Math.min(ev.row | 0, (lane?.rows ?? 1) - 1) * ROW_H + 1;
    else if (entry.kind === "summary") y = y0 + LANE_PAD + 1;
    else { y = y0 + 2; h = HEADER_H - 4; }
    let x0 = timeToX(ev.start_ns, view, plotW);
    let x1 = timeToX(ev.start_ns + ev.dur_ns, view, plotW);
    if (x1 - x0 < minW) {
      const mid = (x0 + x1) / 2;
      x0 = mid - minW / 2;
      x1 = mid + minW / 2;
    }
    x0 = Math.max(-4, x0);
    x1 = Math.min(plotW + 4, x1);
    return { x: labelW + x0, y, w: x1 - x0, h };
  }

  function drawOverlays(ctx, scrollTop, plotW, c) {
    ctx.save();
    ctx.beginPath();
    ctx.rect(labelW, AXIS_H, plotW, viewportH - AXIS_H);
    ctx.clip();
    const visibleTop = AXIS_H - ROW_H;
    if (marks) {
      const path = new Path2D();
      for (const [laneId, list] of marks.byLane) {
        const entry = layout.entryOfLane.get(laneId);
        if (!entry) continue;
        const y = AXIS_H + entry.y - scrollTop;
        if (y > viewportH || y + entry.h < visibleTop) continue;
        for (const m of list) {
          if (m.start_ns > view.end) break;
          if (m.start_ns + m.dur_ns < view.start) continue;
          const r = eventRect(m, scrollTop, plotW, 4);
          if (r) path.rect(r.x - 1, r.y - 1, r.w + 2, r.h + 2);
        }
      }
      ctx.strokeStyle = c.highlight;
      ctx.lineWidth = 2;
      ctx.stroke(path);
    }
    if (hover && (!selected || hover.id !== selected.id || hover.lane !== selected.lane)) {
      const r = eventRect(hover, scrollTop, plotW);
      if (r) {
        ctx.strokeStyle = c.text;
        ctx.lineWidth = 1;
        ctx.strokeRect(r.x + 0.5, r.y + 0.5, r.w - 1, r.h - 1);
      }
    }
    if (selected) {
      const r = eventRect(selected, scrollTop, plotW);
      if (r) {
        ctx.strokeStyle = c.strong;
        ctx.lineWidth = 2;
        ctx.strokeRect(r.x - 1, r.y - 1, r.w + 2, r.h + 2);
      }
    }
    if (flows.length) {
      ctx.strokeStyle = c.flow;
      ctx.fillStyle = c.flow;
      ctx.lineWidth = 1.5;
      for (const [from, to] of flows) {
        const a = eventRect(from, scrollTop, plotW, 0);
        const b = eventRect(to, scrollTop, plotW, 0);
        if (!a || !b) continue;
        const x0 = a.x;
        const y0 = a.y + a.h / 2;
        const x1 = b.x;
        const y1 = b.y + b.h / 2;
        const bend = Math.max(20, Math.abs(y1 - y0) / 2);
        ctx.beginPath();
        ctx.moveTo(x0, y0);
        ctx.bezierCurveTo(x0, y0 + Math.sign(y1 - y0 || 1) * bend, x1 - 30, y1, x1, y1);
        ctx.stroke();
        ctx.beginPath();
        ctx.moveTo(x1, y1);
        ctx.lineTo(x1 - 7, y1 - 4);
        ctx.lineTo(x1 - 7, y1 + 4);
        ctx.closePath();
        ctx.fill();
      }
    }
    const sel = rangeDraft ?? rangeSel;
    if (sel) {
      const x0 = labelW + Math.max(-2, timeToX(Math.min(sel.start, sel.end), view, plotW));
      const x1 = labelW + Math.min(plotW + 2, timeToX(Math.max(sel.start, sel.end), view, plotW));
      if (x1 >= labelW - 2 && x0 <= labelW + plotW + 2) {
        ctx.globalAlpha = 0.12;
        ctx.fillStyle = c.range;
        ctx.fillRect(x0, AXIS_H, Math.max(1, x1 - x0), viewportH - AXIS_H);
        ctx.globalAlpha = 1;
        ctx.strokeStyle = c.range;
        ctx.lineWidth = 1;
        ctx.beginPath();
        ctx.moveTo(Math.round(x0) + 0.5, AXIS_H);
        ctx.lineTo(Math.round(x0) + 0.5, viewportH);
        ctx.moveTo(Math.round(x1) + 0.5, AXIS_H);
        ctx.lineTo(Math.round(x1) + 0.5, viewportH);
        ctx.stroke();
      }
    }
    ctx.restore();
  }

  function drawLabels(ctx, entries, scrollTop, c, font) {
    ctx.fillStyle = c.labelBg;
    ctx.fillRect(0, AXIS_H, labelW, viewportH - AXIS_H);
    ctx.save();
    ctx.beginPath();
    ctx.rect(0, AXIS_H, cssW, viewportH - AXIS_H);
    ctx.clip();
    ctx.strokeStyle = c.border;
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (const entry of entries) {
      const y = AXIS_H + entry.y - scrollTop;
      if (entry.kind === "header") {
        ctx.fillStyle = c.headerBg;
        ctx.fillRect(0, y, cssW, entry.h);
        ctx.fillStyle = c.text;
        ctx.font = `600 ${font}`;
        const arrow = entry.collapsed ? "▸" : "▾";
        const count = entry.lanes.length;
        ctx.fillText(fitText(ctx, `${arrow} ${entry.group} (${count} lane${count === 1 ? "" : "s"})`, cssW - 12, textWidths), 6, y + entry.h / 2 + 0.5);
        ctx.font = font;
      } else {
        const mid = y + Math.min(entry.h, LANE_PAD * 2 + ROW_H) / 2;
        if (entry.kind === "summary") {
          ctx.fillStyle = c.muted;
          ctx.fillText(fitText(ctx, `${entry.lanes.length} lanes (collapsed)`, labelW - 16, textWidths), 14, mid + 0.5);
        } else {
          const lane = entry.lanes[0];
          const badge = lane.kind === "gpu" ? "GPU" : lane.kind === "counter" ? "CTR" : "CPU";
          ctx.fillStyle = lane.kind === "gpu" ? c.gpu : lane.kind === "counter" ? c.counter : c.cpu;
          ctx.fillRect(6, mid - 6, 28, 12);
          ctx.fillStyle = "#fff";
          ctx.font = `bold 9px ${c.fontFamily}`;
          ctx.fillText(badge, 9, mid + 0.5);
          ctx.font = font;
          ctx.fillStyle = c.text;
          const label = `${lane.label ?? lane.id}${lane.kind === "counter" && lane.unit ? ` (${lane.unit})` : ""}`;
          ctx.fillText(fitText(ctx, String(label), labelW - 46, textWidths), 40, mid + 0.5);
        }
      }
      ctx.moveTo(0, Math.round(y + entry.h) + 0.5);
      ctx.lineTo(cssW, Math.round(y + entry.h) + 0.5);
    }
    ctx.moveTo(labelW + 0.5, AXIS_H);
    ctx.lineTo(labelW + 0.5, viewportH);
    ctx.stroke();
    ctx.restore();
  }

  function drawAxis(ctx, ticks, plotW, c) {
    ctx.fillStyle = c.bg;
    ctx.fillRect(0, 0, cssW, AXIS_H);
    ctx.fillStyle = c.muted;
    const loading = pendingWindow ? " · loading detail…" : "";
    ctx.fillText(fitText(ctx, `${lanes.length} lane${lanes.length === 1 ? "" : "s"} · ${totalEvents.toLocaleString("en-US")} events${loading}`, labelW - 8, textWidths), 6, AXIS_H / 2);
    ctx.strokeStyle = c.border;
    ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.moveTo(0, AXIS_H - 0.5);
    ctx.lineTo(cssW, AXIS_H - 0.5);
    for (const tick of ticks.ticks) {
      const x = Math.round(labelW + tick.x) + 0.5;
      ctx.moveTo(x, AXIS_H - 6);
      ctx.lineTo(x, AXIS_H);
    }
    ctx.stroke();
    ctx.fillStyle = c.text;
    ctx.save();
    ctx.beginPath();
    ctx.rect(labelW, 0, plotW, AXIS_H);
    ctx.clip();
    for (const tick of ticks.ticks) ctx.fillText(tick.label, labelW + tick.x + 3, AXIS_H / 2 - 2);
    const sel = rangeDraft ?? rangeSel;
    if (sel) {
      const a = Math.min(sel.start, sel.end);
      const b = Math.max(sel.start, sel.end);
      const x = labelW + (timeToX(a, view, plotW) + timeToX(b, view, plotW)) / 2;
      const text = formatDuration(b - a);
      const w = ctx.measureText(text).width + 8;
      ctx.fillStyle = c.range;
      ctx.fillRect(x - w / 2, AXIS_H - 12, w, 12);
      ctx.fillStyle = "#fff";
      ctx.fillText(text, x - w / 2 + 4, AXIS_H - 6);
    }
    ctx.restore();
  }

  function draw() {
    if (destroyed) return;
    const width = scroller.clientWidth;
    if (width <= 0) return; // not attached yet; the ResizeObserver calls back
    const t0 = performance.now();
    const widthChanged = width !== cssW;
    cssW = width;
    labelW = Math.round(Math.min(220, Math.max(110, cssW * 0.2)));
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

    const scrollTop = scroller.scrollTop;
    const plotW = plotWidth();
    const ticks = axisTicks(view, plotW, 90);
    const entries = visibleEntries(scrollTop);
    const firstIndex = firstEntryAt(layout.entries, scrollTop);

    // Lane backgrounds (alternating) and grid lines.
    for (let k = 0; k < entries.length; k++) {
      const entry = entries[k];
      if (entry.kind === "header") continue;
      const y = AXIS_H + entry.y - scrollTop;
      ctx.fillStyle = (firstIndex + k) % 2 ? c.bgAlt : c.bg;
      ctx.fillRect(labelW, y, plotW, entry.h);
    }
    ctx.strokeStyle = c.grid;
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (const tick of ticks.ticks) {
      const x = Math.round(labelW + tick.x) + 0.5;
      ctx.moveTo(x, AXIS_H);
      ctx.lineTo(x, viewportH);
    }
    ctx.stroke();

    // Events: the detail window where it covers the view, the overview elsewhere.
    if (detail && detail.end > view.start && detail.start < view.end) {
      if (view.start < detail.start) drawEvents(ctx, overview, view.start, detail.start, entries, scrollTop, plotW, c);
      drawEvents(ctx, detail.index, Math.max(view.start, detail.start), Math.min(view.end, detail.end), entries, scrollTop, plotW, c);
      if (detail.end < view.end) drawEvents(ctx, overview, detail.end, view.end, entries, scrollTop, plotW, c);
    } else {
      drawEvents(ctx, overview, view.start, view.end, entries, scrollTop, plotW, c);
    }
    drawCounters(ctx, entries, scrollTop, plotW, c);
    drawOverlays(ctx, scrollTop, plotW, c);
    drawLabels(ctx, entries, scrollTop, c, font);
    if (overview.n === 0 && counters.size === 0) {
      ctx.fillStyle = c.muted;
      ctx.fillText(loadError ?? "no timeline events", labelW + 12, AXIS_H + ROW_H);
    }
    drawAxis(ctx, ticks, plotW, c);

    el.dataset.drawMs = (performance.now() - t0).toFixed(2);
    if (widthChanged) scheduleWindow();
    if (!painted) {
      painted = true;
      if (hooks.onPaint) hooks.onPaint();
    }
  }

  // ---- hit testing and tooltip
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
    let best = -1;
    let bestKey = Infinity;
    for (const lane of entry.lanes) {
      for (const chunk of index.lanes.get(lane.id) ?? []) {
        for (let r = 0; r < chunk.rows; r++) {
          // Rows past the lane's last (a window with more rows than laid out) draw on the last.
          if (entry.kind === "lane" && Math.min(r, lane.rows - 1) !== row) continue;
          const k = hitRow(index, chunk.lo[r], chunk.hi[r], t, slack);
          if (k < 0) continue;
          const s = index.start[k];
          const e = s + index.dur[k];
          const dist = t < s ? s - t : t > e ? t - e : 0;
          // Nearest first, then the shortest (the innermost of nested events).
          const key = dist * 1e12 + index.dur[k];
          if (key < bestKey) { best = k; bestKey = key; }
        }
      }
    }
    if (best < 0) return null;
    const ev = eventAt(index, tbl, index.perm[best]);
    return { ev, lane: laneById.get(ev.lane) };
  }

  function tooltipLine(text, className) {
    const d = node("div", className, text);
    tooltip.appendChild(d);
  }

  function shapesOf(d) {
    for (const [label, text] of d?.fields ?? []) if (/dims|shape/i.test(String(label))) return String(text);
    return null;
  }

  function showTooltip(hit, clientX, clientY) {
    tooltip.replaceChildren();
    if (hit.counter) {
      const { lane, time, value } = hit.counter;
      tooltipLine(String(lane.label ?? ""), "gp-tooltip-name");
      tooltipLine(`${formatValue(value, lane.unit ?? "")} from ${formatTime(time, (view.end - view.start) / 1000)}`);
      tooltipLine(laneText(lane.id));
    } else {
      const ev = hit.ev;
      tooltipLine(nameText(ev.name), "gp-tooltip-name");
      const kind = kindName(ev.name);
      tooltipLine(`${kind ? `${kind} · ` : ""}${formatDuration(ev.dur_ns)}`);
      tooltipLine(`start ${formatTime(ev.start_ns, (view.end - view.start) / 1000)}`);
      tooltipLine(laneText(ev.lane));
      if (ev.count > 1) tooltipLine(`${ev.count.toLocaleString("en-US")} events merged here (longest shown); zoom in`, "gp-muted");
      const shapes = ev.id >= 0 ? shapesOf(detailsCache.get(ev.id)) : null;
      if (shapes) tooltipLine(`shapes: ${shapes}`);
    }
    tooltip.hidden = false;
    const rect = el.getBoundingClientRect();
    let left = clientX - rect.left + 12;
    const top = clientY - rect.top + 14;
    const tw = tooltip.offsetWidth;
    if (left + tw > rect.width) left = Math.max(0, clientX - rect.left - tw - 12);
    tooltip.style.left = `${left}px`;
    tooltip.style.top = `${top}px`;
  }

  function updateHover(e) {
    const p = localPoint(e);
    mouseX = p.x >= labelW ? p.x - labelW : null;
    lastPointer = { clientX: e.clientX, clientY: e.clientY };
    const hit = hitTest(p.x, p.y);
    const ev = hit?.ev ?? null;
    const changed = (ev?.id ?? null) !== (hover?.id ?? null) || (ev && hover && (ev.start_ns !== hover.start_ns || ev.lane !== hover.lane));
    hover = ev;
    if (hit) showTooltip(hit, e.clientX, e.clientY);
    else tooltip.hidden = true;
    if (!changed) return;
    schedule();
    clearTimeout(dwellTimer);
    if (ev && ev.id >= 0 && source?.details && !detailsCache.has(ev.id)) {
      const id = ev.id;
      dwellTimer = setTimeout(() => {
        fetchDetails(id).then(
          () => {
            if (destroyed || hover?.id !== id || tooltip.hidden || !lastPointer) return;
            showTooltip({ ev: hover, lane: laneById.get(hover.lane) }, lastPointer.clientX, lastPointer.clientY);
          },
          () => {},
        );
      }, HOVER_DWELL_MS);
    }
  }

  function hideHover() {
    clearTimeout(dwellTimer);
    tooltip.hidden = true;
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
      if (rangeSel) clearRange();
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
      if (rangeDraft || rangeSel) clearRange();
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

  function onSearchKey(e) {
    if (e.key === "Enter") {
      e.preventDefault();
      stepSearch(e.shiftKey ? -1 : 1);
    } else if (e.key === "Escape") {
      e.preventDefault();
      searchInput.value = "";
      runSearch();
    }
    e.stopPropagation();
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
  scroller.addEventListener("scroll", () => { tooltip.hidden = true; schedule(); });
  reset.addEventListener("click", () => setView({ start: 0, end: span }));
  searchInput.addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(runSearch, SEARCH_DEBOUNCE_MS);
  });
  searchInput.addEventListener("keydown", onSearchKey);
  regexBox.addEventListener("change", runSearch);
  prevButton.addEventListener("click", () => stepSearch(-1));
  nextButton.addEventListener("click", () => stepSearch(1));
  chipClose.addEventListener("click", clearHighlight);

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
      clearTimeout(searchTimer);
      clearTimeout(dwellTimer);
      resizeObserver?.disconnect();
      mediaQuery?.removeEventListener?.("change", schedule);
      if (ownSource) source.destroy?.();
      details.destroy();
    },
  };
}
