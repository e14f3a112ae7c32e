// @ts-check
// The `marks` table (contract: events to outline per hint evidence and per roofline point) as
// the lists the timeline's highlight() takes. Pure: no DOM.

/**
 * A group of marks (the table's meta.groups): a hint's evidence entry or a roofline point.
 * @typedef {{kind?: string, hint?: number, evidence?: number, point?: number, total?: number, heaviest?: number, [key: string]: unknown}} MarkGroup
 */
/** An event as the timeline's highlight() takes it. @typedef {{id: number, lane: number, row: number, start_ns: number, dur_ns: number}} EventRow */
/** @typedef {EventRow & {name: number}} MarkRow */
/** @typedef {import("./wire_tables.js").EventListColumns} EventListColumns */
/** @typedef {import("./wire_tables.js").MarksColumns} MarksColumns */
/** @typedef {import("./decode.js").TableMeta} TableMeta */

/**
 * Row r of an event list's or the marks' columns (wire_tables.js; a table made without a row
 * column puts events on row 0).
 * @param {EventListColumns} c
 * @param {number} r
 * @returns {EventRow}
 */
export function eventRow(c, r) {
  return { id: c.id[r], lane: c.lane[r], row: c.row ? c.row[r] : 0, start_ns: c.start_ns[r], dur_ns: c.dur_ns[r] };
}

/**
 * @param {{n: number, columns: MarksColumns, meta: TableMeta} | null | undefined} table the
 *   decoded marks table
 * @returns {{groups: MarkGroup[], rowsOf: (g: number) => MarkRow[]}}
 */
export function indexMarks(table) {
  if (!table) return { groups: [], rowsOf: () => [] };
  /** @type {MarkGroup[]} */
  const groups = table.meta.groups || [];
  const n = table.n;
  const c = table.columns;
  // Rows are grouped by group number: one pass finds each group's [lo, hi).
  const lo = new Int32Array(groups.length).fill(-1);
  const hi = new Int32Array(groups.length).fill(-1);
  for (let r = 0; r < n; r++) {
    const g = c.group[r];
    if (g >= groups.length) continue;
    if (lo[g] < 0) lo[g] = r;
    hi[g] = r + 1;
  }
  /** @param {number} g */
  function rowsOf(g) {
    if (!(g >= 0 && g < groups.length) || lo[g] < 0) return [];
    /** @type {MarkRow[]} */
    const out = [];
    for (let r = lo[g]; r < hi[g]; r++) {
      if (c.group[r] !== g) continue;
      out.push({ ...eventRow(c, r), name: c.name[r] });
    }
    return out;
  }
  return { groups, rowsOf };
}

/**
 * The rows of an event table (search hits, the instances of a name) as the timeline's
 * highlight() takes them.
 * @param {{n: number, columns: EventListColumns} | null | undefined} table
 * @returns {EventRow[]}
 */
export function eventRows(table) {
  if (!table) return [];
  const out = [];
  for (let r = 0; r < table.n; r++) out.push(eventRow(table.columns, r));
  return out;
}

/**
 * The group number for a hint's evidence entry, or -1.
 * @param {MarkGroup[]} groups
 * @param {number} hint
 * @param {number} evidence
 * @returns {number}
 */
export function evidenceGroup(groups, hint, evidence) {
  return groups.findIndex((g) => g && g.kind === "hint" && g.hint === hint && g.evidence === evidence);
}

/**
 * The group number for a roofline point, or -1.
 * @param {MarkGroup[]} groups
 * @param {number} point
 * @returns {number}
 */
export function pointGroup(groups, point) {
  return groups.findIndex((g) => g && g.kind === "point" && g.point === point);
}

/**
 * [start, end] around the windows (each [start, end] ns), or null when there are none.
 * @param {unknown[] | null | undefined} windows
 * @returns {[number, number] | null}
 */
export function envelope(windows) {
  let start = Infinity;
  let end = -Infinity;
  for (const w of windows || []) {
    if (!Array.isArray(w) || w.length < 2) continue;
    if (w[0] < start) start = w[0];
    if (w[1] > end) end = w[1];
  }
  return start <= end ? [start, end] : null;
}

/**
 * The longest of the marked events, or null.
 * @template {{dur_ns: number}} R
 * @param {R[]} rows
 * @returns {R | null}
 */
export function heaviest(rows) {
  /** @type {R | null} */
  let best = null;
  for (const r of rows) if (!best || r.dur_ns > best.dur_ns) best = r;
  return best;
}

/**
 * The [start, end] ns to zoom to for marked events: the one with id `preferredId` (the one
 * Python names, e.g. the heaviest by GPU time) if it is among them, else the longest; null
 * when there are none.
 * @param {EventRow[]} rows
 * @param {unknown} [preferredId]
 * @returns {[number, number] | null}
 */
export function zoomSpan(rows, preferredId) {
  const top = rows.find((r) => r.id === preferredId) || heaviest(rows);
  return top ? [top.start_ns, top.start_ns + top.dur_ns] : null;
}
