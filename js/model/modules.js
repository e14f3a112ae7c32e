// @ts-check
// The module view's pure parts: which tree of summary.module_layout to draw for a rank, which
// roofline points belong to a module (its own path or a path under it), the marks group of a
// module row, and the "module · line" words that hint cards and roofline details show. The
// tree's geometry is not here: Python lays it out once (gpuprofile/report/module_layout.py).

/** @typedef {import("./report_types.js").ModuleLayout} ModuleLayout */
/** @typedef {import("./report_types.js").ModuleTree} ModuleTree */
/** @typedef {Partial<import("./report_types.js").SourceRef>} SourceRef */

export const NO_MODULE = "(no module)";

/**
 * Whether `candidate` is `path` or a module inside it ("Net.fc" is inside "Net", "Net2" is
 * not). Work outside every module contains nothing but itself.
 * @param {string} path
 * @param {unknown} candidate
 */
export function withinModule(path, candidate) {
  if (typeof candidate !== "string" || !path) return false;
  if (candidate === path) return true;
  return path !== NO_MODULE && candidate.startsWith(`${path}.`);
}

/**
 * Indexes of the roofline points whose `modules` name `path` or a module inside it.
 * @param {({modules?: unknown} | null | undefined)[] | null | undefined} points
 * @param {string} path
 * @returns {number[]}
 */
export function pointsOfModule(points, path) {
  /** @type {number[]} */
  const out = [];
  (points || []).forEach((p, i) => {
    const modules = p && Array.isArray(p.modules) ? p.modules : [];
    if (modules.some((m) => withinModule(path, m))) out.push(i);
  });
  return out;
}

/**
 * The marks group of module row `module` of rank `rank`, or -1.
 * @param {{kind?: string, [key: string]: unknown}[]} groups
 * @param {number} rank
 * @param {number} module
 */
export function moduleGroup(groups, rank, module) {
  return groups.findIndex((g) => g && g.kind === "module" && g.rank === rank && g.module === module);
}

/**
 * The tree to draw for `rank` (null: the first one), or null when the layout has none.
 * @param {ModuleLayout | null | undefined} layout
 * @param {number | null} [rank]
 * @returns {ModuleTree | null}
 */
export function treeFor(layout, rank = null) {
  const trees = (layout && Array.isArray(layout.trees) ? layout.trees : []).filter(Boolean);
  if (!trees.length) return null;
  return trees.find((t) => t.rank === rank) ?? trees[0];
}

/**
 * A line of the user's code as people read it: a notebook cell ("cell [5]") as
 * "cell [5] line 12", a file as its base name and line ("model.py:42"); "" when unknown.
 * @param {SourceRef | null | undefined} src
 */
export function sourceLabel(src) {
  if (!src || typeof src.file !== "string" || !src.file) return "";
  const line = Number.isInteger(src.line) && Number(src.line) > 0 ? Number(src.line) : null;
  if (/^cell \[[^\]]*\]$/.test(src.file)) return line === null ? src.file : `${src.file} line ${line}`;
  const base = src.file.split(/[\\/]/).pop() || src.file;
  return line === null ? base : `${base}:${line}`;
}

/**
 * What a hint or a roofline point says about where it is in the user's program: its first
 * module and its first line, as [label, text] rows (none when the report has neither).
 * @param {{modules?: unknown, sources?: unknown} | null | undefined} item
 * @returns {[string, string][]}
 */
export function whereRows(item) {
  /** @type {[string, string][]} */
  const rows = [];
  const modules = item && Array.isArray(item.modules) ? item.modules : [];
  const sources = item && Array.isArray(item.sources) ? item.sources : [];
  if (typeof modules[0] === "string" && modules[0]) {
    const more = modules.length > 1 ? ` (+${modules.length - 1} more)` : "";
    rows.push(["module", `${modules[0]}${more}`]);
  }
  const line = sourceLabel(sources[0]);
  if (line) {
    const fn = sources[0] && typeof sources[0].function === "string" && sources[0].function ? ` in ${sources[0].function}` : "";
    rows.push(["line", `${line}${fn}`]);
  }
  return rows;
}
