// @ts-check
// The live panel: while the cell runs, elapsed time, steps and the sampler's latest readings
// (GPU utilization, memory, power, process CPU and RSS), which sources are missing and why, and
// what went wrong showing recorded steps, if anything did.
// Updated from the widget's `live` trait, which Python sets from its sampler thread.
//
// For browser tests: root data-live-running ("true"/"false"), data-live-building, data-elapsed-s,
// data-steps; each reading data-reading="name@device" with data-value.

import "./live.css";
import { formatElapsed, readingView, readingsByDevice } from "../model/live.js";
import { formatCount } from "../model/format.js";
import { node } from "./dom.js";

/**
 * The live trait, as Python's sampler sets it (widget/live.py).
 * @typedef {{running?: boolean, building?: boolean, elapsed_s?: number, steps?: number,
 *   readings?: import("../model/live.js").Reading[], missing?: Record<string, string>, errors?: string[]}} LiveState
 */

/** @param {LiveState | null | undefined} live */
export function createLive(live) {
  const el = node("div", "gp-live");

  /** @param {LiveState | null | undefined} next */
  function update(next) {
    const state = next || {};
    el.hidden = !state.readings && !state.running && !state.missing;
    el.dataset.liveRunning = String(Boolean(state.running));
    el.dataset.liveBuilding = String(Boolean(state.building));
    el.dataset.elapsedS = String(state.elapsed_s ?? "");
    el.dataset.steps = String(state.steps ?? "");
    const head = node("div", "gp-live-head");
    const status = state.running ? "running" : state.building ? "building the profile…" : "finished";
    // Once finished, the time is the cell's whole run, which is not the report's "wall" (first
    // to last recorded event): the profiler's start and stop take tens to hundreds of ms.
    const finished = !state.running && !state.building;
    const elapsed = node(
      "span",
      "gp-live-elapsed",
      finished ? `cell ran ${formatElapsed(state.elapsed_s)}, profiler start and stop included` : formatElapsed(state.elapsed_s),
    );
    elapsed.title =
      "How long the cell ran, from the profiler starting to it stopping, its own start-up and " +
      "shutdown included. The report's wall is shorter: first to last recorded event.";
    head.append(
      node("span", state.running || state.building ? "gp-live-dot gp-live-on" : "gp-live-dot", ""),
      node("span", "gp-live-status", status),
      elapsed,
    );
    // No step seen (no gpuprofile.step() or optimizer.step() in the cell): nothing to count.
    if (Number(state.steps) > 0) {
      head.append(node("span", "gp-live-steps", `${formatCount(state.steps)} steps`));
    }
    const body = node("div", "gp-live-devices");
    for (const group of readingsByDevice(state.readings)) {
      const box = node("div", "gp-live-device");
      box.append(node("div", "gp-live-device-label", group.label));
      for (const r of group.readings) {
        const view = readingView(r);
        const row = node("div", "gp-live-reading");
        row.dataset.reading = `${r.name}@${r.device ?? -1}`;
        row.dataset.value = String(r.value ?? "");
        row.append(node("span", "gp-live-name", String(r.name ?? "")), node("span", "gp-live-value", view.text));
        if (view.fill !== null) {
          const bar = node("span", "gp-live-bar");
          const fill = node("span", "gp-live-fill");
          fill.style.width = `${(100 * view.fill).toFixed(1)}%`;
          bar.append(fill);
          row.append(bar);
        }
        box.append(row);
      }
      body.append(box);
    }
    const missing = Object.entries(state.missing || {});
    const notes = node("div", "gp-live-missing");
    for (const [source, reason] of missing) notes.append(node("div", "", `${source}: not sampled (${reason})`));
    const errors = state.errors || [];
    for (const error of errors) notes.append(node("div", "gp-live-error", error));
    el.replaceChildren(head, body, ...(missing.length || errors.length ? [notes] : []));
  }

  update(live);
  return { el, update, destroy() {} };
}
