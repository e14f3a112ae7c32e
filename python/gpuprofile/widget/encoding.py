"""The one place where tables become bytes for the browser (and back, for tests).

Format "GPT1", little-endian, readable in JS with typed arrays and no WebAssembly:

    bytes 0..3   b"GPT1"
    bytes 4..7   uint32 header length H
    bytes 8..    UTF-8 JSON header {"n": rows, "columns": [{"name", "dtype", "offset"}, ...],
                 "meta": {...}} ("meta" optional: what the rows are, e.g. their lane segments)
    then each column's values, starting at its byte offset (a multiple of 8 from the start).

Times are offsets in nanoseconds from the trace start, never absolute clocks.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from typing import Any

import numpy as np

MAGIC = b"GPT1"
DTYPES = ("float64", "float32", "int32", "uint32", "int16", "uint16", "int8", "uint8")
_ALIGN = 8


def smallest_uint(max_value: int) -> type[np.unsignedinteger[Any]]:
    """The narrowest unsigned dtype (8, 16 or 32 bits) whose largest value exceeds max_value:
    the largest value stays free (for "none"), as the contract's "uint8 if max row < 255"."""
    for dtype in (np.uint8, np.uint16, np.uint32):
        if max_value < np.iinfo(dtype).max:
            return dtype
    raise ValueError(f"{max_value} does not fit 32 bits")


def position_type(count: int) -> type[np.signedinteger[Any]]:
    """The integer type of positions among ``count`` items, -1 for none included: int32 (int64
    only past 2**31 items), so that columns kept per event take half the memory."""
    return np.int32 if count < 2**31 else np.int64


def encode_table(columns: Mapping[str, np.ndarray], meta: Mapping[str, Any] | None = None) -> bytes:
    lengths = {len(v) for v in columns.values()}
    if len(lengths) > 1:
        raise ValueError(f"columns differ in length: {sorted(lengths)}")
    n = lengths.pop() if lengths else 0
    arrays = {name: np.ascontiguousarray(values) for name, values in columns.items()}
    for name, values in arrays.items():
        if values.dtype.name not in DTYPES:
            raise ValueError(f"column {name!r} has dtype {values.dtype}, not one of {DTYPES}")
    # The header holds the offsets, which depend on its length: reserve room for the largest
    # offsets, then pad the real header with spaces (JSON ignores them).
    specs = [{"name": k, "dtype": v.dtype.name, "offset": 10**15} for k, v in arrays.items()]
    meta_json = dict(meta) if meta else None
    reserved = len(_header(n, specs, meta_json))
    offset = _aligned(8 + reserved)
    for spec, values in zip(specs, arrays.values()):
        spec["offset"] = offset
        offset = _aligned(offset + values.nbytes)
    header = _header(n, specs, meta_json).ljust(reserved)
    out = bytearray(offset)
    out[0:4] = MAGIC
    out[4:8] = struct.pack("<I", len(header))
    out[8 : 8 + len(header)] = header
    for spec, values in zip(specs, arrays.values()):
        start = spec["offset"]
        assert isinstance(start, int)
        out[start : start + values.nbytes] = values.astype(values.dtype.newbyteorder("<")).tobytes()
    return bytes(out)


def decode_table(data: bytes) -> dict[str, np.ndarray]:
    header = read_header(data)
    n = header["n"]
    return {
        spec["name"]: np.frombuffer(
            data, dtype=np.dtype(spec["dtype"]).newbyteorder("<"), count=n, offset=spec["offset"]
        )
        for spec in header["columns"]
    }


def decode_meta(data: bytes) -> dict[str, Any]:
    """The header's "meta" object ({} when the table has none)."""
    meta = read_header(data).get("meta") or {}
    assert isinstance(meta, dict)
    return meta


def read_header(data: bytes) -> dict[str, Any]:
    """The JSON header of a GPT1 table: n (rows), columns, meta."""
    if data[:4] != MAGIC:
        raise ValueError("not a GPT1 table: bad magic")
    (header_len,) = struct.unpack("<I", data[4:8])
    header = json.loads(data[8 : 8 + header_len])
    assert isinstance(header, dict)
    return header


def _header(n: int, specs: list[dict[str, object]], meta: dict[str, Any] | None) -> bytes:
    header: dict[str, Any] = {"n": n, "columns": specs}
    if meta is not None:
        header["meta"] = meta
    # allow_nan=False: the browser's JSON.parse rejects NaN, so fail here instead.
    return json.dumps(header, separators=(",", ":"), allow_nan=False).encode()


def _aligned(offset: int) -> int:
    return (offset + _ALIGN - 1) // _ALIGN * _ALIGN
