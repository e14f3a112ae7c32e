// The timeline: one <canvas> with a lane label column, a time axis, a lane per CPU thread and per
// GPU stream (rows stacked), wheel zoom at the cursor, drag to pan, and a hover tooltip.
// Trace strings reach the DOM only through textContent (the tooltip); the canvas draws them as text.

import {
  axisTicks,
  buildLaneIndex,
  clampView,
  colorForName,
  formatDuration,
  laneLayout,
  lodBoxes,
  pan,
  visibleRange,
  wheelZoomFactor,
  xToTime,
  zoomAt,
} from "../model/timeline.js";

const AXIS_H = 24;
const ROW_H = 16;
const LANE_PAD = 3;
const MAX_VIEWPORT_H = 560;
const MIN_SPAN_NS = 20;

function cssVar(el, name, fallback) {
  const v = getComputedStyle(el).getPropertyValue(name).trim();
  return v || fallback;
}

function themeColors(el) {
  return {
    bg: cssVar(el, "--jp-layout-color0", "#ffffff"),
    bgAlt: cssVar(el, "--jp-layout-color1", "#f5f5f5"),
    labelBg: cssVar(el, "--jp-layout-color2", "#eeeeee"),
    border: cssVar(el, "--jp-border-color2", "#d0d0d0"),
    grid: cssVar(el, "--jp-border-color3", "#e8e8e8"),
    text: cssVar(el, "--jp-ui-font-color1", "#1f1f1f"),
    muted: cssVar(el, "--jp-ui-font-color2", "#616161"),
    cpu: cssVar(el, "--jp-brand-color1", "#1976d2"),
    gpu: cssVar(el, "--jp-accent-color1", "#388e3c"),
    fontFamily: cssVar(el, "--jp-ui-font-family", "system-ui, -apple-system, 'Segoe UI', sans-serif"),
  };
}

function truncate(ctx, text, maxWidth, cache) {
  if (maxWidth <= 0) return "";
  const full = cache.get(text) ?? ctx.measureText(text).width;
  if (!cache.has(text)) cache.set(text, full);
  if (full <= maxWidth) return text;
  // Average glyph width is a fine estimate for a cut; shave until it fits.
  let n = Math.max(0, Math.floor((text.length * maxWidth) / full) - 1);
  let cut = text.slice(0, n) + "…";
  while (n > 0 && ctx.measureText(cut).width > maxWidth) {
    n -= 1;
    cut = text.slice(0, n) + "…";
  }
  return n > 0 ? cut : "";
}

/**
 * @param {{lanes: Array, names: string[], kinds: string[], span: number, table: {n, columns}}} data
 * @param {{onPaint?: () => void}} hooks
 */
export function createTimeline(data, hooks = {}) {
  const { lanes, names, kinds, table } = data;
  const cols = table.columns;
  const n = table.n;
  const hasEvents = n > 0 && cols.start_ns && cols.dur_ns && cols.lane;

  let span = Number(data.span) || 0;
  if (hasEvents) {
    let maxEnd = 0;
    for (let i = 0; i < n; i++) {
      const e = cols.start_ns[i] + cols.dur_ns[i];
      if (e > maxEnd) maxEnd = e;
    }
    if (maxEnd > span) span = maxEnd;
  }
  if (!(span > 0)) span = 1;
  const minSpan = Math.min(MIN_SPAN_NS, span);
  const index = hasEvents
    ? buildLaneIndex(cols.start_ns, cols.dur_ns, cols.lane, lanes.reduce((m, l) => Math.max(m, l.id + 1), 0))
    : null;
  const layout = laneLayout(lanes, ROW_H, LANE_PAD);
  const laneById = new Map(lanes.map((l) => [l.id, l]));

  // DOM
  const el = document.createElement("div");
  el.className = "gp-timeline";
  el.dataset.events = String(n);
  el.dataset.lanes = String(lanes.length);

  const toolbar = document.createElement("div");
  toolbar.className = "gp-toolbar";
  const reset = document.createElement("button");
  reset.className = "gp-button";
  reset.type = "button";
  reset.textContent = "Reset zoom";
  const range = document.createElement("span");
  range.className = "gp-range";
  const help = document.createElement("span");
  help.className = "gp-help";
  help.textContent = "wheel: zoom · drag: pan · shift+wheel: scroll lanes";
  toolbar.append(reset, range, help);

  const scroller = document.createElement("div");
  scroller.className = "gp-scroller";
  const canvas = document.createElement("canvas");
  canvas.className = "gp-canvas";
  canvas.setAttribute("role", "img");
  canvas.setAttribute("aria-label", `Timeline: ${n} events in ${lanes.length} lanes`);
  const spacer = document.createElement("div");
  spacer.className = "gp-spacer";
  scroller.append(canvas, spacer);

  const tooltip = document.createElement("div");
  tooltip.className = "gp-tooltip";
  tooltip.hidden = true;

  el.append(toolbar, scroller, tooltip);

  const contentH = AXIS_H + Math.max(layout.total, ROW_H * 2);
  const viewportH = Math.min(contentH, MAX_VIEWPORT_H);
  scroller.style.height = `${viewportH}px`;
  canvas.style.height = `${viewportH}px`;
  spacer.style.height = `${contentH - viewportH}px`;

  let view = { start: 0, end: span };
  let cssW = 0;
  let labelW = 200;
  let frame = 0;
  let painted = false;
  let destroyed = false;
  let hits = new Map(); // lane id -> {y, boxes}
  const textWidths = new Map();

  function plotWidth() {
    return Math.max(1, cssW - labelW);
  }

  function setView(next) {
    view = clampView(next, span, minSpan);
    el.dataset.viewStartNs = String(view.start);
    el.dataset.viewEndNs = String(view.end);
    range.textContent = `${formatDuration(view.start)} – ${formatDuration(view.end)} (${formatDuration(view.end - view.start)} shown of ${formatDuration(span)})`;
    schedule();
  }

  function schedule() {
    if (frame || destroyed) return;
    frame = requestAnimationFrame(() => {
      frame = 0;
      draw();
    });
  }

  function draw() {
    if (destroyed) return;
    const width = scroller.clientWidth;
    if (width <= 0) return; // not attached yet; the ResizeObserver calls back
    const t0 = performance.now();
    cssW = width;
    labelW = Math.round(Math.min(220, Math.max(110, cssW * 0.22)));
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

    const scrollTop = scroller.scrollTop;
    const plotW = plotWidth();
    const ticks = axisTicks(view, plotW, 90);

    // Lane backgrounds and grid lines.
    layout.order.forEach((lane, k) => {
      const y = AXIS_H + layout.top.get(lane.id) - scrollTop;
      const hgt = layout.height.get(lane.id);
      if (y > viewportH || y + hgt < AXIS_H) return;
      ctx.fillStyle = k % 2 ? c.bgAlt : c.bg;
      ctx.fillRect(labelW, y, plotW, hgt);
    });
    ctx.strokeStyle = c.grid;
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (const tick of ticks.ticks) {
      const x = Math.round(labelW + tick.x) + 0.5;
      ctx.moveTo(x, AXIS_H);
      ctx.lineTo(x, viewportH);
    }
    ctx.stroke();

    // Events, clipped to the plot area.
    ctx.save();
    ctx.beginPath();
    ctx.rect(labelW, AXIS_H, plotW, viewportH - AXIS_H);
    ctx.clip();
    hits = new Map();
    if (hasEvents) {
      for (const lane of layout.order) {
        const y = AXIS_H + layout.top.get(lane.id) - scrollTop;
        const hgt = layout.height.get(lane.id);
        if (y > viewportH || y + hgt < AXIS_H) continue;
        const [i0, i1] = visibleRange(index, cols.start_ns, lane.id, view.start, view.end);
        const boxes = lodBoxes(cols, i0, i1, view, plotW, 1);
        hits.set(lane.id, { y, boxes });
        for (const b of boxes) {
          const name = names[cols.name[b.index]] ?? "";
          const x = labelW + b.x0;
          const w = Math.max(1, b.x1 - b.x0);
          const by = y + LANE_PAD + b.row * ROW_H + 1;
          ctx.fillStyle = colorForName(name);
          ctx.globalAlpha = b.count > 1 ? 0.75 : 1;
          ctx.fillRect(x, by, w, ROW_H - 2);
          ctx.globalAlpha = 1;
          if (b.count === 1 && w > 28) {
            const visX0 = Math.max(x, labelW);
            const visW = Math.min(x + w, labelW + plotW) - visX0;
            const label = truncate(ctx, name, visW - 6, textWidths);
            if (label) {
              ctx.fillStyle = "#111";
              ctx.fillText(label, visX0 + 3, by + (ROW_H - 2) / 2 + 0.5);
            }
          }
        }
      }
    }
    ctx.restore();

    // Label column.
    ctx.fillStyle = c.labelBg;
    ctx.fillRect(0, AXIS_H, labelW, viewportH - AXIS_H);
    ctx.strokeStyle = c.border;
    ctx.beginPath();
    for (const lane of layout.order) {
      const y = AXIS_H + layout.top.get(lane.id) - scrollTop;
      const hgt = layout.height.get(lane.id);
      if (y > viewportH || y + hgt < AXIS_H) continue;
      const mid = y + Math.min(hgt, LANE_PAD * 2 + ROW_H) / 2;
      const badge = lane.kind === "gpu" ? "GPU" : "CPU";
      ctx.fillStyle = lane.kind === "gpu" ? c.gpu : c.cpu;
      ctx.fillRect(6, mid - 6, 28, 12);
      ctx.fillStyle = "#fff";
      ctx.font = `bold 9px ${c.fontFamily}`;
      ctx.fillText(badge, 10, mid + 0.5);
      ctx.font = font;
      ctx.fillStyle = c.text;
      ctx.fillText(truncate(ctx, String(lane.label ?? ""), labelW - 46, textWidths), 40, mid + 0.5);
      ctx.moveTo(0, Math.round(y + hgt) + 0.5);
      ctx.lineTo(cssW, Math.round(y + hgt) + 0.5);
    }
    ctx.moveTo(labelW + 0.5, AXIS_H);
    ctx.lineTo(labelW + 0.5, viewportH);
    ctx.stroke();
    if (!hasEvents) {
      ctx.fillStyle = c.muted;
      ctx.fillText("no timeline events", labelW + 12, AXIS_H + ROW_H);
    }

    // Axis.
    ctx.fillStyle = c.bg;
    ctx.fillRect(0, 0, cssW, AXIS_H);
    ctx.fillStyle = c.muted;
    ctx.fillText(`${lanes.length} lane${lanes.length === 1 ? "" : "s"} · ${n.toLocaleString("en-US")} events`, 6, AXIS_H / 2);
    ctx.strokeStyle = c.border;
    ctx.beginPath();
    ctx.moveTo(0, AXIS_H - 0.5);
    ctx.lineTo(cssW, AXIS_H - 0.5);
    for (const tick of ticks.ticks) {
      const x = Math.round(labelW + tick.x) + 0.5;
      ctx.moveTo(x, AXIS_H - 6);
      ctx.lineTo(x, AXIS_H);
    }
    ctx.stroke();
    ctx.fillStyle = c.text;
    ctx.save();
    ctx.beginPath();
    ctx.rect(labelW, 0, plotW, AXIS_H);
    ctx.clip();
    for (const tick of ticks.ticks) ctx.fillText(tick.label, labelW + tick.x + 3, AXIS_H / 2 - 2);
    ctx.restore();

    el.dataset.drawMs = (performance.now() - t0).toFixed(1);
    if (!painted) {
      painted = true;
      if (hooks.onPaint) hooks.onPaint();
    }
  }

  // Hit testing for the tooltip.
  function hitTest(px, py) {
    if (px < labelW) return null;
    for (const lane of layout.order) {
      const hit = hits.get(lane.id);
      if (!hit) continue;
      const rel = py - hit.y - LANE_PAD;
      if (rel < 0 || rel >= layout.height.get(lane.id) - 2 * LANE_PAD) continue;
      const row = Math.floor(rel / ROW_H);
      const x = px - labelW;
      let best = null;
      let bestDist = 3; // px of slack for thin boxes
      for (const b of hit.boxes) {
        if (b.row !== row) continue;
        const dist = x < b.x0 ? b.x0 - x : x > b.x1 ? x - b.x1 : 0;
        if (dist < bestDist || (dist === 0 && best && bestDist === 0 && b.x1 - b.x0 < best.x1 - best.x0)) {
          best = b;
          bestDist = dist;
        }
      }
      return best ? { lane, box: best } : null;
    }
    return null;
  }

  function showTooltip(hit, clientX, clientY) {
    const i = hit.box.index;
    const name = names[cols.name[i]] ?? "";
    const kind = cols.kind ? kinds[cols.kind[i]] ?? String(cols.kind[i]) : "";
    tooltip.replaceChildren();
    const title = document.createElement("div");
    title.className = "gp-tooltip-name";
    title.textContent = name;
    tooltip.appendChild(title);
    const line = (text) => {
      const d = document.createElement("div");
      d.textContent = text;
      tooltip.appendChild(d);
    };
    line(`duration: ${formatDuration(cols.dur_ns[i])}`);
    line(`start: ${formatDuration(cols.start_ns[i])}`);
    line(`lane: ${hit.lane.label ?? hit.lane.id}${kind ? ` · ${kind}` : ""}`);
    if (hit.box.count > 1) {
      line(`${hit.box.count.toLocaleString("en-US")} events narrower than a pixel here (longest shown); zoom in`);
    }
    tooltip.hidden = false;
    const rect = el.getBoundingClientRect();
    let left = clientX - rect.left + 12;
    let top = clientY - rect.top + 14;
    const tw = tooltip.offsetWidth;
    if (left + tw > rect.width) left = Math.max(0, clientX - rect.left - tw - 12);
    tooltip.style.left = `${left}px`;
    tooltip.style.top = `${top}px`;
  }

  // Interaction.
  let drag = null;

  function localPoint(e) {
    const r = canvas.getBoundingClientRect();
    return { x: e.clientX - r.left, y: e.clientY - r.top };
  }

  function onWheel(e) {
    const p = localPoint(e);
    e.preventDefault();
    tooltip.hidden = true;
    if (e.shiftKey) {
      scroller.scrollTop += e.deltaY || e.deltaX;
      return;
    }
    const plotW = plotWidth();
    if (Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
      setView(pan(view, (e.deltaX / plotW) * (view.end - view.start), span, minSpan));
      return;
    }
    const x = Math.min(Math.max(p.x - labelW, 0), plotW);
    const anchor = xToTime(x, view, plotW);
    setView(zoomAt(view, anchor, wheelZoomFactor(e.deltaY, e.deltaMode), span, minSpan));
  }

  function onPointerDown(e) {
    if (e.button !== 0) return;
    const p = localPoint(e);
    if (p.x < labelW) return;
    drag = { x: e.clientX, y: e.clientY, view, scrollTop: scroller.scrollTop, id: e.pointerId };
    canvas.setPointerCapture?.(e.pointerId);
    canvas.classList.add("gp-dragging");
    tooltip.hidden = true;
  }

  function onPointerMove(e) {
    if (drag) {
      const dx = e.clientX - drag.x;
      const dy = e.clientY - drag.y;
      const len = drag.view.end - drag.view.start;
      setView(pan(drag.view, (-dx / plotWidth()) * len, span, minSpan));
      scroller.scrollTop = drag.scrollTop - dy;
      return;
    }
    const p = localPoint(e);
    const hit = hitTest(p.x, p.y);
    if (hit) showTooltip(hit, e.clientX, e.clientY);
    else tooltip.hidden = true;
  }

  function onPointerUp(e) {
    if (!drag) return;
    canvas.releasePointerCapture?.(drag.id);
    canvas.classList.remove("gp-dragging");
    drag = null;
  }

  function onLeave() {
    if (!drag) tooltip.hidden = true;
  }

  canvas.addEventListener("wheel", onWheel, { passive: false });
  canvas.addEventListener("pointerdown", onPointerDown);
  canvas.addEventListener("pointermove", onPointerMove);
  canvas.addEventListener("pointerup", onPointerUp);
  canvas.addEventListener("pointercancel", onPointerUp);
  canvas.addEventListener("pointerleave", onLeave);
  canvas.addEventListener("dblclick", () => setView({ start: 0, end: span }));
  reset.addEventListener("click", () => setView({ start: 0, end: span }));
  scroller.addEventListener("scroll", schedule);

  const resizeObserver = typeof ResizeObserver !== "undefined" ? new ResizeObserver(() => schedule()) : null;
  resizeObserver?.observe(scroller);
  const mediaQuery = window.matchMedia?.(`(resolution: ${window.devicePixelRatio || 1}dppx)`);
  mediaQuery?.addEventListener?.("change", schedule);

  setView(view);

  return {
    el,
    redraw: schedule,
    getView: () => ({ ...view }),
    setView,
    destroy() {
      destroyed = true;
      if (frame) cancelAnimationFrame(frame);
      resizeObserver?.disconnect();
      mediaQuery?.removeEventListener?.("change", schedule);
    },
  };
}
