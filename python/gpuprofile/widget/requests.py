"""What the browser asks the kernel for: a window of events, one event's details, a range's
summary, a name search. Pure functions of the prepared timeline data and the Trace, each
returning (reply, buffers) as ProfileWidget sends them (the wire contract, version 2).

Each request is answered from sorted arrays with binary searches; indexes the first request of
a kind needs (correlation lookups, the time order) are built then and kept in data.cache.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from gpuprofile.analyses.intervals import union_length
from gpuprofile.trace.model import NO_ID, Trace
from gpuprofile.widget.encoding import encode_table
from gpuprofile.widget.marks import gid_of_row, global_ids
from gpuprofile.widget.timeline import (
    KIND_TABLES,
    KINDS,
    TimelineData,
    merged_columns,
    segment_columns,
    window_ids,
)

if TYPE_CHECKING:
    from gpuprofile.analyses.context import Analysis

DETAIL_LIMIT = 100_000
SEARCH_LIMIT = 10_000
MAX_KERNELS = 50
TOP = 5
MAX_BINS = 16_384
_GPU_KINDS = (2, 3, 4)
_CORRELATION_BITS = 40

Reply = tuple[dict[str, Any], list[bytes]]


@dataclass(eq=False)
class Source:
    data: TimelineData
    trace: Trace
    analysis: Analysis | None = None


class BadRequest(ValueError):
    """A request the browser should not have sent: the reply says why, in one line."""


def handle(source: Source, message: Mapping[str, Any]) -> Reply:
    """Answer one message; any failure becomes an error reply, never an exception."""
    kind = message.get("type")
    base = {"type": kind, "request": message.get("request")}
    try:
        handler = HANDLERS.get(str(kind))
        if handler is None:
            raise BadRequest(f"unknown request type {kind!r}")
        reply, buffers = handler(source, message)
    except Exception as err:  # the browser shows it; a request must never kill the kernel
        text = " ".join(str(err).split()) or type(err).__name__
        return {**base, "error": text}, []
    return {**base, **reply}, buffers


# ---------------------------------------------------------------------------------------------
# window


def window(source: Source, message: Mapping[str, Any]) -> Reply:
    data = source.data
    t0, t1 = _span(message)
    width = int(_number(message, "width", 1000))
    ids = window_ids(data, t0, t1)
    if len(ids) <= DETAIL_LIMIT:
        columns, meta = segment_columns(data, ids, (t0, t1))
    else:
        columns, meta = merged_columns(data, ids, (t0, t1), max(1, min(2 * width, MAX_BINS)))
    return (
        {"start": t0, "end": t1, "merged": meta["merged"]},
        [encode_table(columns, meta)],
    )


# ---------------------------------------------------------------------------------------------
# details


def details(source: Source, message: Mapping[str, Any]) -> Reply:
    data, trace = source.data, source.trace
    gid = _event_id(data, message)
    kind = int(data.kind[gid])
    table = trace.table(KIND_TABLES[kind])
    record = table.iloc[int(data.source[gid])]
    launch: int | None = None
    op: int | None = None
    launched = np.empty(0, np.int64)
    if kind in _GPU_KINDS:
        launch = _launch_of(source, record)
        op = _kernel_op(source, record) if kind == KINDS.index("kernel") else None
        if op is None and launch is not None:
            op = _enclosing_op(source, launch)
    elif kind == KINDS.index("runtime"):
        op = _enclosing_op(source, gid)
        launched = _launched_by_calls(source, np.array([gid]))
    else:
        launched = _launched_by_op(source, gid)
    launched = launched[np.argsort(data.start[launched], kind="stable")]
    info = {
        **_event(data, gid),
        "kind": KINDS[kind],
        "fields": _fields(source, gid, kind, record),
        "launch": None if launch is None else _event(data, launch),
        "op": None if op is None else _event(data, op),
        "kernels": [_event(data, int(k)) for k in launched[:MAX_KERNELS].tolist()],
        "kernels_total": len(launched),
    }
    return {"id": gid, "details": info}, []


def _event(data: TimelineData, gid: int) -> dict[str, Any]:
    return {
        "id": gid,
        "name": data.names[int(data.name[gid])],
        "lane": int(data.lane[gid]),
        "row": int(data.row[gid]),
        "start_ns": float(data.start[gid]),
        "dur_ns": float(data.end[gid] - data.start[gid]),
    }


def _fields(source: Source, gid: int, kind: int, record: pd.Series) -> list[list[str]]:
    lane = source.data.lanes[int(source.data.lane[gid])]
    fields: list[tuple[str, Any]] = [("rank", str(int(record["rank"])))]
    if kind in _GPU_KINDS:
        fields += [("device", int(record["device"])), ("stream", int(record["stream"]))]
    else:
        fields += [("thread", lane["label"]), ("category", record["category"])]
    if kind == KINDS.index("op"):
        fields += [
            ("Input Dims", record["input_dims"]),
            ("input types", record["input_types"]),
            ("concrete inputs", record["concrete_inputs"]),
            ("FLOPs (recorded)", record["flops"]),
        ]
    if kind == KINDS.index("kernel"):
        fields += [
            ("grid", _triple(record, "grid")),
            ("block", _triple(record, "block")),
            ("registers per thread", record["registers_per_thread"]),
            ("shared memory", _bytes(record["shared_memory"])),
            ("occupancy", record["occupancy"]),
            ("blocks per SM", record["blocks_per_sm"]),
        ]
    if kind == KINDS.index("memcpy"):
        fields += [("copy kind", record["kind"]), ("pinned", "yes" if record["pinned"] else "no")]
    if kind in (KINDS.index("memcpy"), KINDS.index("memset")):
        fields.append(("bytes", _bytes(record["bytes"])))
    if kind != KINDS.index("op"):
        fields.append(("correlation", record["correlation"]))
    fields.append(("external id", record["external_id"]))
    return [[label, text] for label, value in fields if (text := _text(value))]


def _text(value: Any) -> str:
    """A field's value as text, or "" when unknown (NO_ID, NaN, None, empty)."""
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return ""
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return "" if int(value) == NO_ID else str(int(value))
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.6g}"
    return str(value)


def _triple(record: pd.Series, prefix: str) -> str:
    values = [int(record[f"{prefix}_{axis}"]) for axis in "xyz"]
    if all(v == NO_ID for v in values):
        return ""
    return " x ".join("?" if v == NO_ID else str(v) for v in values)


def _bytes(value: Any) -> str:
    return "" if int(value) == NO_ID else f"{int(value):,} B"


def _correlation_key(rank: np.ndarray, correlation: np.ndarray) -> np.ndarray:
    return (rank.astype(np.int64) << _CORRELATION_BITS) | (
        correlation.astype(np.int64) & ((1 << _CORRELATION_BITS) - 1)
    )


def _by_correlation(source: Source, tables: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(sorted (rank, correlation) keys, global ids in that order, ties by time) of the events
    of the given tables that have a correlation id."""
    cache_key = "corr:" + ",".join(tables)
    data = source.data
    if cache_key not in data.cache:
        keys, gids = [], []
        for name in tables:
            table = source.trace.table(name)
            known = table["correlation"].to_numpy() != NO_ID
            keys.append(
                _correlation_key(
                    table["rank"].to_numpy()[known], table["correlation"].to_numpy()[known]
                )
            )
            gids.append(gid_of_row(data, source.trace, name)[known])
        key, gid = np.concatenate(keys), np.concatenate(gids)
        order = np.lexsort((data.start[gid], key))
        data.cache[cache_key] = (key[order], gid[order])
    result: tuple[np.ndarray, np.ndarray] = data.cache[cache_key]
    return result


def _launch_of(source: Source, record: pd.Series) -> int | None:
    if int(record["correlation"]) == NO_ID:
        return None
    keys, gids = _by_correlation(source, ("runtime",))
    key = _correlation_key(np.array([record["rank"]]), np.array([record["correlation"]]))[0]
    at = int(np.searchsorted(keys, key))
    return int(gids[at]) if at < len(keys) and keys[at] == key else None


def _kernel_op(source: Source, record: pd.Series) -> int | None:
    """The op the importer linked the kernel to (the innermost aten op around its launch)."""
    if int(record["op_id"]) == NO_ID:
        return None
    gid = int(global_ids(source.data, source.trace, "ops", [int(record["op_id"])])[0])
    return gid if gid >= 0 else None


def _enclosing_op(source: Source, gid: int) -> int | None:
    """The innermost op around an event on its thread: the last op before it in its lane that
    has not ended by the event's end, preferring aten ops (category cpu_op) to annotations.

    Searches backwards in growing chunks; a lane is sorted by start, so the first hit is the
    innermost. Row 0 has nothing around it."""
    data = source.data
    if data.row[gid] == 0:
        return None
    aten = _cached(data, "cpu_op", lambda: _cpu_op_mask(source))
    lo = int(data.lane_lo[data.lane[gid]])
    end, row = data.end[gid], data.row[gid]
    fallback = None
    chunk = 256
    hi = gid
    while hi > lo:
        first = max(lo, hi - chunk)
        at = slice(first, hi)
        encloses = (
            (data.kind[at] == KINDS.index("op")) & (data.end[at] >= end) & (data.row[at] < row)
        )
        hits = first + np.flatnonzero(encloses)
        preferred = hits[aten[hits]]
        if len(preferred):
            return int(preferred[-1])
        if fallback is None and len(hits):
            fallback = int(hits[-1])
        hi = first
        chunk *= 16
    return fallback


def _cpu_op_mask(source: Source) -> np.ndarray:
    """Per event: is it an aten op (category cpu_op)?"""
    data = source.data
    mask = np.zeros(data.total, bool)
    ops = source.trace.ops
    if len(ops):
        gids = gid_of_row(data, source.trace, "ops")
        mask[gids[(ops["category"] == "cpu_op").to_numpy() & (gids >= 0)]] = True
    return mask


def _launched_by_calls(source: Source, calls: np.ndarray) -> np.ndarray:
    """GPU events launched by the given runtime calls (same rank and correlation id)."""
    runtime = source.trace.runtime
    rows = source.data.source[calls]
    correlation = runtime["correlation"].to_numpy()[rows]
    known = correlation != NO_ID
    if not known.any():
        return np.empty(0, np.int64)
    wanted = np.unique(
        _correlation_key(runtime["rank"].to_numpy()[rows][known], correlation[known])
    )
    keys, gids = _by_correlation(source, ("kernels", "memcpy", "memset"))
    lo = np.searchsorted(keys, wanted, side="left")
    hi = np.searchsorted(keys, wanted, side="right")
    if not (hi > lo).any():
        return np.empty(0, np.int64)
    return np.concatenate([gids[a:b] for a, b in zip(lo.tolist(), hi.tolist()) if b > a])


def _launched_by_op(source: Source, gid: int) -> np.ndarray:
    """GPU events launched by the runtime calls inside an op (on its thread, within its time)."""
    data = source.data
    lo, hi = int(data.lane_lo[data.lane[gid]]), int(data.lane_hi[data.lane[gid]])
    first = gid + 1
    last = lo + int(np.searchsorted(data.start[lo:hi], data.end[gid], side="right"))
    inside = np.arange(first, max(first, last))
    calls = inside[
        (data.kind[inside] == KINDS.index("runtime")) & (data.end[inside] <= data.end[gid])
    ]
    return _launched_by_calls(source, calls) if len(calls) else np.empty(0, np.int64)


# ---------------------------------------------------------------------------------------------
# range


def range_summary(source: Source, message: Mapping[str, Any]) -> Reply:
    data = source.data
    t0, t1 = _span(message)
    ranks = []
    for rank in sorted({int(lane["rank"]) for lane in data.lanes} | set(source.trace.ranks)):
        gpu_lanes = [x["id"] for x in data.lanes if x["rank"] == rank and x["kind"] == "gpu"]
        cpu_lanes = [x["id"] for x in data.lanes if x["rank"] == rank and x["kind"] == "cpu"]
        gpu = window_ids(data, t0, t1, gpu_lanes)
        g_start, g_end = _clipped(data, gpu, t0, t1)
        # Busy: the union over streams, as the report's GPU time (analyses/intervals.py).
        busy = union_length(g_start, g_end)
        kernels = gpu[data.kind[gpu] == KINDS.index("kernel")]
        cpu = window_ids(data, t0, t1, cpu_lanes)
        top_level_ops = cpu[(data.kind[cpu] == KINDS.index("op")) & (data.row[cpu] == 0)]
        length = t1 - t0
        ranks.append(
            {
                "rank": rank,
                "gpu_busy_ns": busy if gpu_lanes else None,
                "gpu_busy_pct": (100.0 * busy / length if length > 0 else 0.0)
                if gpu_lanes
                else None,
                "kernels": len(kernels),
                "top_kernels": _top_names(data, kernels, t0, t1),
                "top_ops": _top_names(data, top_level_ops, t0, t1),
            }
        )
    return {"start": t0, "end": t1, "range": {"ranks": ranks}}, []


def _clipped(
    data: TimelineData, ids: np.ndarray, t0: float, t1: float
) -> tuple[np.ndarray, np.ndarray]:
    """Integer ns intervals of the events, clipped to [t0, t1]."""
    lo, hi = int(np.floor(t0)), int(np.ceil(t1))
    start = np.clip(data.start[ids].astype(np.int64), lo, hi)
    end = np.clip(data.end[ids].astype(np.int64), lo, hi)
    return start, end


def _top_names(data: TimelineData, ids: np.ndarray, t0: float, t1: float) -> list[dict[str, Any]]:
    if not len(ids):
        return []
    start, end = _clipped(data, ids, t0, t1)
    names, inverse = np.unique(data.name[ids], return_inverse=True)
    total = np.bincount(inverse, weights=end - start, minlength=len(names))
    count = np.bincount(inverse, minlength=len(names))
    order = np.lexsort((names, -count, -total))[:TOP]
    return [
        {"name": data.names[int(names[i])], "count": int(count[i]), "total_ns": int(total[i])}
        for i in order.tolist()
    ]


# ---------------------------------------------------------------------------------------------
# search


def search(source: Source, message: Mapping[str, Any]) -> Reply:
    data = source.data
    pattern = str(message.get("pattern", ""))
    if message.get("regex"):
        try:
            compiled = re.compile(pattern)
        except re.error as err:
            raise BadRequest(f"bad regular expression {pattern!r}: {err}") from None
        matches: Callable[[str], bool] = lambda name: compiled.search(name) is not None  # noqa: E731
    else:
        needle = pattern.casefold()
        matches = lambda name: needle in name.casefold()  # noqa: E731
    hit_names = [i for i, name in enumerate(data.names) if matches(name)]
    lut = np.zeros(len(data.names), bool)
    lut[hit_names] = True
    per_name = _cached(data, "name_counts", lambda: np.bincount(data.name, minlength=len(lut)))
    count = int(per_name[lut].sum())
    if count == 0:
        ids = np.empty(0, np.int64)
    else:
        time_order = _cached(data, "time_order", lambda: np.argsort(data.start, kind="stable"))
        ids = _first_matches(data, time_order, lut, min(count, SEARCH_LIMIT))
    columns = {
        "id": ids.astype(np.uint32),
        "lane": data.lane[ids].astype(np.uint16),
        "row": data.row[ids].astype(np.uint16),
        "start_ns": data.start[ids],
        "dur_ns": (data.end[ids] - data.start[ids]).astype(np.float32),
    }
    return {"count": count, "names": hit_names}, [encode_table(columns)]


def _first_matches(
    data: TimelineData, time_order: np.ndarray, lut: np.ndarray, want: int
) -> np.ndarray:
    """The first `want` matching events in time order, reading the time order in chunks so a
    common name does not gather the whole trace."""
    found: list[np.ndarray] = []
    have = 0
    chunk = max(4 * want, 65_536)
    at = 0
    while have < want and at < len(time_order):
        part = time_order[at : at + chunk]
        hits = part[lut[data.name[part]]]
        found.append(hits)
        have += len(hits)
        at += chunk
        chunk *= 4
    return np.concatenate(found)[:want] if found else np.empty(0, np.int64)


# ---------------------------------------------------------------------------------------------
# helpers


def _cached(data: TimelineData, key: str, build: Callable[[], np.ndarray]) -> np.ndarray:
    if key not in data.cache:
        data.cache[key] = build()
    value: np.ndarray = data.cache[key]
    return value


def _number(message: Mapping[str, Any], key: str, default: float | None = None) -> float:
    value = message.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value):
        raise BadRequest(f"{key!r} must be a finite number, not {value!r}")
    return float(value)


def _span(message: Mapping[str, Any]) -> tuple[float, float]:
    t0, t1 = _number(message, "start"), _number(message, "end")
    if t1 < t0:
        raise BadRequest(f"end {t1} is before start {t0}")
    return t0, t1


def _event_id(data: TimelineData, message: Mapping[str, Any]) -> int:
    value = message.get("id")
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < data.total:
        known = f"ids are 0..{data.total - 1}" if data.total else "the trace has no events"
        raise BadRequest(f"no event with id {value!r} ({known})")
    return value


HANDLERS: dict[str, Callable[[Source, Mapping[str, Any]], Reply]] = {
    "window": window,
    "details": details,
    "range": range_summary,
    "search": search,
}
