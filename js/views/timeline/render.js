// @ts-check
// Frames of the timeline: at most one per animation frame, the canvas sized to its box and the
// device's pixel ratio, the theme's colours read where the canvas lives, then the painter
// (paint.js) over the frame state. Redraws when the box is resized or the pixel ratio changes.

import { themeColors } from "../theme.js";

/** @typedef {import("./paint.js").Frame} Frame */

/**
 * @param {Object} opts
 * @param {HTMLElement} opts.el the timeline's root (theme, data-draw-ms)
 * @param {HTMLElement} opts.scroller the plot's vertical scroller (its width is the canvas's)
 * @param {HTMLCanvasElement} opts.canvas
 * @param {import("./canvas.js").CanvasDims} opts.dims
 * @param {{current: import("../../model/lanes.js").Layout, viewportH: number}} opts.layout
 * @param {ReturnType<typeof import("./paint.js").createTimelinePainter>} opts.painter
 * @param {(f: Frame) => void} opts.fillFrame sets the frame's state fields the renderer does not
 * @param {() => void} opts.onWidthChange the canvas's width changed
 * @param {() => void} opts.onFirstPaint
 * @param {() => boolean} opts.isDestroyed
 */
export function createRenderer({ el, scroller, canvas, dims, layout, painter, fillFrame, onWidthChange, onFirstPaint, isDestroyed }) {
  let frame = 0;
  let painted = false;
  // The painter's view of the state, refilled each frame: by draw() and fillFrame, before paint().
  const paintFrame = /** @type {Frame} */ ({});

  function schedule() {
    if (frame || isDestroyed()) return;
    frame = requestAnimationFrame(() => {
      frame = 0;
      draw();
    });
  }

  function draw() {
    if (isDestroyed()) return;
    const width = scroller.clientWidth;
    if (width <= 0) return; // not attached yet; the ResizeObserver calls back
    const t0 = performance.now();
    const widthChanged = dims.measure(width);
    const cssW = dims.cssW;
    const viewportH = layout.viewportH;
    const dpr = window.devicePixelRatio || 1;
    const pw = Math.round(cssW * dpr);
    const ph = Math.round(viewportH * dpr);
    if (canvas.width !== pw || canvas.height !== ph) {
      canvas.width = pw;
      canvas.height = ph;
      canvas.style.width = `${cssW}px`;
    }
    const ctx = canvas.getContext("2d");
    if (!ctx) return;
    const c = themeColors(el);
    const font = `11px ${c.fontFamily}`;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.font = font;
    ctx.textBaseline = "middle";
    ctx.fillStyle = c.bg;
    ctx.fillRect(0, 0, cssW, viewportH);

    const f = paintFrame;
    f.layout = layout.current;
    f.cssW = cssW;
    f.labelW = dims.labelW;
    f.plotW = dims.plotWidth();
    f.viewportH = viewportH;
    f.scrollTop = scroller.scrollTop;
    fillFrame(f);
    painter.paint(ctx, f, c, font);

    el.dataset.drawMs = (performance.now() - t0).toFixed(2);
    if (widthChanged) onWidthChange();
    if (!painted) {
      painted = true;
      onFirstPaint();
    }
  }

  const resizeObserver = typeof ResizeObserver !== "undefined" ? new ResizeObserver(() => schedule()) : null;
  resizeObserver?.observe(scroller);
  const mediaQuery = window.matchMedia?.(`(resolution: ${window.devicePixelRatio || 1}dppx)`);
  mediaQuery?.addEventListener?.("change", schedule);

  return {
    schedule,
    destroy() {
      if (frame) cancelAnimationFrame(frame);
      resizeObserver?.disconnect();
      mediaQuery?.removeEventListener?.("change", schedule);
    },
  };
}
