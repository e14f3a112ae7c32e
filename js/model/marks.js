// The `marks` table (contract: events to outline per hint evidence and per roofline point) as
// the lists the timeline's highlight() takes. Pure: no DOM.

/**
 * @param {{n: number, columns: Object, meta: Object}} table decoded marks table
 * @returns {{groups: Array, rowsOf: (g: number) => Array}}
 */
export function indexMarks(table) {
  const groups = (table && table.meta && table.meta.groups) || [];
  const n = (table && table.n) || 0;
  const c = (table && table.columns) || {};
  // Rows are grouped by group number: one pass finds each group's [lo, hi).
  const lo = new Int32Array(groups.length).fill(-1);
  const hi = new Int32Array(groups.length).fill(-1);
  for (let r = 0; r < n; r++) {
    const g = c.group[r];
    if (g >= groups.length) continue;
    if (lo[g] < 0) lo[g] = r;
    hi[g] = r + 1;
  }
  function rowsOf(g) {
    if (!(g >= 0 && g < groups.length) || lo[g] < 0) return [];
    const out = [];
    for (let r = lo[g]; r < hi[g]; r++) {
      if (c.group[r] !== g) continue;
      out.push({
        id: c.id[r], lane: c.lane[r], row: c.row[r], start_ns: c.start_ns[r], dur_ns: c.dur_ns[r], name: c.name[r],
      });
    }
    return out;
  }
  return { groups, rowsOf };
}

/** The group number for a hint's evidence entry, or -1. */
export function evidenceGroup(groups, hint, evidence) {
  return groups.findIndex((g) => g && g.kind === "hint" && g.hint === hint && g.evidence === evidence);
}

/** The group number for a roofline point, or -1. */
export function pointGroup(groups, point) {
  return groups.findIndex((g) => g && g.kind === "point" && g.point === point);
}

/** [start, end] around the windows (each [start, end] ns), or null when there are none. */
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

/** The longest of the marked events, or null. */
export function heaviest(rows) {
  let best = null;
  for (const r of rows) if (!best || r.dur_ns > best.dur_ns) best = r;
  return best;
}
