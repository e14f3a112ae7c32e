// @ts-check
// Detail windows for large traces (complete=false): once the view settles, ask the source for
// the visible window when the overview (or the window already held) is too coarse for it, and
// keep the latest reply, indexed, for painting and hit testing. Replies that a newer request has
// overtaken are dropped.

import { buildSegmentIndex } from "../../model/segments.js";
import { planWindowRequest } from "../../model/view.js";

const WINDOW_DEBOUNCE_MS = 80;

/** @typedef {import("../../model/timeline_data.js").DetailWindow} DetailWindow */
/** @typedef {import("../../model/source.js").Table} Table */
/** A window asked for: its plan, and the token that tells a stale reply. @typedef {{start: number, end: number, width: number, merged: true, token: number}} PendingWindow */

/**
 * @param {{enabled: boolean, source: {window?: (start: number, end: number, width: number) => Promise<Table | null>} | null,
 *   span: number, overviewBins?: number, getView: () => import("../../model/view.js").View,
 *   plotWidth: () => number, onChange: () => void, onRequest: (count: number) => void,
 *   setStatus: (text: string, bad?: boolean) => void, statusIsBad: () => boolean,
 *   isDestroyed: () => boolean}} opts
 *   plotWidth: 0 until the canvas has been laid out; onChange: something to repaint.
 */
export function createWindowLoader({ enabled, source, span, overviewBins, getView, plotWidth, onChange, onRequest, setStatus, statusIsBad, isDestroyed }) {
  /** @type {(DetailWindow & {merged: boolean, width: number}) | null} */
  let detail = null;
  /** @type {PendingWindow | null} */
  let pending = null;
  let token = 0;
  let timer = 0;
  let requests = 0;

  function schedule() {
    if (!enabled || !source?.window || isDestroyed()) return;
    clearTimeout(timer);
    timer = setTimeout(request, WINDOW_DEBOUNCE_MS);
  }

  function request() {
    const width = plotWidth();
    if (isDestroyed() || !(width > 0)) return;
    const plan = planWindowRequest(getView(), width, span, pending ?? detail, { overviewBins });
    if (!plan || !source?.window) return; // schedule() asks only when there is a source
    const mine = ++token;
    pending = { ...plan, merged: true, token: mine };
    requests += 1;
    onRequest(requests);
    onChange();
    source.window(plan.start, plan.end, plan.width).then(
      (reply) => {
        if (isDestroyed() || mine !== token || !reply) return; // a newer request owns the view
        pending = null;
        try {
          const index = buildSegmentIndex(reply);
          const v = index.view ?? [plan.start, plan.end];
          detail = { index, table: reply, start: v[0], end: v[1], merged: index.merged, width: plan.width };
          if (statusIsBad()) setStatus("");
        } catch (err) {
          setStatus(`detail window unreadable: ${/** @type {Error} */ (err).message}`, true);
        }
        onChange();
        schedule(); // the view may have moved on while this was in flight
      },
      (err) => {
        if (isDestroyed() || mine !== token) return;
        pending = null;
        setStatus(`detail window failed: ${err.message}`, true);
        onChange();
      },
    );
  }

  return {
    /** The window held, or null. */
    get detail() {
      return detail;
    },
    /** The window asked for and not yet arrived, or null. */
    get pending() {
      return pending;
    },
    schedule,
    destroy() {
      clearTimeout(timer);
    },
  };
}
