// @ts-check
// Mouse and keyboard on the timeline: hover (tooltip, details prefetched after a dwell), ctrl+wheel
// zoom and shift/horizontal-wheel pan, drag to pan (middle button, alt, or on the axis) or to
// select a range, click to select an event or toggle a lane group, double-click to zoom to an
// event, Perfetto-style W/S/A/D/0 keys and Escape. What is under a point is the layout's
// (entryAt, hitTest); the view and the range being dragged out are the state's; what a click or
// Escape selects or clears is the timeline's callbacks.

import { keyToView, pan, viewForEvent, wheelZoomFactor, xToTime, zoomAt } from "../../model/view.js";
import { AXIS_H } from "./canvas.js";

const HOVER_DWELL_MS = 150;
/** A click left of this on a rank's header hits its arrow (collapse), right of it focuses. */
export const RANK_ARROW_PX = 22;
const DRAG_THRESHOLD_PX = 4;

/** @typedef {import("../../model/view.js").View} View */
/** @typedef {import("../../model/segments.js").TimelineEvent} TimelineEvent */
/**
 * Event details cached by id (js/model/details_cache.js).
 * @typedef {{has: (id: number) => boolean, get: (id: number) => EventDetails | undefined,
 *   fetch: (id: number) => Promise<EventDetails>}} DetailsCache
 */
/** @typedef {import("../../model/source.js").EventDetails} EventDetails */
/**
 * A drag under way: panning the view and the lanes, or selecting a range from t0.
 * @typedef {{mode: "pan", x: number, y: number, view: View, scrollTop: number, id: number}
 *   | {mode: "select", x: number, y: number, t0: number, moved: boolean, id: number, point: {x: number, y: number}}} Drag
 */

/** @param {EventTarget | null} eventTarget a key's target: an element, when it is one of ours */
function isTyping(eventTarget) {
  const target = /** @type {HTMLElement | null} */ (eventTarget);
  const tag = target?.tagName;
  return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || target?.isContentEditable;
}

/**
 * @param {Object} opts
 * @param {HTMLElement} opts.el the timeline's root (keys)
 * @param {HTMLCanvasElement} opts.canvas
 * @param {HTMLElement} opts.scroller the plot's vertical scroller
 * @param {ReturnType<typeof import("./tooltip.js").createTooltip>} opts.tooltip
 * @param {DetailsCache} opts.detailsCache
 * @param {boolean} opts.canFetchDetails whether hovering may prefetch details
 * @param {Map<number, import("../../model/lanes.js").Lane>} opts.laneById
 * @param {import("./paint.js").TimelineState} opts.state the timeline's state: view, span, minSpan, the range's draft
 * @param {(view: View) => void} opts.setView
 * @param {{labelW: number, plotWidth: () => number}} opts.dims the canvas's columns
 * @param {Pick<ReturnType<typeof import("./layout.js").createLayout>, "entryAt" | "hitTest" | "toggleGroup">} opts.layout
 *   the layout entry at a canvas y, and {ev, lane} or {counter} at a canvas point
 * @param {(ev: TimelineEvent) => void} opts.onSelect a click on an event
 * @param {() => void} opts.onClickEmpty a click on nothing
 * @param {(rank: number) => void} opts.onToggleRank a click on a rank header's arrow
 * @param {(rank: number) => void} opts.onFocusRank a click on the rest of a rank's header
 * @param {(start: number, end: number) => void} opts.onRange a range dragged out
 * @param {() => boolean} opts.onEscape clears something, and says whether it did
 * @param {() => void} opts.schedule repaint
 * @param {() => boolean} opts.isDestroyed
 */
export function attachTimelineInput(opts) {
  const { el, canvas, scroller, tooltip, detailsCache, canFetchDetails, laneById, state, setView, dims, layout } = opts;
  const { schedule, isDestroyed } = opts;
  const { span, minSpan } = state;
  const getView = () => state.view;
  const labelWidth = () => dims.labelW;
  const plotWidth = () => dims.plotWidth();
  const { entryAt, hitTest } = layout;
  /** @type {number | null} plot x of the pointer, for W/S anchoring */
  let mouseX = null;
  /** @type {{clientX: number, clientY: number} | null} for re-rendering the tooltip */
  let lastPointer = null;
  /** @type {TimelineEvent | null} the event under the pointer */
  let hover = null;
  /** @type {Drag | null} */
  let drag = null;
  let dwellTimer = 0;

  /** @param {MouseEvent} e */
  function localPoint(e) {
    const r = canvas.getBoundingClientRect();
    return { x: e.clientX - r.left, y: e.clientY - r.top };
  }

  /** @param {MouseEvent} e */
  function updateHover(e) {
    const p = localPoint(e);
    const labelW = labelWidth();
    mouseX = p.x >= labelW ? p.x - labelW : null;
    lastPointer = { clientX: e.clientX, clientY: e.clientY };
    const hit = hitTest(p.x, p.y);
    const ev = hit && "ev" in hit ? hit.ev : null;
    const changed = (ev?.id ?? null) !== (hover?.id ?? null) || (ev && hover && (ev.start_ns !== hover.start_ns || ev.lane !== hover.lane));
    hover = ev;
    if (hit) tooltip.show(hit, e.clientX, e.clientY, getView(), el);
    else tooltip.hide();
    if (!changed) return;
    schedule();
    clearTimeout(dwellTimer);
    if (ev && ev.id >= 0 && canFetchDetails && !detailsCache.has(ev.id)) {
      const id = ev.id;
      const lane = laneById.get(ev.lane);
      dwellTimer = setTimeout(() => {
        detailsCache.fetch(id).then(
          () => {
            if (isDestroyed() || hover?.id !== id || tooltip.hidden || !lastPointer) return;
            tooltip.show({ ev: hover, lane }, lastPointer.clientX, lastPointer.clientY, getView(), el);
          },
          () => {},
        );
      }, HOVER_DWELL_MS);
    }
  }

  function hideHover() {
    clearTimeout(dwellTimer);
    tooltip.hide();
    mouseX = null;
    if (hover) {
      hover = null;
      schedule();
    }
  }

  function anchorTime() {
    return mouseX === null ? null : xToTime(mouseX, getView(), plotWidth());
  }

  /** @param {WheelEvent} e */
  function onWheel(e) {
    const view = getView();
    const unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? 400 : 1;
    if (e.ctrlKey || e.metaKey) {
      e.preventDefault();
      const p = localPoint(e);
      const x = Math.min(Math.max(p.x - labelWidth(), 0), plotWidth());
      setView(zoomAt(view, xToTime(x, view, plotWidth()), wheelZoomFactor(e.deltaY, e.deltaMode), span, minSpan));
      return;
    }
    const horizontal = e.shiftKey ? e.deltaY || e.deltaX : Math.abs(e.deltaX) > Math.abs(e.deltaY) ? e.deltaX : 0;
    if (horizontal) {
      e.preventDefault();
      setView(pan(view, ((horizontal * unit) / plotWidth()) * (view.end - view.start), span, minSpan));
    }
    // A plain vertical wheel scrolls the lanes natively (and the page at the ends).
  }

  /** @param {PointerEvent} e */
  function onPointerDown(e) {
    scroller.focus({ preventScroll: true });
    const p = localPoint(e);
    const panning = e.button === 1 || (e.button === 0 && (e.altKey || p.y < AXIS_H));
    if (e.button !== 0 && !panning) return;
    if (!panning) {
      const entry = entryAt(p.y);
      if (entry?.kind === "header") {
        layout.toggleGroup(entry.group);
        return;
      }
      if (entry?.kind === "rank" && entry.rank !== undefined) {
        // The arrow collapses or expands the rank; the rest of its header focuses on it.
        if (p.x < RANK_ARROW_PX) opts.onToggleRank(entry.rank);
        else opts.onFocusRank(entry.rank);
        return;
      }
      if (p.x < labelWidth()) return;
    }
    e.preventDefault();
    hideHover();
    const view = getView();
    drag = panning
      ? { mode: "pan", x: e.clientX, y: e.clientY, view, scrollTop: scroller.scrollTop, id: e.pointerId }
      : { mode: "select", x: e.clientX, y: e.clientY, t0: xToTime(p.x - labelWidth(), view, plotWidth()), moved: false, id: e.pointerId, point: p };
    canvas.setPointerCapture?.(e.pointerId);
    if (panning) canvas.classList.add("gp-dragging");
  }

  /** @param {PointerEvent} e */
  function onPointerMove(e) {
    if (!drag) {
      updateHover(e);
      return;
    }
    const dx = e.clientX - drag.x;
    const dy = e.clientY - drag.y;
    if (drag.mode === "pan") {
      setView(pan(drag.view, (-dx / plotWidth()) * (drag.view.end - drag.view.start), span, minSpan));
      scroller.scrollTop = drag.scrollTop - dy;
      return;
    }
    if (!drag.moved && Math.abs(dx) < DRAG_THRESHOLD_PX) return;
    drag.moved = true;
    const p = localPoint(e);
    const x = Math.min(Math.max(p.x - labelWidth(), 0), plotWidth());
    state.setDraft(drag.t0, xToTime(x, getView(), plotWidth()));
    schedule();
  }

  /** @param {PointerEvent} e */
  function onPointerUp(e) {
    if (!drag) return;
    const d = drag;
    drag = null;
    canvas.releasePointerCapture?.(d.id);
    canvas.classList.remove("gp-dragging");
    if (d.mode !== "select") return;
    if (d.moved && state.draft) {
      const { start, end } = state.draft;
      state.clearDraft();
      if (Math.abs(end - start) > 0) opts.onRange(start, end);
      else schedule();
      return;
    }
    const hit = hitTest(d.point.x, d.point.y);
    if (hit && "ev" in hit) opts.onSelect(hit.ev);
    else opts.onClickEmpty();
    updateHover(e);
  }

  /** @param {MouseEvent} e */
  function onDoubleClick(e) {
    const p = localPoint(e);
    const hit = hitTest(p.x, p.y);
    if (!hit || !("ev" in hit)) return;
    setView(viewForEvent(hit.ev.start_ns, hit.ev.dur_ns, span, minSpan, 0.1));
  }

  /** @param {KeyboardEvent} e */
  function onKeyDown(e) {
    if (isTyping(e.target) || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "Escape") {
      if (!opts.onEscape()) return;
      e.preventDefault();
      e.stopPropagation();
      return;
    }
    const next = keyToView(e.key, getView(), { span, minSpan, anchor: anchorTime() });
    if (!next) return;
    e.preventDefault();
    e.stopPropagation();
    setView(next);
  }

  canvas.addEventListener("wheel", onWheel, { passive: false });
  canvas.addEventListener("pointerdown", onPointerDown);
  canvas.addEventListener("pointermove", onPointerMove);
  canvas.addEventListener("pointerup", onPointerUp);
  canvas.addEventListener("pointercancel", onPointerUp);
  canvas.addEventListener("pointerleave", () => { if (!drag) hideHover(); });
  canvas.addEventListener("dblclick", onDoubleClick);
  el.addEventListener("keydown", onKeyDown);
  scroller.addEventListener("focus", () => scroller.classList.add("gp-focused"));
  scroller.addEventListener("blur", () => scroller.classList.remove("gp-focused"));
  scroller.addEventListener("scroll", () => { tooltip.hide(); schedule(); });

  return {
    /** The event under the pointer, or null. */
    get hover() {
      return hover;
    },
    destroy() {
      clearTimeout(dwellTimer);
    },
  };
}
