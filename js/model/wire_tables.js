// @ts-check
// Generated from python/gpuprofile/widget/wire.py by
// `python -m gpuprofile.widget.wire --write`: do not edit by hand.

/**
 * The `events` trait and each window: real events lane by lane (meta.segments), or coverage boxes with their count of events (meta.merged).
 * @typedef {object} EventsColumns
 * @property {Float64Array} start_ns
 * @property {Float32Array} dur_ns
 * @property {Uint8Array | Uint16Array | Uint32Array} name
 * @property {Uint8Array | Uint16Array | Uint32Array} row
 * @property {Uint32Array} [count]
 */

/**
 * The `counters` trait: each counter lane's samples (meta.segments).
 * @typedef {object} CountersColumns
 * @property {Float64Array} time_ns
 * @property {Float64Array} value
 */

/**
 * The `marks` trait: the events of each hint's evidence and roofline point, group by group (meta.groups).
 * @typedef {object} MarksColumns
 * @property {Uint32Array} group
 * @property {Uint32Array} id
 * @property {Uint16Array} lane
 * @property {Uint16Array} row
 * @property {Float64Array} start_ns
 * @property {Float32Array} dur_ns
 * @property {Uint32Array} name
 */

/**
 * A list of events in reply to a request (search hits, a roofline point's events).
 * @typedef {object} EventListColumns
 * @property {Uint32Array} id
 * @property {Uint16Array} lane
 * @property {Uint16Array} row
 * @property {Float64Array} start_ns
 * @property {Float32Array} dur_ns
 */

/** @typedef {{events: EventsColumns, counters: CountersColumns, marks: MarksColumns, event_list: EventListColumns}} WireColumns */

/** Each table's columns in order (name?: some lack it), with the dtypes each may have. */
export const WIRE_TABLES = {
  events: {
    "start_ns": ["float64"],
    "dur_ns": ["float32"],
    "name": ["uint8", "uint16", "uint32"],
    "row": ["uint8", "uint16", "uint32"],
    "count?": ["uint32"],
  },
  counters: {
    "time_ns": ["float64"],
    "value": ["float64"],
  },
  marks: {
    "group": ["uint32"],
    "id": ["uint32"],
    "lane": ["uint16"],
    "row": ["uint16"],
    "start_ns": ["float64"],
    "dur_ns": ["float32"],
    "name": ["uint32"],
  },
  event_list: {
    "id": ["uint32"],
    "lane": ["uint16"],
    "row": ["uint16"],
    "start_ns": ["float64"],
    "dur_ns": ["float32"],
  },
};
