// What the timeline derives once from the data it is given: the overview's index (or why it
// cannot be read), lanes as tall as their sub-rows, counter lanes' sample ranges, the span, and
// the names, kinds, colours and lane labels of events. No DOM; unit-tested.

import { nameColors } from "./colors.js";
import { buildCounterIndex, fitLaneRows } from "./lanes.js";
import { buildSegmentIndex, eventAt, rowAt, rowOfId, traceSpan } from "./segments.js";

/** The narrowest view in ns (shorter traces: their span). */
export const MIN_SPAN_NS = 20;

/**
 * @param {{lanes?, names?, nameKinds?, kinds?, span?, table?, counters?, complete?, totalEvents?}} data
 *   table: the decoded segment table (complete, or the merged overview); counters: decoded
 */
export function prepareTimeline(data) {
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
  const counters = buildCounterIndex(data.counters);
  const lanes = fitLaneRows(Array.isArray(data.lanes) ? data.lanes : [], overview);
  const laneById = new Map(lanes.map((l) => [l.id, l]));
  const span = traceSpan(data.span, overview);

  const kindName = (nameIdx) => kinds[nameKinds[nameIdx]] ?? "";
  const nameText = (nameIdx) => (nameIdx >= 0 && nameIdx < names.length ? String(names[nameIdx]) : "");

  /** "group · label" of a lane, for tooltips and details. */
  function laneText(laneId) {
    const lane = laneById.get(laneId);
    if (!lane) return `lane ${laneId}`;
    return [lane.group, lane.label].filter(Boolean).join(" · ");
  }

  /** Name index of an event known by id, from the overview or the detail window (-1 if neither holds it). */
  function nameIndexOf(ev, detail = null) {
    if (Number.isInteger(ev.name)) return ev.name;
    const held = detail ? [[overview, table], [detail.index, detail.table]] : [[overview, table]];
    for (const [index, tbl] of held) {
      const r = rowOfId(index, ev.id);
      if (r >= 0) return tbl.columns.name?.[r] ?? -1;
    }
    return -1;
  }

  /** An event's name: given as text (details from the source), or looked up by index. */
  function evName(ev, detail = null) {
    if (typeof ev.name === "string") return ev.name;
    return nameText(nameIndexOf(ev, detail));
  }

  /** The index and table that hold time t: the detail window where it covers t, else the overview. */
  function tablesAt(t, detail = null) {
    return detail && t >= detail.start && t <= detail.end ? { index: detail.index, table: detail.table } : { index: overview, table };
  }

  /** The event a selectionToKeep() of earlier data names, if this data holds it; else null. */
  function findAgain(sel) {
    const lane = lanes.find((l) => l.label === sel.label && l.group === sel.group);
    if (!lane || overview.merged) return null;
    const r = rowAt(overview, table, lane.id, sel.start_ns, sel.dur_ns);
    return r >= 0 ? eventAt(overview, table, r) : null;
  }

  return {
    names,
    table,
    overview,
    loadError,
    complete: data.complete ?? !overview.merged,
    totalEvents: Number.isFinite(data.totalEvents) ? data.totalEvents : table.n,
    counters,
    counterTimes: data.counters?.columns?.time_ns,
    counterValues: data.counters?.columns?.value,
    lanes,
    laneById,
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
    findAgain,
  };
}
