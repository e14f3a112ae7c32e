// @ts-check
// The hover tooltip of the timeline: an event's name, kind and duration, start, lane, how many
// events a merged box stands for, and its shapes once its details are known; or a counter's value.

import { formatCount, formatInstant, formatReading, formatTime } from "../../model/format.js";
import { node } from "../dom.js";

/** @typedef {import("../../model/view.js").View} View */
/** @typedef {import("../../model/hit.js").Hit} Hit */
/** @typedef {import("../../model/source.js").EventDetails} EventDetails */

/** @param {EventDetails | undefined} d */
function shapesOf(d) {
  for (const [label, text] of d?.fields ?? []) if (/dims|shape/i.test(String(label))) return String(text);
  return null;
}

/**
 * @param {{laneText: (laneId: number) => string, nameText: (nameIdx: number) => string,
 *   kindName: (nameIdx: number) => string, detailsOf: (id: number) => EventDetails | undefined}} opts
 */
export function createTooltip({ laneText, nameText, kindName, detailsOf }) {
  const el = node("div", "gp-popover gp-tooltip");
  el.hidden = true;

  /**
   * @param {string} text
   * @param {string} [className]
   */
  function line(text, className) {
    el.appendChild(node("div", className, text));
  }

  /**
   * Show what `hit` is ({ev} or {counter}) near the pointer, inside `container`.
   * @param {Hit} hit
   * @param {number} clientX
   * @param {number} clientY
   * @param {View} view
   * @param {Element} container
   */
  function show(hit, clientX, clientY, view, container) {
    el.replaceChildren();
    if ("counter" in hit) {
      const { lane, time, value } = hit.counter;
      line(String(lane.label ?? ""), "gp-tooltip-name");
      line(`${formatReading(value, lane.unit ?? "")} from ${formatInstant(time, (view.end - view.start) / 1000)}`);
      line(laneText(lane.id));
    } else {
      const ev = hit.ev;
      line(nameText(ev.name), "gp-tooltip-name");
      const kind = kindName(ev.name);
      line(`${kind ? `${kind} · ` : ""}${formatTime(ev.dur_ns)}`);
      line(`start ${formatInstant(ev.start_ns, (view.end - view.start) / 1000)}`);
      line(laneText(ev.lane));
      if (ev.count > 1) line(`${formatCount(ev.count)} events merged here (longest shown); zoom in`, "gp-muted");
      const shapes = ev.id >= 0 ? shapesOf(detailsOf(ev.id)) : null;
      if (shapes) line(`shapes: ${shapes}`);
    }
    el.hidden = false;
    const rect = container.getBoundingClientRect();
    let left = clientX - rect.left + 12;
    const top = clientY - rect.top + 14;
    const tw = el.offsetWidth;
    if (left + tw > rect.width) left = Math.max(0, clientX - rect.left - tw - 12);
    el.style.left = `${left}px`;
    el.style.top = `${top}px`;
  }

  return {
    el,
    show,
    hide: () => { el.hidden = true; },
    get hidden() {
      return el.hidden;
    },
  };
}
