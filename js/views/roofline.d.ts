// Stands in for roofline.js in the type check while helper i24-layout rewrites and types that
// file (tsconfig.json excludes it). Drop this file together with that exclusion.
import type { Panel, Report } from "./report_types.js";

export function createRoofline(
  summary: Report | null | undefined,
  hooks?: { onSelectPoint?: (k: number) => void },
): Panel & {
  el: HTMLElement;
  select: (k: number | string | null | undefined) => void;
  highlightPoints: (keysOrIndexes: Iterable<unknown> | null | undefined) => void;
};
