// @ts-check
// Selecting on the timeline: an event (the details panel, its details fetched from the source,
// flow arrows to and from it), a time range (the range panel) and highlights (a hint's evidence,
// a roofline point's instances), and clearing them as a user expects (a click on nothing,
// Escape: the range first, then the event, then the highlight). What is selected is the state
// object's; this module keeps the panels, the toolbar's chip and the root's data-* in step.

import { formatCount } from "../../model/format.js";
import { collectiveLinks, collectiveRows } from "../../model/ranks.js";
import { flowsOf, launchFlows } from "../../model/timeline_state.js";
import { viewForEvent } from "../../model/view.js";

/** @typedef {import("../../model/source.js").EventDetails} EventDetails */
/** @typedef {import("../../model/timeline_state.js").Selected} Selected */
/** @typedef {import("../../model/timeline_data.js").EventKey} EventKey */
/** An event to select: its place and timing, and its name (an index) or count when known. @typedef {Parameters<import("./paint.js").TimelineState["select"]>[0] & EventKey} SelectableEvent */

/**
 * @param {Object} opts
 * @param {HTMLElement} opts.el the timeline's root (data-selected-id, data-highlight-*)
 * @param {import("./paint.js").TimelineState} opts.state the timeline's state
 * @param {import("../../model/timeline_data.js").PreparedTimeline} opts.data prepareTimeline()'s result (names, kinds)
 * @param {import("./timeline.js").TimelineSource | null} opts.source answers details (js/model/source.js), or null
 * @param {import("./input.js").DetailsCache} opts.detailsCache
 * @param {ReturnType<typeof import("../details.js").createDetails>} opts.details the details panel
 * @param {Pick<ReturnType<typeof import("./toolbar.js").createToolbar>, "showHighlight" | "hideHighlight">} opts.toolbar
 * @param {Pick<ReturnType<typeof import("../range_panel.js").createRangePanel>, "set" | "clear">} opts.rangePanel
 * @param {Pick<ReturnType<typeof import("./layout.js").createLayout>, "ensureLaneVisible">} opts.layout
 * @param {() => import("../../model/timeline_data.js").DetailWindow | null} opts.getDetail the detail window held, or null
 * @param {(view: import("../../model/view.js").View) => void} opts.setView
 * @param {() => void} opts.schedule repaint
 * @param {() => boolean} opts.isDestroyed
 */
export function createSelection(opts) {
  const { el, state, data, source, detailsCache, details, toolbar, rangePanel, layout } = opts;
  const { getDetail, setView, schedule, isDestroyed } = opts;

  /**
   * Select an event ({id, lane, row, start_ns, dur_ns, name?, count?}); zoom: go and show it.
   * @param {SelectableEvent} ev
   * @param {{zoom?: boolean}} [opts]
   */
  function selectEvent(ev, { zoom = false } = {}) {
    const selected = state.select(ev);
    const name = data.evName(ev, getDetail());
    el.dataset.selectedId = String(selected.id);
    if (zoom) {
      layout.ensureLaneVisible(selected.lane, selected.row);
      setView(viewForEvent(selected.start_ns, selected.dur_ns, state.span, state.minSpan, 1));
    }
    schedule();
    const id = selected.id;
    if (!(id >= 0)) {
      const count = selected.count > 1 ? `${formatCount(selected.count)} events are` : "several events are";
      details.showMessage(name, `${count} merged in this box at this zoom; zoom in to pick one.`);
      return;
    }
    if (!source?.details) {
      details.show({ ...selected, name, kind: data.kindName(data.nameIndexOf(ev, getDetail())), fields: [] });
      return;
    }
    details.showLoading(selected, name);
    detailsCache.fetch(id).then(
      (d) => {
        if (isDestroyed() || !state.isSelected(id)) return;
        details.show(d);
        showFlows(d);
        showCollective(id);
      },
      (err) => {
        if (isDestroyed() || !state.isSelected(id)) return;
        details.showMessage(name, `details unavailable: ${err.message}`);
      },
    );
  }

  /** @param {EventDetails} d */
  function showFlows(d) {
    state.setFlows(flowsOf(d));
    if (d.launch) {
      // The launch may have started other GPU work too (e.g. a graph launch): show all of it.
      detailsCache.fetch(d.launch.id).then(
        (launch) => {
          if (isDestroyed() || !state.isSelected(d.id)) return;
          state.addFlows(launchFlows(d, launch));
          schedule();
        },
        () => {},
      );
    }
    schedule();
  }

  /**
   * The same collective on the other ranks: listed in the details, linked on the timeline.
   * @param {number} id
   */
  function showCollective(id) {
    el.dataset.collectiveRanks = "0";
    if (!source?.collective) return;
    source.collective(id).then(
      (info) => {
        if (isDestroyed() || !state.isSelected(id)) return;
        const rows = collectiveRows(info);
        if (!rows || !info) return;
        details.showCollective(rows);
        state.addFlows(collectiveLinks(info));
        el.dataset.flows = String(state.flows.length);
        el.dataset.collectiveRanks = String(rows.rows.length);
        el.dataset.collectiveLast = info.last_rank === null ? "" : String(info.last_rank);
        schedule();
      },
      () => {},
    );
  }

  function clearSelection() {
    state.clearSelection();
    el.dataset.selectedId = "";
    // The collective shown was the selection's: a test (or a user's script) reading these
    // after the next click must not see the last selection's ranks.
    el.dataset.collectiveRanks = "0";
    el.dataset.collectiveLast = "";
    details.hide();
    schedule();
  }

  /**
   * Outline events and shade time windows (a hint's evidence, a roofline point's instances).
   * total: how many events there are when `list` holds only the longest of them.
   * @param {Parameters<import("./paint.js").TimelineState["highlight"]>[0]} list
   * @param {string} label
   * @param {{windows?: [number, number][], total?: number | null}} [opts]
   */
  function highlight(list, label, { windows = [], total = null } = {}) {
    const { marks, longest } = state.highlight(list, label, windows);
    // Deep CPU stacks can push GPU lanes below the fold: bring the marked events into sight.
    if (longest) layout.ensureLaneVisible(longest.lane, longest.row);
    toolbar.showHighlight(marks.label, marks.count, { total, windows: marks.windows.length });
    el.dataset.highlightCount = String(marks.count);
    el.dataset.highlightWindows = String(marks.windows.length);
    schedule();
  }

  function clearHighlight() {
    state.clearHighlight();
    toolbar.hideHighlight();
    el.dataset.highlightCount = "0";
    el.dataset.highlightWindows = "0";
    schedule();
  }

  /**
   * Select the time range [a, b] (either order) and ask the range panel to describe it.
   * @param {number} a
   * @param {number} b
   */
  function setRange(a, b) {
    rangePanel.set(state.setRange(a, b));
    schedule();
  }

  function clearRange() {
    state.clearRange();
    rangePanel.clear();
    schedule();
  }

  return {
    selectEvent,
    clearSelection,
    highlight,
    clearHighlight,
    setRange,
    clearRange,
    /** A click on nothing: drop the selected event and range. */
    clickEmpty() {
      clearSelection();
      if (state.range) clearRange();
    },
    /** Escape: clear one thing (see escapeTarget); says whether there was one. */
    escape() {
      const target = state.escapeTarget();
      if (target === "range") clearRange();
      else if (target === "selection") clearSelection();
      else if (target === "highlight") clearHighlight();
      return target !== null;
    },
  };
}
