// @ts-check
// Level of detail, in pixel space: per-block summaries of a segment index (built with it) and
// the boxes one sub-row draws at a zoom, sub-pixel runs merged. No DOM; unit-tested.

// Zoomed out, a pixel can hold hundreds of events. lodRow swallows whole aligned blocks of
// BLOCK positions at a time when they all fall inside the coverage box it is growing, using
// these per-block summaries, so a frame costs far less than one step per event. A block that
// straddles two sub-rows is never swallowed (lodRow only takes blocks inside its own range).
/** @typedef {import("./segments.js").SegmentIndex} SegmentIndex */
/** @typedef {import("./decode.js").Column} Column */
/** @typedef {ReturnType<typeof createBoxes>} Boxes */

export const BLOCK_SHIFT = 5;
const BLOCK = 1 << BLOCK_SHIFT;

/**
 * Per block of BLOCK positions: the longest event (its length and position), the latest end
 * and the events it stands for (the count column's sum when rows are already merged).
 * @param {Float64Array} start by position
 * @param {Float32Array} dur by position
 * @param {Uint32Array} perm table row at each position
 * @param {Column | null} counts by table row, or null (1 each)
 */
export function blockSummaries(start, dur, perm, counts) {
  const blocks = Math.ceil(start.length / BLOCK);
  const blockMaxDur = new Float64Array(blocks);
  const blockMaxEnd = new Float64Array(blocks);
  const blockArgmax = new Int32Array(blocks);
  const blockCount = new Float64Array(blocks);
  for (let b = 0; b < blocks; b++) {
    const p0 = b * BLOCK;
    const p1 = Math.min(start.length, p0 + BLOCK);
    let maxDur = -1;
    let maxEnd = -Infinity;
    let arg = p0;
    let count = 0;
    for (let p = p0; p < p1; p++) {
      if (dur[p] > maxDur) { maxDur = dur[p]; arg = p; }
      const e = start[p] + dur[p];
      if (e > maxEnd) maxEnd = e;
      count += counts ? counts[perm[p]] : 1;
    }
    blockMaxDur[b] = maxDur;
    blockMaxEnd[b] = maxEnd;
    blockArgmax[b] = arg;
    blockCount[b] = count;
  }
  return { blockMaxDur, blockMaxEnd, blockArgmax, blockCount };
}

/**
 * Per block of positions, 1 when any event in it has a name in `mask`: lets lodRow keep
 * skipping whole blocks while a search is active. Recompute when the mask changes.
 * @param {SegmentIndex} index
 * @param {ArrayLike<number> | null} mask per name index, 1 = matches
 * @returns {Uint8Array}
 */
export function blockMatches(index, mask) {
  const out = new Uint8Array(index.blockMaxDur?.length ?? 0);
  const { perm, names } = index;
  if (!names || !mask) return out;
  for (let p = 0; p < perm.length; p++) if (mask[names[perm[p]]]) out[p >> BLOCK_SHIFT] = 1;
  return out;
}

/**
 * Reusable output of lodRow: parallel typed arrays, `n` boxes filled.
 * @param {number} [capacity]
 */
export function createBoxes(capacity = 1024) {
  return {
    n: 0,
    x0: new Float64Array(capacity),
    x1: new Float64Array(capacity),
    pos: new Int32Array(capacity),
    count: new Float64Array(capacity),
    match: new Uint8Array(capacity),
  };
}

/**
 * @param {Boxes} out
 * @param {number} x0
 * @param {number} x1
 * @param {number} pos
 * @param {number} count
 * @param {number} match
 * @param {number} width
 */
function pushBox(out, x0, x1, pos, count, match, width) {
  if (out.n === out.pos.length) {
    const bigger = createBoxes(out.pos.length * 2);
    bigger.x0.set(out.x0);
    bigger.x1.set(out.x1);
    bigger.pos.set(out.pos);
    bigger.count.set(out.count);
    bigger.match.set(out.match);
    Object.assign(out, { x0: bigger.x0, x1: bigger.x1, pos: bigger.pos, count: bigger.count, match: bigger.match });
  }
  const i = out.n++;
  out.x0[i] = x0 < -1 ? -1 : x0 > width + 1 ? width + 1 : x0;
  out.x1[i] = x1 < -1 ? -1 : x1 > width + 1 ? width + 1 : x1;
  out.pos[i] = pos;
  out.count[i] = count;
  out.match[i] = match;
}

/**
 * Boxes to draw for positions [k0, k1) of one sub-row (from rowRange) at `view` across `width`
 * pixels, appended to `out` (reset out.n yourself). Events at least `minPx` wide are drawn as
 * they are; runs of narrower events that touch or come within `minPx` of each other merge into
 * one coverage box whose `pos` is its longest member and `count` the events it stands for (the
 * table's count column when the rows are already coverage boxes). With `mask` (per name, 1 =
 * matches a search) a box's `match` is 1 when any member matches; pass `maskBlocks`
 * (blockMatches of that mask) to keep skipping blocks. No allocation per event.
 * @param {SegmentIndex} index
 * @param {number} k0
 * @param {number} k1
 * @param {import("./view.js").View} view
 * @param {number} width px
 * @param {number} minPx
 * @param {Boxes} out
 * @param {ArrayLike<number> | null} [mask]
 * @param {Uint8Array | null} [maskBlocks]
 * @returns {Boxes}
 */
export function lodRow(index, k0, k1, view, width, minPx, out, mask = null, maskBlocks = null) {
  const { start, dur, perm, counts, names, blockMaxDur, blockMaxEnd, blockArgmax, blockCount } = index;
  const vs = view.start;
  const ve = view.end;
  const scale = width / (ve - vs);
  // With a search mask, blocks can be skipped only when their matches are summarised too.
  const skip = blockMaxDur && (!mask || maskBlocks);
  let open = false;
  let ox0 = 0;
  let ox1 = 0;
  let opos = 0;
  let ocount = 0;
  let odur = 0;
  let omatch = 0;
  for (let k = k0; k < k1; k++) {
    if (open && skip && (k & (BLOCK - 1)) === 0 && k + BLOCK <= k1) {
      const b = k >> BLOCK_SHIFT;
      // The whole block starts inside the box's reach and holds only sub-pixel events: the
      // event-by-event loop would merge every one of them.
      if (start[k] >= vs && start[k + BLOCK - 1] <= vs + (ox1 + minPx) / scale && blockMaxDur[b] * scale < minPx) {
        const bx1 = (blockMaxEnd[b] - vs) * scale;
        if (bx1 > ox1) ox1 = bx1;
        ocount += blockCount[b];
        if (mask) omatch |= /** @type {Uint8Array} */ (maskBlocks)[b]; // skip: a mask has its blocks
        if (blockMaxDur[b] > odur) { odur = blockMaxDur[b]; opos = blockArgmax[b]; }
        k += BLOCK - 1;
        continue;
      }
    }
    const s = start[k];
    const d = dur[k];
    if (s + d < vs || s > ve) continue;
    const x0 = (s - vs) * scale;
    const x1 = (s + d - vs) * scale;
    const c = counts ? counts[perm[k]] : 1;
    const m = mask && names ? mask[names[perm[k]]] : 0;
    if (x1 - x0 >= minPx) {
      if (open) { pushBox(out, ox0, ox1, opos, ocount, omatch, width); open = false; }
      pushBox(out, x0, x1, k, c, m, width);
      continue;
    }
    if (open && x0 <= ox1 + minPx) {
      if (x1 > ox1) ox1 = x1;
      ocount += c;
      omatch |= m;
      if (d > odur) { odur = d; opos = k; }
      continue;
    }
    if (open) pushBox(out, ox0, ox1, opos, ocount, omatch, width);
    open = true;
    ox0 = x0;
    ox1 = x1;
    opos = k;
    ocount = c;
    odur = d;
    omatch = m;
  }
  if (open) pushBox(out, ox0, ox1, opos, ocount, omatch, width);
  return out;
}
