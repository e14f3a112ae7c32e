// @ts-check
// Decoder for the "GPT1" columnar table written by python/gpuprofile/widget/encoding.py.
//
//   bytes 0..3   "GPT1"
//   bytes 4..7   uint32 LE header length H
//   bytes 8..8+H UTF-8 JSON header {"n", "columns": [{"name", "dtype", "offset"}], "meta"?}
//                (may be padded with trailing spaces; "meta" is any JSON object, {} when absent)
//   then each column's little-endian values at its byte offset (from the buffer start).
//
// Pure: no DOM. The result's typed arrays view the input's memory when the alignment allows,
// otherwise they hold a copy. decodeWire also checks a table's columns against its kind in
// wire_tables.js (generated from python/gpuprofile/widget/wire.py) and types them.

import { WIRE_TABLES } from "./wire_tables.js";

/** @typedef {import("./wire_tables.js").WireColumns} WireColumns */
/**
 * A decoded table of a kind the widget is sent (decodeWire), its columns typed.
 * @template {keyof WireColumns} K
 * @typedef {{n: number, columns: WireColumns[K], meta: TableMeta}} WireTable
 */

const TYPES = {
  float64: Float64Array,
  float32: Float32Array,
  int32: Int32Array,
  uint32: Uint32Array,
  int16: Int16Array,
  uint16: Uint16Array,
  int8: Int8Array,
  uint8: Uint8Array,
};

/** @typedef {keyof typeof TYPES} Dtype */
/**
 * A decoded column: one typed array per column, of its dtype.
 * @typedef {Float64Array | Float32Array | Int32Array | Uint32Array | Int16Array | Uint16Array | Int8Array | Uint8Array} Column
 */
/**
 * What a table's header says beside its columns: any JSON object. The keys the widget reads:
 * segments ([lane, first id, rows] per lane, in row order), merged (rows are coverage boxes),
 * view ([start, end] ns a window covers), bins (the overview's resolution), groups (marks).
 * @typedef {{segments?: [number, number, number][], merged?: boolean, view?: [number, number] | null, bins?: number, groups?: any[], [key: string]: unknown}} TableMeta
 */
/**
 * A decoded table: `n` rows of named columns.
 * @typedef {{n: number, columns: Record<string, Column>, meta: TableMeta}} Table
 */

const MAGIC = "GPT1";

// Typed arrays use the platform's byte order; every engine we target is little-endian, as is
// the format. Checked once so a big-endian host fails loudly rather than drawing garbage.
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * Decode a GPT1 table.
 * @param {DataView|ArrayBuffer|Uint8Array|null|undefined} input
 * @returns {Table}
 */
export function decodeTable(input) {
  const dv = toDataView(input);
  if (dv.byteLength === 0) return { n: 0, columns: {}, meta: {} };
  if (dv.byteLength < 8) {
    throw new Error(`not a GPT1 table: ${dv.byteLength} bytes is shorter than the 8-byte preamble`);
  }
  const magic = String.fromCharCode(
    dv.getUint8(0), dv.getUint8(1), dv.getUint8(2), dv.getUint8(3),
  );
  if (magic !== MAGIC) {
    throw new Error(`not a GPT1 table: bad magic ${JSON.stringify(magic)}`);
  }
  if (!LITTLE_ENDIAN) throw new Error("GPT1 decoding needs a little-endian host");
  const headerLength = dv.getUint32(4, true);
  if (8 + headerLength > dv.byteLength) {
    throw new Error(`GPT1 header length ${headerLength} runs past the end of ${dv.byteLength} bytes`);
  }
  const headerBytes = new Uint8Array(dv.buffer, dv.byteOffset + 8, headerLength);
  let header;
  try {
    header = JSON.parse(new TextDecoder("utf-8").decode(headerBytes));
  } catch (err) {
    throw new Error(`GPT1 header is not valid JSON: ${/** @type {Error} */ (err).message}`);
  }
  const n = header.n;
  if (!Number.isInteger(n) || n < 0 || !Array.isArray(header.columns)) {
    throw new Error("GPT1 header lacks a row count or a column list");
  }
  const meta = header.meta ?? {};
  if (typeof meta !== "object" || Array.isArray(meta)) {
    throw new Error("GPT1 header meta is not an object");
  }
  /** @type {Record<string, Column>} */
  const columns = {};
  for (const spec of header.columns) {
    const Type = TYPES[/** @type {Dtype} */ (spec.dtype)];
    if (!Type) throw new Error(`GPT1 column ${spec.name}: unknown dtype ${spec.dtype}`);
    const size = Type.BYTES_PER_ELEMENT;
    const offset = spec.offset;
    if (!Number.isInteger(offset) || offset < 0 || offset + n * size > dv.byteLength) {
      throw new Error(`GPT1 column ${spec.name}: ${n} x ${spec.dtype} at ${offset} runs past the end`);
    }
    const absolute = dv.byteOffset + offset;
    if (absolute % size === 0) {
      // (The cast: TypeScript cannot pick one constructor of a union for an ArrayBufferLike.)
      columns[spec.name] = new Type(/** @type {ArrayBuffer} */ (dv.buffer), absolute, n);
    } else {
      // Not aligned for this type within the underlying buffer: copy the bytes out first.
      const copy = new Uint8Array(n * size);
      copy.set(new Uint8Array(dv.buffer, absolute, n * size));
      columns[spec.name] = new Type(copy.buffer, 0, n);
    }
  }
  return { n, columns, meta };
}

/**
 * Decode a GPT1 table the widget is sent, of a kind wire.py defines (its `events`, `counters`
 * and `marks` traits, a window, a list of events): its columns are that kind's, in order and
 * of the dtypes it allows. No table at all (an empty buffer) is one of no rows.
 * @template {keyof WireColumns} K
 * @param {DataView|ArrayBuffer|Uint8Array|null|undefined} input
 * @param {K} kind
 * @returns {WireTable<K>}
 */
export function decodeWire(input, kind) {
  const table = decodeTable(input);
  const spec = /** @type {Record<string, Dtype[]>} */ (WIRE_TABLES[kind]);
  if (toDataView(input).byteLength === 0) {
    for (const [name, dtypes] of Object.entries(spec)) {
      if (!name.endsWith("?")) table.columns[name] = new TYPES[dtypes[0]](0);
    }
  }
  const names = Object.keys(table.columns);
  const expected = Object.keys(spec).filter((c) => !c.endsWith("?") || names.includes(c.slice(0, -1)));
  const listed = expected.map((c) => c.replace(/\?$/, ""));
  if (names.join(",") !== listed.join(",")) {
    throw new Error(`GPT1 ${kind} table: columns ${names.join(", ") || "none"}, not ${listed.join(", ")}`);
  }
  expected.forEach((c, k) => {
    const dtype = DTYPE_OF.get(table.columns[listed[k]].constructor);
    if (!dtype || !spec[c].includes(dtype)) {
      throw new Error(`GPT1 ${kind} table: column ${listed[k]} is ${dtype}, not ${spec[c].join(" or ")}`);
    }
  });
  // Checked just above against what the typedef is generated from.
  return { ...table, columns: /** @type {WireColumns[K]} */ (/** @type {unknown} */ (table.columns)) };
}

/**
 * @param {unknown} input
 * @returns {DataView}
 */
function toDataView(input) {
  if (input instanceof DataView) return input;
  if (input instanceof ArrayBuffer) return new DataView(input);
  if (ArrayBuffer.isView(input)) return new DataView(input.buffer, input.byteOffset, input.byteLength);
  if (input == null) return new DataView(new ArrayBuffer(0));
  throw new Error(`cannot decode a GPT1 table from ${Object.prototype.toString.call(input)}`);
}

/** @type {Map<Function, Dtype>} */
const DTYPE_OF = new Map(Object.entries(TYPES).map(([name, Type]) => [Type, /** @type {Dtype} */ (name)]));

/**
 * Encode typed-array columns as a GPT1 table (the inverse of decodeTable). The widget only
 * decodes; this exists so tests and local sources can build tables the way Python does.
 * @param {Record<string, Column>} columns typed arrays of equal length
 * @param {Object} [meta] JSON-serialisable header metadata
 * @returns {Uint8Array}
 */
export function encodeTable(columns, meta) {
  const names = Object.keys(columns);
  const n = names.length ? columns[names[0]].length : 0;
  const dtypes = names.map((name) => {
    const dtype = DTYPE_OF.get(columns[name].constructor);
    if (!dtype) throw new Error(`GPT1 column ${name}: not a supported typed array`);
    if (columns[name].length !== n) throw new Error(`GPT1 column ${name}: length differs`);
    return dtype;
  });
  /** @param {number} x */
  const align = (x) => Math.ceil(x / 8) * 8;
  /** @param {number[]} offsets */
  const headerFor = (offsets) => {
    /** @type {{n: number, columns: {name: string, dtype: Dtype, offset: number}[], meta?: Object}} */
    const header = { n, columns: names.map((name, k) => ({ name, dtype: dtypes[k], offset: offsets[k] })) };
    if (meta !== undefined) header.meta = meta;
    return new TextEncoder().encode(JSON.stringify(header));
  };
  // Offsets depend on the header length and the header holds the offsets: size the header with
  // generous placeholder offsets, then pad the real one with spaces to the same length.
  const reserved = headerFor(names.map(() => 1e12)).length;
  let offset = align(8 + reserved);
  const offsets = names.map((name, k) => {
    const at = offset;
    offset = align(offset + n * TYPES[dtypes[k]].BYTES_PER_ELEMENT);
    return at;
  });
  const header = headerFor(offsets);
  const out = new Uint8Array(offset);
  out.set([0x47, 0x50, 0x54, 0x31], 0); // "GPT1"
  new DataView(out.buffer).setUint32(4, reserved, true);
  out.fill(0x20, 8, 8 + reserved);
  out.set(header, 8);
  names.forEach((name, k) => {
    const src = columns[name];
    const Type = TYPES[dtypes[k]];
    const bytes = new Uint8Array(Type.from(src).buffer);
    out.set(bytes, offsets[k]);
  });
  return out;
}
