// @ts-check
// Where the timeline gets what the first table does not hold: detail windows, one event's
// details, a range's aggregates, search results, every instance of a name and the same
// collective on every rank (window, details, range, search, named, collective -> Promise), asked
// of the Python widget over anywidget's custom messages (the contract's "Messages"). Pure: no DOM.

import { decodeWire } from "./decode.js";

/** @typedef {import("./decode.js").Table} Table */
/** @typedef {import("./wire_tables.js").WireColumns} WireColumns */
/** @typedef {import("./decode.js").WireTable<"event_list">} EventList */
/**
 * A custom message from the widget: JSON, so its fields are what Python put there.
 * @typedef {{type?: string, request?: number, view?: string, error?: unknown, [field: string]: any}} Message
 */
/** @typedef {DataView | ArrayBuffer | Uint8Array} Buffer */
/**
 * An event as details name it (the op that launched a kernel, the kernels an op launched).
 * @typedef {{id: number, lane: number, row?: number, start_ns: number, dur_ns: number, name?: string, count?: number}} EventRef
 */
/**
 * One event's details: its timings, the trace's fields as [label, text] pairs, and the events
 * related to it.
 * @typedef {EventRef & {kind?: string, fields?: [string, string][], launch?: EventRef, op?: EventRef, kernels?: EventRef[], kernels_total?: number}} EventDetails
 */
/**
 * A request waiting for its reply.
 * @typedef {{type: string, resolve: (value: any) => void, reject: (err: unknown) => void,
 *   parse: (msg: Message, buffers: Buffer[]) => any, timer: ReturnType<typeof setTimeout> | 0}} Pending
 */

/**
 * @param {{send: (content: object) => void, on: (event: string, fn: (msg: Message, buffers?: Buffer[]) => void) => void,
 *   off: (event: string, fn: (msg: Message, buffers?: Buffer[]) => void) => void}} model an anywidget model
 * @param {{timeoutMs?: number}} [options] a request with no reply after timeoutMs rejects (0: never)
 */
export function createRemoteSource(model, { timeoutMs = 60000 } = {}) {
  let counter = 0;
  let closed = false;
  // Every view of a widget hears every reply: a random name for this view tells them apart.
  const view = `v${Math.random().toString(36).slice(2)}${Date.now().toString(36)}`;
  /** @type {Map<number, Pending>} */
  const pending = new Map();

  /**
   * Forget a request (and its timer); returns what was waiting, or null.
   * @param {number} request
   */
  function settle(request) {
    const p = pending.get(request);
    if (!p) return null;
    pending.delete(request);
    if (p.timer) clearTimeout(p.timer);
    return p;
  }

  /**
   * @param {Message} msg
   * @param {Buffer[]} [buffers]
   */
  function onMessage(msg, buffers) {
    if (!msg || typeof msg !== "object" || !Number.isInteger(msg.request) || msg.view !== view) return;
    const request = /** @type {number} */ (msg.request);
    const waiting = pending.get(request);
    if (!waiting || waiting.type !== msg.type) return; // stale, superseded, or not ours
    const p = /** @type {Pending} */ (settle(request));
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

  /**
   * @template T
   * @param {string} type
   * @param {object} fields
   * @param {(msg: Message, buffers: Buffer[]) => T} parse
   * @returns {Promise<T>}
   */
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

  /**
   * @template {keyof WireColumns} K
   * @param {Buffer[]} buffers
   * @param {K} kind the table's kind (wire_tables.js)
   */
  function tableFrom(buffers, kind) {
    return decodeWire(buffers[0] ?? null, kind);
  }

  return {
    /**
     * Resolves with the decoded window table, or null when a newer window request replaced it.
     * @param {number} start
     * @param {number} end
     * @param {number} width px
     * @returns {Promise<Table | null>}
     */
    window(start, end, width) {
      // Only the newest window matters: earlier ones resolve null now and their replies are dropped.
      for (const [request, p] of pending) {
        if (p.type === "window") {
          settle(request);
          p.resolve(null);
        }
      }
      return ask("window", { start, end, width: Math.round(width) }, (msg, buffers) => {
        const table = tableFrom(buffers, "events");
        if (!Array.isArray(table.meta.view)) table.meta.view = [msg.start ?? start, msg.end ?? end];
        if (table.meta.merged === undefined) table.meta.merged = Boolean(msg.merged);
        return table;
      });
    },
    /**
     * @param {number} id
     * @returns {Promise<EventDetails>}
     */
    details(id) {
      return ask("details", { id }, (msg) => msg.details);
    },
    /**
     * What happened in [start, end] per rank (see range_panel.js), as Python sends it.
     * @param {number} start
     * @param {number} end
     * @returns {Promise<any>}
     */
    range(start, end) {
      return ask("range", { start, end }, (msg) => msg.range);
    },
    /**
     * @param {string} pattern
     * @param {boolean} regex
     * @returns {Promise<{count: number, names: number[], table: EventList}>}
     */
    search(pattern, regex) {
      return ask("search", { pattern, regex: Boolean(regex) }, (msg, buffers) => ({
        count: msg.count ?? 0,
        names: msg.names ?? [],
        table: tableFrom(buffers, "event_list"),
      }));
    },
    /**
     * Every event of one table named `name` on `rank` (a row of the report's top kernels or top
     * ops): how many there are, the id of the longest, and the longest of them (as many as
     * Python sends) as an event table.
     * @param {"kernels" | "ops"} table
     * @param {string} name
     * @param {number} rank
     * @returns {Promise<{count: number, heaviest: number | null, table: EventList}>}
     */
    named(table, name, rank) {
      return ask("named", { table, name, rank }, (msg, buffers) => ({
        count: msg.count ?? 0,
        heaviest: msg.heaviest ?? null,
        table: tableFrom(buffers, "event_list"),
      }));
    },
    /**
     * The collective instance the event `id` is part of, on every rank (widget/collectives.py),
     * or null when it is no matched collective.
     * @param {number} id
     * @returns {Promise<import("./ranks.js").CollectiveInfo | null>}
     */
    collective(id) {
      return ask("collective", { id }, (msg) => msg.collective ?? null);
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
