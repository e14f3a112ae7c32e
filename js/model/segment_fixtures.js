// @ts-check
// Test fixtures shared by the segment, LOD and lane tests (not part of the widget bundle).

/**
 * An event as the fixtures take it: lane, sub-row, start and duration (ns), name index, and
 * how many events a merged box stands for.
 * @typedef {{lane: number, row?: number, start: number, dur: number, name?: number, count?: number}} FixtureEvent
 */

/**
 * A seeded linear congruential generator of floats in [0, 1), so failures reproduce.
 * @param {number} seed
 * @returns {() => number}
 */
export function makeRand(seed) {
  return () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
}

// A segment table the way Python lays one out: events sorted by (lane, start), ids = positions,
// one segment per lane. `events`: [{lane, row, start, dur, name}].
/**
 * @param {FixtureEvent[]} events
 * @param {import("./decode.js").TableMeta} [meta]
 * @returns {{table: import("./decode.js").Table, sorted: (FixtureEvent & {k: number})[]}}
 */
export function segmentTable(events, meta = {}) {
  const sorted = events.map((e, k) => ({ ...e, k })).sort((a, b) => a.lane - b.lane || a.start - b.start || a.k - b.k);
  /** @type {[number, number, number][]} */
  const segments = [];
  sorted.forEach((e, i) => {
    const last = segments[segments.length - 1];
    if (last && last[0] === e.lane) last[2]++;
    else segments.push([e.lane, i, 1]);
  });
  /** @type {Record<string, import("./decode.js").Column>} */
  const columns = {
    start_ns: Float64Array.from(sorted.map((e) => e.start)),
    dur_ns: Float32Array.from(sorted.map((e) => e.dur)),
    name: Uint32Array.from(sorted.map((e) => e.name ?? 0)),
    row: Uint8Array.from(sorted.map((e) => e.row ?? 0)),
  };
  if (sorted.some((e) => e.count !== undefined)) columns.count = Uint32Array.from(sorted.map((e) => e.count ?? 1));
  return { table: { n: sorted.length, columns, meta: { segments, merged: false, ...meta } }, sorted };
}

// Random lanes: CPU-like nesting (a long outer op per row 0 span, inner ops on deeper rows) and
// GPU-like overlapping kernels packed on sub-rows.
/**
 * @param {() => number} rand
 * @param {number} count events per lane
 * @param {number} [lanes]
 * @returns {FixtureEvent[]}
 */
export function randomEvents(rand, count, lanes = 3) {
  /** @type {FixtureEvent[]} */
  const events = [];
  for (let lane = 0; lane < lanes; lane++) {
    const rowEnd = [0, 0, 0, 0];
    let t = 0;
    for (let k = 0; k < count; k++) {
      t += rand() * 40;
      const dur = rand() < 0.05 ? rand() * 3000 : rand() * 30;
      // first free sub-row, as a packer would assign
      let row = rowEnd.findIndex((end) => end <= t);
      if (row < 0) row = 3;
      rowEnd[row] = Math.max(rowEnd[row], t + dur);
      events.push({ lane: lane * 2 + 1, row, start: t, dur, name: Math.floor(rand() * 7) });
    }
  }
  return events;
}
