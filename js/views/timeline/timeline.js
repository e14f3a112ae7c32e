// @ts-check
// The timeline: a canvas with a lane label column, a time axis, lane groups in the order Python
// sends them (per rank: GPU device streams, CPU threads, counters) that collapse, sub-rows for
// nested ops and overlapping kernels, step charts for counters; Perfetto-style navigation
// (W/S/A/D, ctrl+wheel, drag to select a range), hover tooltips, click for details and flow
// arrows, name search, highlights.
//
// This module builds the DOM, wires the parts together and keeps the public API. The parts, by
// concern: the state (view, selection, range, highlight, collapsed groups) is one object,
// js/model/timeline_state.js, over what js/model/timeline_data.js derives from the data;
// selection.js keeps the panels in step with it; layout.js stacks the lanes and hit-tests them;
// render.js, paint.js, counters.js and overlays.js draw; input.js is mouse and keys;
// toolbar.js, tooltip.js, ../search_bar.js, ../range_panel.js and ../details.js the widgets
// around the plot.
//
// Large traces: `data.table` is then the merged overview; after the view settles, the visible
// window is asked from `hooks.source` (windows.js) and drawn over the overview where it
// covers the view.
//
// Trace strings reach the DOM only through textContent; the canvas draws them with fillText.

import "./timeline.css";
import { createDetailsCache } from "../../model/details_cache.js";
import { formatCount } from "../../model/format.js";
import { initiallyCollapsed } from "../../model/ranks.js";
import { prepareTimeline } from "../../model/timeline_data.js";
import { createTimelineState, selectionToKeep } from "../../model/timeline_state.js";
import { createDetails } from "../details.js";
import { node } from "../dom.js";
import { createRangePanel } from "../range_panel.js";
import { createSearchBar } from "../search_bar.js";
import { createCanvasDims } from "./canvas.js";
import { attachTimelineInput } from "./input.js";
import { createLayout } from "./layout.js";
import { createTimelinePainter } from "./paint.js";
import { createRenderer } from "./render.js";
import { createSelection } from "./selection.js";
import { createToolbar } from "./toolbar.js";
import { createTooltip } from "./tooltip.js";
import { createWindowLoader } from "./windows.js";

const DETAILS_CACHE = 500;

/** @typedef {ReturnType<typeof import("../../model/source.js").createRemoteSource>} RemoteSource */
/**
 * What the timeline asks of the Python kernel (js/model/source.js); each part may be missing.
 * @typedef {Partial<Pick<RemoteSource, "window" | "details" | "range" | "search" | "collective">>} TimelineSource
 */
/** @typedef {ReturnType<typeof createTimeline>} Timeline */

/**
 * @param {import("../../model/timeline_data.js").TimelineInput} data
 *   table: the decoded segment table (complete, or the merged overview); counters: decoded
 * @param {{onPaint?: () => void, onFocusRank?: (rank: number | null) => void,
 *   source?: TimelineSource}} hooks
 */
export function createTimeline(data, hooks = {}) {
  const d = prepareTimeline(data);
  const { span, lanes } = d;
  const state = createTimelineState({ span, minSpan: d.minSpan });
  state.collapseRanks(initiallyCollapsed(d.ranks));
  /** @type {number | null} the rank marked as the straggler (setStraggler) */
  let straggler = null;
  // Details, ranges and searches are answered by the Python kernel (js/model/source.js).
  const source = hooks.source ?? null;
  let destroyed = false;
  const isDestroyed = () => destroyed;
  // Parts made further down call these only once everything is made.
  const schedule = () => renderer.schedule();
  const getDetail = () => windows.detail;

  // ---- DOM
  const el = node("div", "gp-timeline");
  // JupyterLab: keys pressed in here are ours, not the notebook's command-mode shortcuts.
  el.setAttribute("data-lm-suppress-shortcuts", "true");
  el.dataset.events = String(d.totalEvents);
  el.dataset.lanes = String(lanes.length);
  el.dataset.complete = String(d.complete);
  el.dataset.selectedId = "";
  el.dataset.searchCount = "0";
  el.dataset.highlightCount = "0";
  el.dataset.windowRequests = "0";
  el.dataset.ranks = String(d.ranks.length);
  el.dataset.focusedRank = "";
  el.dataset.collectiveRanks = "0";

  const searchBar = createSearchBar({
    names: d.names,
    source,
    root: el,
    onChange: schedule,
    onMatch: (ev) => selection.selectEvent(ev, { zoom: true }),
    isDestroyed,
  });
  const toolbar = createToolbar({
    searchEl: searchBar.el,
    onReset: () => setView({ start: 0, end: span }),
    onClearHighlight: () => selection.clearHighlight(),
  });

  const body = node("div", "gp-tl-body");
  const scroller = node("div", "gp-scroller");
  scroller.tabIndex = 0;
  scroller.setAttribute("aria-label", "Timeline plot: W/S zoom, A/D pan, 0 resets");
  const canvas = node("canvas", "gp-canvas");
  canvas.setAttribute("role", "img");
  canvas.setAttribute("aria-label", `Timeline: ${formatCount(d.totalEvents)} events in ${lanes.length} lanes`);
  const spacer = node("div", "gp-spacer");
  scroller.append(canvas, spacer);
  const rangePanel = createRangePanel({
    source,
    onZoom: (range) => setView(range),
    onClose: () => selection.clearRange(),
    isDestroyed,
  });
  const fetchDetails = source?.details;
  /** @type {import("./input.js").DetailsCache} */
  const detailsCache = createDetailsCache(fetchDetails ? (id) => fetchDetails(id) : null, DETAILS_CACHE);
  const tooltip = createTooltip({
    laneText: d.laneText,
    nameText: d.nameText,
    kindName: d.kindName,
    detailsOf: (id) => detailsCache.get(id),
  });
  body.append(scroller, rangePanel.el);
  const details = createDetails({
    laneLabel: d.laneText,
    onJump: (ev) => selection.selectEvent(ev, { zoom: true }),
    onClose: () => selection.clearSelection(),
  });
  el.append(toolbar.el, body, details.el, tooltip.el);

  // ---- layout, view, detail windows, selection
  const dims = createCanvasDims();
  const layout = createLayout({ data: d, state, dims, scroller, canvas, spacer, getDetail, schedule });
  const showCollapsedRanks = () => {
    el.dataset.collapsedRanks = String(state.collapsedRanks.size);
    el.dataset.focusedRank = state.focusedRank === null ? "" : String(state.focusedRank);
  };
  showCollapsedRanks();

  /**
   * Focus on a rank (or, when it is the one focused on, show every rank again).
   * @param {number} rank
   */
  function focusRank(rank) {
    const focused = layout.focusRank(rank);
    showCollapsedRanks();
    hooks.onFocusRank?.(focused);
    return focused;
  }

  /** @param {import("../../model/view.js").View} next */
  function setView(next) {
    const view = state.setView(next);
    el.dataset.viewStartNs = String(view.start);
    el.dataset.viewEndNs = String(view.end);
    toolbar.showView(view, span);
    windows.schedule();
    schedule();
  }

  if (d.loadError) toolbar.setStatus(d.loadError, true);
  /**
   * A selection of earlier data (a refill, or the live data before the whole profile) that this
   * data's merged overview cannot hold: looked for in the first detail window of single events
   * that covers part of it, and dropped if that window does not hold it.
   * @type {NonNullable<ReturnType<typeof selectionToKeep>> | null}
   */
  let keptSelection = null;
  function findKeptSelection() {
    const detail = windows.detail;
    const sel = keptSelection;
    if (!sel || !d.canFind(sel, detail)) return; // a later window may hold it
    keptSelection = null;
    const ev = d.findAgain(sel, detail);
    if (ev && state.selected === null) selection.selectEvent(ev);
  }

  const windows = createWindowLoader({
    enabled: !d.complete,
    source,
    span,
    // The overview's resolution: fewer bins when a trace has many lane rows (Python's budget).
    overviewBins: Number(d.table.meta?.bins) || undefined,
    getView: () => state.view,
    plotWidth: () => (dims.cssW > 0 ? dims.plotWidth() : 0),
    onChange: () => {
      findKeptSelection();
      schedule();
    },
    onRequest: (count) => {
      el.dataset.windowRequests = String(count);
    },
    setStatus: toolbar.setStatus,
    statusIsBad: toolbar.statusIsBad,
    isDestroyed,
  });

  const selection = createSelection({
    el, state, data: d, source, detailsCache, details, toolbar, rangePanel, layout, getDetail, setView, schedule, isDestroyed,
  });

  // ---- mouse and keys, drawing
  const input = attachTimelineInput({
    el,
    canvas,
    scroller,
    tooltip,
    detailsCache,
    canFetchDetails: Boolean(source?.details),
    laneById: d.laneById,
    state,
    setView,
    dims,
    layout,
    onSelect: (ev) => selection.selectEvent(ev),
    onClickEmpty: selection.clickEmpty,
    onToggleRank: (rank) => {
      layout.toggleRank(rank);
      showCollapsedRanks();
      hooks.onFocusRank?.(null);
    },
    onFocusRank: focusRank,
    onRange: selection.setRange,
    onEscape: selection.escape,
    schedule,
    isDestroyed,
  });

  const renderer = createRenderer({
    el,
    scroller,
    canvas,
    dims,
    layout,
    painter: createTimelinePainter(d),
    fillFrame(f) {
      f.view = state.view;
      f.detail = windows.detail;
      f.pendingWindow = windows.pending;
      f.mask = searchBar.mask();
      f.marks = state.marks;
      f.hover = input.hover;
      f.selected = state.selected;
      f.flows = state.flows;
      f.range = state.shownRange();
      f.straggler = straggler;
      f.focusedRank = state.focusedRank;
    },
    onWidthChange: () => windows.schedule(),
    onFirstPaint: () => hooks.onPaint?.(),
    isDestroyed,
  });

  setView(state.view);

  return {
    el,
    redraw: schedule,
    getView: () => ({ ...state.view }),
    /** Whether the view shows less than the whole trace (the user zoomed or panned). */
    zoomed: () => state.zoomed(),
    /** The selected event as new data of the same run can find it again (ids change). */
    selection: () => selectionToKeep(state.selected, d.laneById),
    /**
     * Select again the event a selection() of earlier data named, if this data holds it.
     * @param {NonNullable<ReturnType<typeof selectionToKeep>>} sel
     */
    restoreSelection(sel) {
      const ev = d.findAgain(sel);
      if (ev) selection.selectEvent(ev);
      else if (!d.complete) keptSelection = sel; // the next detail window may hold it
    },
    setView,
    /**
     * @param {number} start ns
     * @param {number} end ns
     */
    zoomTo(start, end) {
      setView({ start, end });
    },
    /** The job's ranks in display order (empty or one for a one-rank trace). */
    ranks: d.ranks,
    focusRank,
    /** The rank focused on (the others collapsed), or null. */
    focusedRank: () => state.focusedRank,
    /**
     * Mark a rank's header as the straggler's (null: none).
     * @param {unknown} rank
     */
    setStraggler(rank) {
      straggler = typeof rank === "number" ? rank : null;
      el.dataset.straggler = straggler === null ? "" : String(straggler);
      schedule();
    },
    highlight: selection.highlight,
    clearHighlight: selection.clearHighlight,
    /** A line in the toolbar (bad: shown as an error). */
    setStatus: toolbar.setStatus,
    destroy() {
      destroyed = true;
      renderer.destroy();
      windows.destroy();
      searchBar.destroy();
      input.destroy();
      details.destroy();
    },
  };
}
