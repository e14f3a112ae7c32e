// @ts-check
// The rows of a "top kernels / top ops" table (the range panel's): one row per name, and names
// shortened in the middle, so rows whose names share a long prefix
// ("autograd::engine::evaluate_function: AddmmBackward0", "...: MeanBackward0") still read
// apart where a cut at the end would show the same text on each.

/** @typedef {{name?: unknown, count?: unknown, total_ns?: unknown}} TopRow */

export const NAME_CHARS = 56;

/**
 * Rows merged by name (counts and times summed), heaviest first, ties by name.
 * @param {TopRow[]} rows
 * @returns {{name: string, count: number, total_ns: number}[]}
 */
export function topRows(rows) {
  /** @type {Map<string, {name: string, count: number, total_ns: number}>} */
  const byName = new Map();
  for (const row of rows) {
    const name = String(row.name ?? "");
    const seen = byName.get(name) ?? { name, count: 0, total_ns: 0 };
    seen.count += Number(row.count) || 0;
    seen.total_ns += Number(row.total_ns) || 0;
    byName.set(name, seen);
  }
  return [...byName.values()].sort((a, b) => b.total_ns - a.total_ns || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * At most `max` characters: the start and the end of the name with "…" between, the end
 * kept longer (where names that share a prefix differ).
 * @param {string} name
 * @param {number} [max]
 * @returns {string}
 */
export function elideMiddle(name, max = NAME_CHARS) {
  const chars = [...name];
  if (chars.length <= max) return name;
  const head = Math.floor((max - 1) / 3);
  const tail = max - 1 - head;
  return `${chars.slice(0, head).join("")}…${chars.slice(chars.length - tail).join("")}`;
}
