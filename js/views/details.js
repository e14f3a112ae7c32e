// @ts-check
// The details panel of a selected timeline event: name, kind, timings, the trace's fields, and
// the related events (the runtime call that launched it, its op, the kernels it launched) as
// buttons that jump there. Every string from the trace goes in through textContent.

import { formatInstant, formatTime, num } from "../model/format.js";
import { button, node } from "./dom.js";

/** @typedef {import("../model/source.js").EventRef} EventRef */
/** @typedef {import("../model/source.js").EventDetails} EventDetails */
/** An event to jump to: one the details name, or a rank's part of a collective. @typedef {EventRef | import("../model/ranks.js").CollectiveRank} JumpTarget */

/**
 * @param {{onJump?: (ev: JumpTarget) => void, onClose?: () => void, laneLabel?: (laneId: number) => string}} hooks
 */
export function createDetails(hooks = {}) {
  const laneLabel = hooks.laneLabel ?? ((/** @type {number} */ id) => `lane ${id}`);
  const el = node("div", "gp-details");
  el.hidden = true;
  const head = node("div", "gp-details-head");
  const title = node("div", "gp-details-title");
  const close = button("×", "Close the details", "gp-button gp-details-close");
  head.append(title, close);
  const body = node("div", "gp-details-body");
  el.append(head, body);

  close.addEventListener("click", () => {
    el.hidden = true;
    hooks.onClose?.();
  });

  /** @param {{start_ns: unknown, dur_ns: unknown}} ev */
  function timings(ev) {
    const start = num(ev.start_ns);
    const dur = num(ev.dur_ns);
    const end = start === null || dur === null ? null : start + dur;
    return `${formatTime(dur)} · from ${formatInstant(start)} to ${formatInstant(end)}`;
  }

  /** @param {EventRef} ev */
  function evButton(ev) {
    const b = node("button", "gp-details-ev");
    b.type = "button";
    b.append(node("span", "gp-details-ev-name", String(ev.name ?? "")));
    b.append(node("span", "gp-details-ev-meta", `${formatTime(ev.dur_ns)} · ${laneLabel(ev.lane)} · at ${formatInstant(ev.start_ns)}`));
    b.title = "Select and zoom to this event";
    b.addEventListener("click", () => hooks.onJump?.(ev));
    return b;
  }

  /**
   * @param {string} label
   * @param {Node[]} children
   */
  function section(label, children) {
    const s = node("div", "gp-details-section");
    s.append(node("div", "gp-details-label", label));
    for (const c of children) s.append(c);
    body.append(s);
  }

  return {
    el,
    /**
     * @param {{start_ns: unknown, dur_ns: unknown}} ev
     * @param {unknown} name
     */
    showLoading(ev, name) {
      el.hidden = false;
      title.textContent = String(name ?? "");
      body.replaceChildren(node("div", "gp-details-line", timings(ev)), node("div", "gp-muted", "loading details…"));
    },
    /** @param {EventDetails} d */
    show(d) {
      el.hidden = false;
      title.textContent = String(d.name ?? "");
      body.replaceChildren();
      body.append(node("div", "gp-details-line", `${d.kind ?? ""} · ${laneLabel(d.lane)}${d.row ? ` · row ${d.row}` : ""}`));
      body.append(node("div", "gp-details-line", timings(d)));
      const fields = Array.isArray(d.fields) ? d.fields : [];
      if (fields.length) {
        const table = node("table", "gp-table gp-details-fields");
        const tbody = node("tbody");
        for (const [label, text] of fields) {
          const tr = node("tr");
          tr.append(node("th", "", String(label)), node("td", "gp-details-value", String(text)));
          tbody.append(tr);
        }
        table.append(tbody);
        body.append(table);
      }
      if (d.launch) section("launched by", [evButton(d.launch)]);
      if (d.op) section("op", [evButton(d.op)]);
      const kernels = Array.isArray(d.kernels) ? d.kernels : [];
      if (kernels.length) {
        const total = Number(d.kernels_total) || kernels.length;
        const label = total > kernels.length ? `launched ${total} GPU events (first ${kernels.length})` : `launched ${total} GPU event${total === 1 ? "" : "s"}`;
        const list = node("div", "gp-details-list");
        for (const k of kernels) list.append(evButton(k));
        section(label, [list]);
      }
    },
    /**
     * The same collective on every rank ({heading, rows}, ranks.js collectiveRows).
     * @param {NonNullable<ReturnType<typeof import("../model/ranks.js").collectiveRows>>} view
     */
    showCollective(view) {
      const list = node("div", "gp-details-list gp-details-collective");
      for (const r of view.rows) {
        const b = node("button", `gp-details-ev${r.last ? " gp-details-last" : ""}`);
        b.type = "button";
        b.dataset.rank = String(r.rank);
        b.append(node("span", "gp-details-ev-name", r.text), node("span", "gp-details-ev-meta", r.meta));
        const ev = r.ev;
        if (ev) {
          b.title = "Select and zoom to this rank's part";
          b.addEventListener("click", () => hooks.onJump?.(ev));
        } else {
          b.disabled = true;
          b.title = "This rank's event is not on the timeline";
        }
        list.append(b);
      }
      section(view.heading, [list]);
    },
    /**
     * @param {unknown} heading
     * @param {unknown} text
     */
    showMessage(heading, text) {
      el.hidden = false;
      title.textContent = String(heading ?? "");
      body.replaceChildren(node("div", "gp-muted", String(text ?? "")));
    },
    hide() {
      el.hidden = true;
    },
    destroy() {
      el.remove();
    },
  };
}
