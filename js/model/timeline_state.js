// @ts-check
// The timeline's state in one object: the visible window, the selected event and its flow arrows,
// the selected time range (and the one being dragged out), the highlight marks, and which lane
// groups are collapsed. Its methods are the only way to change it; the views in
// js/views/timeline/ show it and keep the DOM in step. No DOM; unit-tested.

import { groupMarks } from "./lanes.js";
import { clampView } from "./view.js";

/** @typedef {import("./view.js").View} View */
/** @typedef {import("./lanes.js").Lane} Lane */
/** @typedef {import("./lanes.js").Mark} Mark */
/** @typedef {import("./source.js").EventRef} EventRef */
/** @typedef {import("./source.js").EventDetails} EventDetails */
/**
 * The selected event: its id (-1 for a merged box), lane, sub-row, start and duration (ns), and
 * how many events it stands for.
 * @typedef {{id: number, lane: number, row: number, start_ns: number, dur_ns: number, count: number}} Selected
 */
/** A flow arrow, from one event to another. @typedef {[EventRef, EventRef]} Flow */
/**
 * What is highlighted: marked events per lane and time windows, with the label the toolbar shows.
 * @typedef {{label: string, count: number, byLane: Map<number, Mark[]>, windows: [number, number][]}} Marks
 */

/**
 * The selected event as the timeline keeps it: numbers, and a duration of 0 at least.
 * @param {{id: unknown, lane: unknown, row?: unknown, start_ns: unknown, dur_ns?: unknown, count?: number}} ev
 * @returns {Selected}
 */
export function selectionRecord(ev) {
  return {
    id: Number(ev.id),
    lane: Number(ev.lane),
    row: Number(ev.row) || 0,
    start_ns: Number(ev.start_ns),
    dur_ns: Math.max(0, Number(ev.dur_ns) || 0),
    count: ev.count ?? 1,
  };
}

/**
 * Flow arrows [from, to] of an event's details: to the kernels it launched, from its launch.
 * @param {EventDetails} d
 * @returns {Flow[]}
 */
export function flowsOf(d) {
  /** @type {Flow[]} */
  const out = [];
  for (const k of d.kernels ?? []) out.push([d, k]);
  if (d.launch) out.push([d.launch, d]);
  return out;
}

/**
 * Flow arrows from an event's launch to the other GPU work that launch started (a graph launch).
 * @param {EventDetails} d
 * @param {EventDetails} launch the details of d.launch
 * @returns {Flow[]}
 */
export function launchFlows(d, launch) {
  /** @type {Flow[]} */
  const out = [];
  if (!d.launch) return out;
  for (const k of launch.kernels ?? []) if (k.id !== d.id) out.push([d.launch, k]);
  return out;
}

/**
 * The selected event as new data of the same run can find it again (ids change): its lane's
 * label and group, start and duration; null when nothing, or a merged box, is selected.
 * @param {Selected | null} selected
 * @param {Map<number, Lane>} laneById
 * @returns {{label: string | undefined, group: string | undefined, start_ns: number, dur_ns: number} | null}
 */
export function selectionToKeep(selected, laneById) {
  const lane = selected ? laneById.get(selected.lane) : null;
  return selected && lane && selected.id >= 0
    ? { label: lane.label, group: lane.group, start_ns: selected.start_ns, dur_ns: selected.dur_ns }
    : null;
}

/**
 * @param {{span: number, minSpan?: number}} opts span: the trace's length in ns; minSpan: the
 *   narrowest view
 */
export function createTimelineState({ span, minSpan = 1 }) {
  /** @type {View} */
  let view = { start: 0, end: span };
  /** @type {Selected | null} */
  let selected = null;
  /** @type {Flow[]} */
  let flows = [];
  /** @type {Marks | null} */
  let marks = null;
  /** @type {View | null} */
  let range = null;
  /** @type {View | null} */
  let draft = null;
  /** @type {Set<string>} */
  const collapsed = new Set();
  /** @type {Set<number>} */
  const collapsedRanks = new Set();
  /** @type {number | null} */
  let focused = null;

  return {
    span,
    minSpan,

    /** The visible window {start, end} in ns. */
    get view() {
      return view;
    },
    /**
     * Show `next` (clamped to the trace, no narrower than minSpan); returns what is shown.
     * @param {{start: unknown, end: unknown} | null | undefined} next
     */
    setView(next) {
      view = clampView({ start: Number(next?.start), end: Number(next?.end) }, span, minSpan);
      return view;
    },
    /** Whether the view shows less than the whole trace. */
    zoomed() {
      return view.start > 0 || view.end < span;
    },

    /** The selected event {id, lane, row, start_ns, dur_ns, count}, or null. */
    get selected() {
      return selected;
    },
    /**
     * Select an event (its flows are then unknown); returns the selection.
     * @param {Parameters<typeof selectionRecord>[0]} ev
     */
    select(ev) {
      selected = selectionRecord(ev);
      flows = [];
      return selected;
    },
    clearSelection() {
      selected = null;
      flows = [];
    },
    /**
     * Whether the event with this id is (still) the selected one.
     * @param {number} id
     */
    isSelected(id) {
      return selected?.id === id;
    },

    /** Flow arrows [[from, to]] of the selected event. */
    get flows() {
      return flows;
    },
    /** @param {Flow[]} list */
    setFlows(list) {
      flows = [...list];
    },
    /** @param {Flow[]} list */
    addFlows(list) {
      flows.push(...list);
    },

    /** The highlight: {label, count, byLane: Map(lane -> marks), windows: [[start, end]]}, or null. */
    get marks() {
      return marks;
    },
    /**
     * Highlight events and time windows; returns the marks and the longest event marked.
     * @param {Parameters<typeof groupMarks>[0]} list
     * @param {unknown} label
     * @param {unknown[] | null} [windows] [start, end] ns each; others are dropped
     * @returns {{marks: Marks, longest: Mark | null}}
     */
    highlight(list, label, windows = []) {
      const { count, byLane, longest } = groupMarks(list);
      const bands = /** @type {[number, number][]} */ ((windows ?? []).filter((w) => Array.isArray(w) && w[1] >= w[0]));
      marks = { label: String(label ?? ""), count, byLane, windows: bands };
      return { marks, longest };
    },
    clearHighlight() {
      marks = null;
    },

    /** The selected time range {start, end} (within the trace), or null. */
    get range() {
      return range;
    },
    /**
     * Select [a, b] in either order, clamped to the trace; returns the range.
     * @param {number} a
     * @param {number} b
     */
    setRange(a, b) {
      range = { start: Math.max(0, Math.min(a, b)), end: Math.min(span, Math.max(a, b)) };
      return range;
    },
    /** Clear the range and the one being dragged out. */
    clearRange() {
      range = null;
      draft = null;
    },
    /** The range being dragged out {start, end} (as dragged: either order), or null. */
    get draft() {
      return draft;
    },
    /**
     * @param {number} start where the drag began
     * @param {number} end where it is now
     */
    setDraft(start, end) {
      draft = { start, end };
    },
    clearDraft() {
      draft = null;
    },
    /** The range to draw: the one being dragged out, else the selected one. */
    shownRange() {
      return draft ?? range;
    },

    /**
     * Collapsed lane groups (change them with toggleGroup and expandGroup).
     * @returns {ReadonlySet<string>}
     */
    get collapsed() {
      return collapsed;
    },
    /** @param {string} group */
    toggleGroup(group) {
      if (collapsed.has(group)) collapsed.delete(group);
      else collapsed.add(group);
    },
    /**
     * Expand a group; says whether it was collapsed.
     * @param {string} group
     */
    expandGroup(group) {
      return collapsed.delete(group);
    },

    /**
     * Collapsed ranks of a multi-rank job (change them with toggleRank, expandRank, focusRank).
     * @returns {ReadonlySet<number>}
     */
    get collapsedRanks() {
      return collapsedRanks;
    },
    /** The rank focused on (the others collapsed), or null. */
    get focusedRank() {
      return focused;
    },
    /**
     * Collapse these ranks (a job of many ranks starts so: one row per rank).
     * @param {Iterable<number>} ranks
     */
    collapseRanks(ranks) {
      for (const r of ranks) collapsedRanks.add(r);
      focused = null;
    },
    /** @param {number} rank */
    toggleRank(rank) {
      if (collapsedRanks.has(rank)) collapsedRanks.delete(rank);
      else collapsedRanks.add(rank);
      focused = null;
    },
    /**
     * Expand a rank; says whether it was collapsed.
     * @param {number} rank
     */
    expandRank(rank) {
      return collapsedRanks.delete(rank);
    },
    /**
     * Focus on one rank: it expanded, every other of `ranks` collapsed. Focusing on the rank
     * already focused on expands them all again. Returns the rank focused on, or null.
     * @param {number} rank
     * @param {Iterable<number>} ranks every rank of the job
     */
    focusRank(rank, ranks) {
      if (focused === rank) {
        collapsedRanks.clear();
        focused = null;
        return null;
      }
      for (const r of ranks) if (r !== rank) collapsedRanks.add(r);
      collapsedRanks.delete(rank);
      focused = rank;
      return rank;
    },

    /**
     * What Escape clears first: "range", then "selection", then "highlight"; null if none.
     * @returns {"range" | "selection" | "highlight" | null}
     */
    escapeTarget() {
      if (draft || range) return "range";
      if (selected) return "selection";
      if (marks) return "highlight";
      return null;
    },
  };
}
