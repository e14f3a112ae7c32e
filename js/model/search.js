// @ts-check
// Name search for the timeline: matching names (to draw matches) and stepping through the
// ordered match list that the source returns. Pure: no DOM.
//
// Substring search ignores case, as the Python side does. Regex search follows the Python side
// too: case-sensitive unless the pattern says otherwise. JS and Python regex dialects differ at
// the edges, so the source's reply (the names that match on the Python side) is authoritative;
// the JS matcher only lets matches light up before the reply arrives.

import { formatCount } from "./format.js";

/** @typedef {{test: (name: unknown) => boolean}} Matcher */

/**
 * @param {unknown} pattern
 * @param {boolean} [regex]
 * @returns {Matcher | {error: string} | null} null for an empty pattern
 */
export function compileMatcher(pattern, regex = false) {
  const text = String(pattern ?? "");
  if (text === "") return null;
  if (regex) {
    let re;
    try {
      re = new RegExp(text);
    } catch (err) {
      return { error: `bad regex: ${/** @type {Error} */ (err).message}` };
    }
    return { test: (name) => re.test(String(name)) };
  }
  const needle = text.toLowerCase();
  return { test: (name) => String(name).toLowerCase().includes(needle) };
}

/**
 * Mask over names (1 = matches) and how many names match.
 * @param {ArrayLike<unknown>} names
 * @param {Matcher | {error: string} | null} matcher
 * @returns {{mask: Uint8Array, count: number}}
 */
export function matchNames(names, matcher) {
  const mask = new Uint8Array(names.length);
  let count = 0;
  if (!matcher || !("test" in matcher)) return { mask, count };
  for (let i = 0; i < names.length; i++) {
    if (matcher.test(names[i])) {
      mask[i] = 1;
      count++;
    }
  }
  return { mask, count };
}

/**
 * Mask over `size` names from a list of matching name indexes (the source's reply).
 * @param {number} size
 * @param {Iterable<number> | null | undefined} indexes
 * @returns {Uint8Array}
 */
export function maskFromIndexes(size, indexes) {
  const mask = new Uint8Array(size);
  for (const i of indexes ?? []) if (i >= 0 && i < size) mask[i] = 1;
  return mask;
}

/**
 * The next match position when stepping `dir` (+1 / -1) from `k` through `listed` matches,
 * wrapping around; from no position (k < 0) +1 goes to the first and -1 to the last.
 * @param {number} k
 * @param {number} listed
 * @param {number} dir
 * @returns {number}
 */
export function stepMatch(k, listed, dir) {
  if (!(listed > 0)) return -1;
  if (k < 0 || k >= listed) return dir < 0 ? listed - 1 : 0;
  return (((k + (dir < 0 ? -1 : 1)) % listed) + listed) % listed;
}

/**
 * Status text: "no matches", "N matches", "k of N" (+ a note when only some are listed).
 * @param {number} k the match stepped to, or -1
 * @param {number} count
 * @param {number} [listed]
 * @returns {string}
 */
export function matchStatus(k, count, listed = count) {
  if (!(count > 0)) return "no matches";
  const total = formatCount(count);
  if (k < 0) return `${total} match${count === 1 ? "" : "es"}`;
  const note = listed < count ? ` (${formatCount(listed)} listed)` : "";
  return `${formatCount(k + 1)} of ${total}${note}`;
}
