// Geometry of the timeline canvas, shared by the view that lays it out and hit-tests it and the
// painters that draw it (tests/ui/widget_page.py keeps AXIS_H, HEADER_H and labelWidth in step).

export const AXIS_H = 24;
export const ROW_H = 16;
export const LANE_PAD = 3;
export const HEADER_H = 20;
export const COUNTER_H = 36;
export const DIMS = { rowH: ROW_H, pad: LANE_PAD, headerH: HEADER_H, counterH: COUNTER_H };

/** Width of the lane label column for a canvas `cssW` px wide. */
export function labelWidth(cssW) {
  return Math.round(Math.min(220, Math.max(110, cssW * 0.2)));
}

/** Cut text to maxWidth px with an ellipsis, estimating from the cached full width (no loop). */
export function fitText(ctx, text, maxWidth, cache) {
  if (maxWidth <= 8) return "";
  let full = cache.get(text);
  if (full === undefined) {
    full = ctx.measureText(text).width;
    cache.set(text, full);
  }
  if (full <= maxWidth) return text;
  const n = Math.floor((text.length * maxWidth) / full) - 2;
  return n > 0 ? `${text.slice(0, n)}…` : "";
}
