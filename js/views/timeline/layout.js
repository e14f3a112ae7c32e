// @ts-check
// The timeline's vertical layout: lane groups stacked (collapsed ones as one summary row) in a
// scroller as tall as they need up to MAX_VIEWPORT_H, a lane scrolled into sight, and what lies
// under a canvas point. The arithmetic is js/model/lanes.js and js/model/hit.js; this module
// keeps the scroller's sizes and scroll position in step with it.

import { hitTest as hitAt, entryAt as entryAtY } from "../../model/hit.js";
import { groupLayout, scrollTopToShow } from "../../model/lanes.js";
import { AXIS_H, DIMS, ROW_H } from "./canvas.js";

const MAX_VIEWPORT_H = 560;

/**
 * @param {Object} opts
 * @param {import("../../model/timeline_data.js").PreparedTimeline} opts.data prepareTimeline()'s result
 * @param {import("./paint.js").TimelineState} opts.state the timeline's state (view, collapsed groups)
 * @param {{labelW: number, plotWidth: () => number}} opts.dims the canvas's columns
 * @param {HTMLElement} opts.scroller the plot's vertical scroller
 * @param {HTMLCanvasElement} opts.canvas
 * @param {HTMLElement} opts.spacer what makes the scroller as tall as the lanes
 * @param {() => import("../../model/timeline_data.js").DetailWindow | null} opts.getDetail the detail window held, or null
 * @param {() => void} opts.schedule repaint
 */
export function createLayout({ data, state, dims, scroller, canvas, spacer, getDetail, schedule }) {
  const build = () => groupLayout(data.lanes, state.collapsed, DIMS, state.collapsedRanks);
  let layout = build();
  let viewportH = 0;

  function apply() {
    const contentH = AXIS_H + Math.max(layout.total, ROW_H * 2);
    viewportH = Math.min(contentH, MAX_VIEWPORT_H);
    scroller.style.height = `${viewportH}px`;
    canvas.style.height = `${viewportH}px`;
    spacer.style.height = `${contentH - viewportH}px`;
  }
  apply();

  function relayout() {
    layout = build();
    apply();
    schedule();
  }

  /** @param {string} group */
  function toggleGroup(group) {
    state.toggleGroup(group);
    relayout();
  }

  /**
   * Click on a rank's header: collapse or expand it.
   * @param {number} rank
   */
  function toggleRank(rank) {
    state.toggleRank(rank);
    relayout();
  }

  /**
   * Focus on a rank (the others collapsed, its header scrolled to the top); focusing on the
   * rank already focused on expands every rank again. Returns the rank focused on, or null.
   * @param {number} rank
   */
  function focusRank(rank) {
    const focused = state.focusRank(rank, data.ranks);
    relayout();
    const header = layout.entries.find((e) => e.kind === "rank" && e.rank === rank);
    if (header) scroller.scrollTop = focused === null ? Math.min(scroller.scrollTop, header.y) : header.y;
    return focused;
  }

  /**
   * Scroll so the lane (or, given a row, that row of it) is in sight, expanding its group and rank.
   * @param {number} laneId
   * @param {number | null} [row]
   */
  function ensureLaneVisible(laneId, row = null) {
    let entry = layout.entryOfLane.get(laneId);
    if (!entry) return;
    if (entry.kind !== "lane") {
      const lane = data.laneById.get(laneId);
      const rankOpened = lane?.rank !== undefined && state.expandRank(lane.rank);
      const groupOpened = lane?.group !== undefined && state.expandGroup(lane.group);
      if (rankOpened || groupOpened) {
        relayout();
        entry = layout.entryOfLane.get(laneId);
        if (!entry) return;
      }
    }
    const next = scrollTopToShow(entry, row, scroller.scrollTop, viewportH - AXIS_H, DIMS);
    if (next !== scroller.scrollTop) scroller.scrollTop = next;
  }

  /**
   * The layout entry at canvas height py, or null.
   * @param {number} py
   */
  function entryAt(py) {
    return entryAtY(layout.entries, py, scroller.scrollTop, AXIS_H);
  }

  /**
   * What is under a canvas point: {ev, lane} for events, {counter} for counter lanes, or null.
   * @param {number} px
   * @param {number} py
   */
  function hitTest(px, py) {
    const g = {
      entries: layout.entries,
      scrollTop: scroller.scrollTop,
      labelW: dims.labelW,
      plotW: dims.plotWidth(),
      view: state.view,
      detail: getDetail(),
      dims: DIMS,
    };
    return hitAt(px, py, g, data);
  }

  return {
    /** The current layout: {entries, entryOfLane, total} (see groupLayout). */
    get current() {
      return layout;
    },
    /** The plot's visible height (axis strip included), px. */
    get viewportH() {
      return viewportH;
    },
    toggleGroup,
    toggleRank,
    focusRank,
    ensureLaneVisible,
    entryAt,
    hitTest,
  };
}
