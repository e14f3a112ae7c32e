// @ts-check
// Geometry of the timeline canvas, shared by the layout that stacks lanes and hit-tests them and
// the painters that draw them (tests/ui/widget_page.py keeps AXIS_H, HEADER_H and labelWidth in
// step); and the canvas's width as last drawn, with its label column and plot widths.

export const AXIS_H = 24;
export const ROW_H = 16;
export const LANE_PAD = 3;
export const HEADER_H = 20;
export const COUNTER_H = 36;
export const DIMS = { axisH: AXIS_H, rowH: ROW_H, pad: LANE_PAD, headerH: HEADER_H, counterH: COUNTER_H };

/**
 * Width of the lane label column for a canvas `cssW` px wide.
 * @param {number} cssW
 */
export function labelWidth(cssW) {
  return Math.round(Math.min(220, Math.max(110, cssW * 0.2)));
}

/** @typedef {ReturnType<typeof createCanvasDims>} CanvasDims */

/** The canvas's CSS width as last drawn (0 before the first frame) and the columns it holds. */
export function createCanvasDims() {
  let cssW = 0;
  let labelW = 200;
  return {
    get cssW() {
      return cssW;
    },
    /** The lane label column's width. */
    get labelW() {
      return labelW;
    },
    /** The plot's width, right of the label column (1 px at least). */
    plotWidth() {
      return Math.max(1, cssW - labelW);
    },
    /**
     * Take the canvas's width for this frame; says whether it changed.
     * @param {number} width
     */
    measure(width) {
      const changed = width !== cssW;
      cssW = width;
      labelW = labelWidth(cssW);
      return changed;
    },
  };
}

/**
 * Cut text to maxWidth px with an ellipsis, estimating from the cached full width (no loop).
 * @param {CanvasRenderingContext2D} ctx
 * @param {string} text
 * @param {number} maxWidth
 * @param {Map<string, number>} cache text -> its full width in px
 */
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
