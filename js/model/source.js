// Where the timeline gets what the first table does not hold: detail windows, one event's
// details, a range's aggregates and search results. Two sources with one interface
// (window, details, range, search -> Promise), see the contract's "Messages":
//
// - createRemoteSource(model): asks the Python widget over anywidget's custom messages.
// - createLocalSource(data): answers from a complete segment table in memory (no kernel needed;
//   details carry what the table knows, not the trace's args).
//
// Pure: no DOM.

import { decodeTable } from "./decode.js";
import { buildSegmentIndex, eventAt, idOfRow, rowOfId, rowRange } from "./segments.js";
import { compileMatcher, matchNames } from "./search.js";

export const SEARCH_LIMIT = 10000;

/**
 * @param {{send: Function, on: Function, off: Function}} model an anywidget model
 * @param {{timeoutMs?: number}} options a request with no reply after timeoutMs rejects (0: never)
 */
export function createRemoteSource(model, { timeoutMs = 60000 } = {}) {
  let counter = 0;
  let closed = false;
  const pending = new Map(); // request -> {type, resolve, reject, parse, timer}

  function settle(request) {
    const p = pending.get(request);
    if (!p) return null;
    pending.delete(request);
    if (p.timer) clearTimeout(p.timer);
    return p;
  }

  function onMessage(msg, buffers) {
    if (!msg || typeof msg !== "object" || !Number.isInteger(msg.request)) return;
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
        model.send({ type, request, ...fields });
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

/**
 * A source over a complete segment table (merged=false).
 * @param {{table, lanes, names, nameKinds, kinds, index?}} data index: a buildSegmentIndex of table
 */
export function createLocalSource(data) {
  const table = data.table;
  const index = data.index ?? buildSegmentIndex(table);
  const lanes = data.lanes ?? [];
  const names = data.names ?? [];
  const laneById = new Map(lanes.map((l) => [l.id, l]));
  const kindOf = (nameIndex) => (data.kinds ?? [])[(data.nameKinds ?? [])[nameIndex]] ?? "";

  function ev(r) {
    const e = eventAt(index, table, r);
    return { id: e.id, name: names[e.name] ?? "", lane: e.lane, row: e.row, start_ns: e.start_ns, dur_ns: e.dur_ns };
  }

  return {
    window() {
      return Promise.resolve(table);
    },
    details(id) {
      const r = rowOfId(index, id);
      if (r < 0) return Promise.reject(new Error(`no event with id ${id}`));
      const e = ev(r);
      const lane = laneById.get(e.lane) ?? {};
      const fields = [];
      if (lane.rank !== undefined) fields.push(["rank", String(lane.rank)]);
      if (lane.group) fields.push(["group", String(lane.group)]);
      if (lane.label) fields.push(["lane", String(lane.label)]);
      return Promise.resolve({
        ...e,
        kind: kindOf(table.columns.name[r]),
        fields,
        launch: null,
        op: null,
        kernels: [],
        kernels_total: 0,
      });
    },
    range(start, end) {
      return Promise.resolve(rangeAggregates(index, table, lanes, names, kindOf, start, end));
    },
    search(pattern, regex) {
      const matcher = compileMatcher(pattern, regex);
      if (matcher?.error) return Promise.reject(new Error(matcher.error));
      return Promise.resolve(searchTable(index, table, names, matcher));
    },
    destroy() {},
  };
}

/** Events whose name matches, in time order: {count, names, table (first SEARCH_LIMIT)}. */
export function searchTable(index, table, names, matcher, limit = SEARCH_LIMIT) {
  const { mask } = matchNames(names, matcher);
  const nameCol = table.columns.name;
  const rows = [];
  for (let r = 0; r < table.n; r++) if (mask[nameCol[r]]) rows.push(r);
  const starts = table.columns.start_ns;
  rows.sort((a, b) => starts[a] - starts[b] || idOfRow(index, a) - idOfRow(index, b));
  const listed = rows.slice(0, limit);
  const events = listed.map((r) => eventAt(index, table, r));
  const matchedNames = [];
  for (let i = 0; i < mask.length; i++) if (mask[i]) matchedNames.push(i);
  return {
    count: rows.length,
    names: matchedNames,
    table: {
      n: events.length,
      columns: {
        id: Uint32Array.from(events, (e) => e.id),
        lane: Uint16Array.from(events, (e) => e.lane),
        row: Uint16Array.from(events, (e) => e.row),
        start_ns: Float64Array.from(events, (e) => e.start_ns),
        dur_ns: Float32Array.from(events, (e) => e.dur_ns),
      },
      meta: {},
    },
  };
}

/**
 * The contract's range aggregates from a complete table: per rank, GPU busy time (the union of
 * GPU-lane events clipped to the range), kernel count, top kernels and top-level ops by clipped
 * time. Kinds come from `kindOf(name index)`.
 */
export function rangeAggregates(index, table, lanes, names, kindOf, start, end) {
  const nameCol = table.columns.name;
  const byRank = new Map();
  const rankOf = (rank) => {
    if (!byRank.has(rank)) byRank.set(rank, { intervals: [], hasGpu: false, kernels: 0, topKernels: new Map(), topOps: new Map() });
    return byRank.get(rank);
  };
  const add = (map, name, ns) => {
    const cur = map.get(name) ?? { name, count: 0, total_ns: 0 };
    cur.count += 1;
    cur.total_ns += ns;
    map.set(name, cur);
  };
  for (const lane of lanes) {
    if (lane.kind === "counter") continue;
    const acc = rankOf(lane.rank ?? 0);
    if (lane.kind === "gpu") acc.hasGpu = true;
    for (const chunk of index.lanes.get(lane.id) ?? []) {
      for (let row = 0; row < chunk.rows; row++) {
        const [k0, k1] = rowRange(index, chunk.lo[row], chunk.hi[row], start, end);
        for (let k = k0; k < k1; k++) {
          const s = Math.max(start, index.start[k]);
          const e = Math.min(end, index.start[k] + index.dur[k]);
          if (e < s) continue;
          const nameIndex = nameCol[index.perm[k]];
          const kind = kindOf(nameIndex);
          if (lane.kind === "gpu") {
            acc.intervals.push([s, e]);
            if (kind === "kernel") {
              acc.kernels += 1;
              add(acc.topKernels, names[nameIndex] ?? "", e - s);
            }
          } else if (kind === "op" && row === 0) {
            add(acc.topOps, names[nameIndex] ?? "", e - s);
          }
        }
      }
    }
  }
  const top = (map) => [...map.values()].sort((a, b) => b.total_ns - a.total_ns || a.name.localeCompare(b.name)).slice(0, 5);
  const ranks = [...byRank.entries()].sort((a, b) => a[0] - b[0]).map(([rank, acc]) => {
    const busy = unionLength(acc.intervals);
    const len = end - start;
    return {
      rank,
      gpu_busy_ns: acc.hasGpu ? busy : null,
      gpu_busy_pct: acc.hasGpu && acc.intervals.length && len > 0 ? (100 * busy) / len : null,
      kernels: acc.kernels,
      top_kernels: top(acc.topKernels),
      top_ops: top(acc.topOps),
    };
  });
  return { ranks };
}

/** Total length covered by a list of [start, end] intervals. */
export function unionLength(intervals) {
  const sorted = [...intervals].sort((a, b) => a[0] - b[0]);
  let total = 0;
  let curS = -Infinity;
  let curE = -Infinity;
  for (const [s, e] of sorted) {
    if (s > curE) {
      if (curE > curS) total += curE - curS;
      curS = s;
      curE = e;
    } else if (e > curE) curE = e;
  }
  if (curE > curS) total += curE - curS;
  return total;
}
