// Where the timeline gets what the first table does not hold: detail windows, one event's
// details, a range's aggregates and search results (window, details, range, search ->
// Promise), asked of the Python widget over anywidget's custom messages (the contract's
// "Messages"). Pure: no DOM.

import { decodeTable } from "./decode.js";

/**
 * @param {{send: Function, on: Function, off: Function}} model an anywidget model
 * @param {{timeoutMs?: number}} options a request with no reply after timeoutMs rejects (0: never)
 */
export function createRemoteSource(model, { timeoutMs = 60000 } = {}) {
  let counter = 0;
  let closed = false;
  // Every view of a widget hears every reply: a random name for this view tells them apart.
  const view = `v${Math.random().toString(36).slice(2)}${Date.now().toString(36)}`;
  const pending = new Map(); // request -> {type, resolve, reject, parse, timer}

  function settle(request) {
    const p = pending.get(request);
    if (!p) return null;
    pending.delete(request);
    if (p.timer) clearTimeout(p.timer);
    return p;
  }

  function onMessage(msg, buffers) {
    if (!msg || typeof msg !== "object" || !Number.isInteger(msg.request) || msg.view !== view) return;
    const waiting = pending.get(msg.request);
    if (!waiting || waiting.type !== msg.type) return; // stale, superseded, or not ours
    const p = settle(msg.request);
    if (msg.error) {
      p.reject(new Error(String(msg.error)));
      return;
    }
    try {
      p.resolve(p.parse(msg, buffers ?? []));
    } catch (err) {
      p.reject(err);
    }
  }
  model.on("msg:custom", onMessage);

  function ask(type, fields, parse) {
    if (closed) return Promise.reject(new Error("the timeline is closed"));
    const request = ++counter;
    return new Promise((resolve, reject) => {
      const timer = timeoutMs > 0
        ? setTimeout(() => {
          if (settle(request)) reject(new Error(`no reply from the kernel to the ${type} request in ${Math.round(timeoutMs / 1000)} s`));
        }, timeoutMs)
        : 0;
      pending.set(request, { type, resolve, reject, parse, timer });
      try {
        model.send({ type, request, view, ...fields });
      } catch (err) {
        settle(request);
        reject(err);
      }
    });
  }

  function tableFrom(buffers) {
    return decodeTable(buffers[0] ?? null);
  }

  return {
    /** Resolves with the decoded window table, or null when a newer window request replaced it. */
    window(start, end, width) {
      // Only the newest window matters: earlier ones resolve null now and their replies are dropped.
      for (const [request, p] of pending) {
        if (p.type === "window") {
          settle(request);
          p.resolve(null);
        }
      }
      return ask("window", { start, end, width: Math.round(width) }, (msg, buffers) => {
        const table = tableFrom(buffers);
        if (!Array.isArray(table.meta.view)) table.meta.view = [msg.start ?? start, msg.end ?? end];
        if (table.meta.merged === undefined) table.meta.merged = Boolean(msg.merged);
        return table;
      });
    },
    details(id) {
      return ask("details", { id }, (msg) => msg.details);
    },
    range(start, end) {
      return ask("range", { start, end }, (msg) => msg.range);
    },
    search(pattern, regex) {
      return ask("search", { pattern, regex: Boolean(regex) }, (msg, buffers) => ({
        count: msg.count ?? 0,
        names: msg.names ?? [],
        table: tableFrom(buffers),
      }));
    },
    /** Requests still waiting for a reply. */
    get pending() {
      return pending.size;
    },
    destroy() {
      closed = true;
      model.off("msg:custom", onMessage);
      for (const [request, p] of [...pending]) {
        settle(request);
        p.reject(new Error("the timeline is closed"));
      }
    },
  };
}
