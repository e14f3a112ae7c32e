// @ts-check
// What the timeline derives once from the data it is given: the overview's index (or why it
// cannot be read), lanes as tall as their sub-rows, counter lanes' sample ranges, the span, and
// the names, kinds, colours and lane labels of events. No DOM; unit-tested.

import { nameColors } from "./colors.js";
import { buildCounterIndex, fitLaneRows } from "./lanes.js";
import { laneRanks } from "./ranks.js";
import { buildSegmentIndex, eventAt, rowAt, rowOfId, traceSpan } from "./segments.js";

/** @typedef {import("./decode.js").Table} Table */
/** @typedef {import("./lanes.js").Lane} Lane */
/** @typedef {import("./segments.js").SegmentIndex} SegmentIndex */
/**
 * What createTimeline is given (widget.js fills it from the widget's traits).
 * @typedef {Object} TimelineInput
 * @property {Lane[]} [lanes]
 * @property {ArrayLike<unknown>} [names] event names, by name index
 * @property {ArrayLike<number>} [nameKinds] kind index per name index
 * @property {string[]} [kinds] kind names
 * @property {unknown} [span] the trace's length in ns
 * @property {Table | null} [table] the events: complete, or the merged overview
 * @property {Table | null} [counters] counter samples
 * @property {boolean | null} [complete] whether `table` holds every event
 * @property {unknown} [totalEvents]
 */
/**
 * A detail window held (windows.js): its index and table, the times it covers, and whether its
 * rows are merged boxes.
 * @typedef {{index: SegmentIndex, table: Table, start: number, end: number, merged?: boolean, width?: number}} DetailWindow
 */
/** @typedef {ReturnType<typeof prepareTimeline>} PreparedTimeline */
/**
 * How an event is given to look its name up: by name index, as text, or by id alone.
 * @typedef {{id: number, name?: number | string}} EventKey
 */

/** The narrowest view in ns (shorter traces: their span). */
export const MIN_SPAN_NS = 20;

/**
 * @param {TimelineInput} data
 */
export function prepareTimeline(data) {
  const names = data.names ?? [];
  const nameKinds = data.nameKinds ?? [];
  const kinds = data.kinds ?? [];
  /** @type {Table} */
  const table = data.table ?? { n: 0, columns: {}, meta: {} };
  /** @type {string | null} */
  let loadError = null;
  /** @type {SegmentIndex} */
  let overview;
  try {
    overview = buildSegmentIndex(table);
  } catch (err) {
    loadError = `cannot read the timeline: ${/** @type {Error} */ (err).message}`;
    overview = buildSegmentIndex(null);
  }
  const counters = buildCounterIndex(data.counters);
  const lanes = fitLaneRows(Array.isArray(data.lanes) ? data.lanes : [], overview);
  const laneById = new Map(lanes.map((l) => [l.id, l]));
  // A job of several ranks: its ranks in display order (each a lane group of its own).
  const ranks = laneRanks(lanes);
  const span = traceSpan(data.span, overview);

  /** @param {number} nameIdx */
  const kindName = (nameIdx) => kinds[nameKinds[nameIdx]] ?? "";
  /** @param {number} nameIdx */
  const nameText = (nameIdx) => (nameIdx >= 0 && nameIdx < names.length ? String(names[nameIdx]) : "");

  /**
   * A lane in one line, for tooltips and details: its title as Python words it
   * (gpuprofile/report/lanes.py lane_title).
   * @param {number} laneId
   */
  function laneText(laneId) {
    const lane = laneById.get(laneId);
    if (!lane) return `lane ${laneId}`;
    // A notebook saved by an older version keeps lanes without a title: name them as it did.
    return lane.title || [lane.group, lane.label].filter(Boolean).join(" · ") || `lane ${laneId}`;
  }

  /**
   * Name index of an event known by id, from the overview or the detail window (-1 if neither holds it).
   * @param {EventKey} ev
   * @param {DetailWindow | null} [detail]
   * @returns {number}
   */
  function nameIndexOf(ev, detail = null) {
    if (typeof ev.name === "number" && Number.isInteger(ev.name)) return ev.name;
    /** @type {[SegmentIndex, Table][]} */
    const held = detail ? [[overview, table], [detail.index, detail.table]] : [[overview, table]];
    for (const [index, tbl] of held) {
      const r = rowOfId(index, ev.id);
      if (r >= 0) return tbl.columns.name?.[r] ?? -1;
    }
    return -1;
  }

  /**
   * An event's name: given as text (details from the source), or looked up by index.
   * @param {EventKey} ev
   * @param {DetailWindow | null} [detail]
   */
  function evName(ev, detail = null) {
    if (typeof ev.name === "string") return ev.name;
    return nameText(nameIndexOf(ev, detail));
  }

  /**
   * The index and table that hold time t: the detail window where it covers t, else the overview.
   * @param {number} t
   * @param {DetailWindow | null} [detail]
   * @returns {{index: SegmentIndex, table: Table}}
   */
  function tablesAt(t, detail = null) {
    return detail && t >= detail.start && t <= detail.end ? { index: detail.index, table: detail.table } : { index: overview, table };
  }

  /**
   * The event a selectionToKeep() of earlier data names, if this data holds it: in the
   * overview, or, where the overview merges events, in a detail window of it; else null.
   * @param {{label?: string, group?: string, start_ns: number, dur_ns: number}} sel
   * @param {DetailWindow | null} [detail]
   */
  function findAgain(sel, detail = null) {
    const lane = lanes.find((l) => l.label === sel.label && l.group === sel.group);
    if (!lane) return null;
    const held = !overview.merged ? { index: overview, table } : detail && !detail.index.merged ? detail : null;
    if (!held) return null;
    const r = rowAt(held.index, held.table, lane.id, sel.start_ns, sel.dur_ns);
    return r >= 0 ? eventAt(held.index, held.table, r) : null;
  }

  /**
   * Whether findAgain(sel, detail) can tell if this data holds the event: the overview holds
   * single events, or the detail window does and covers part of the event's time (a window
   * holds every event that overlaps it, one that began before it too, as a long step).
   * @param {{start_ns: number, dur_ns: number}} sel
   * @param {DetailWindow | null} [detail]
   */
  function canFind(sel, detail = null) {
    if (!overview.merged) return true;
    if (!detail || detail.index.merged) return false;
    return sel.start_ns <= detail.end && sel.start_ns + sel.dur_ns >= detail.start;
  }

  return {
    names,
    table,
    overview,
    loadError,
    complete: data.complete ?? !overview.merged,
    totalEvents: typeof data.totalEvents === "number" && Number.isFinite(data.totalEvents) ? data.totalEvents : table.n,
    counters,
    counterTimes: data.counters?.columns?.time_ns,
    counterValues: data.counters?.columns?.value,
    lanes,
    laneById,
    ranks,
    span,
    minSpan: Math.min(MIN_SPAN_NS, span),
    /** What the plot says when it has nothing to draw, or null. */
    emptyText: overview.n === 0 && counters.size === 0 ? (loadError ?? "no timeline events") : null,
    kindName,
    nameText,
    colorOf: nameColors(names, kindName),
    laneText,
    nameIndexOf,
    evName,
    tablesAt,
    canFind,
    findAgain,
  };
}
