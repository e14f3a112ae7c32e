"""What the browser asks the kernel for: a window of events, one event's details, a range's
summary, a name search, every instance of one name, the same collective on every rank
(collectives.py). Pure functions of the prepared timeline
data and the Trace, each returning (reply, buffers) as ProfileWidget sends them (the wire
contract, version 2).

Each request is answered from sorted arrays with binary searches; indexes the first request of
a kind needs (correlation lookups, the time order) are built then and kept in data.cache.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import regex

from gpuprofile.analyses.intervals import union_length
from gpuprofile.analyses.windows import recorded_ns
from gpuprofile.widget.collectives import collective
from gpuprofile.widget.event_details import details
from gpuprofile.widget.marks import MAX_POINT_MARKS, gid_mask
from gpuprofile.widget.request_args import (
    BadRequest,
    Reply,
    Source,
    analysis_of,
    cached,
    number,
    span,
)
from gpuprofile.widget.tables import event_columns, merged_columns, segment_columns, window_ids
from gpuprofile.widget.timeline import KINDS, TimelineData
from gpuprofile.widget.wire import encode_wire

__all__ = ["DETAIL_LIMIT", "SEARCH_LIMIT", "Source", "handle"]

DETAIL_LIMIT = 100_000
SEARCH_LIMIT = 10_000
# A pattern may backtrack for hours on one name; the kernel's main thread must not hang on it.
REGEX_BUDGET_S = 2.0
TOP = 5
MAX_BINS = 16_384


def handle(source: Source, message: Mapping[str, Any]) -> Reply:
    """Answer one message; any failure becomes an error reply, never an exception."""
    kind = message.get("type")
    # "view" tells apart the views of one widget (each numbers its own requests).
    base = {"type": kind, "request": message.get("request"), "view": message.get("view")}
    try:
        handler = HANDLERS.get(str(kind))
        if handler is None:
            raise BadRequest(f"unknown request type {kind!r}")
        reply, buffers = handler(source, message)
    except Exception as err:  # the browser shows it; a request must never kill the kernel
        text = " ".join(str(err).split()) or type(err).__name__
        return {**base, "error": text}, []
    return {**base, **reply}, buffers


def window(source: Source, message: Mapping[str, Any]) -> Reply:
    data = source.data
    t0, t1 = span(message)
    width = int(number(message, "width", 1000))
    ids = window_ids(data, t0, t1)
    if len(ids) <= DETAIL_LIMIT:
        columns, meta = segment_columns(data, ids, (t0, t1))
    else:
        columns, meta = merged_columns(data, ids, (t0, t1), max(1, min(2 * width, MAX_BINS)))
    return (
        {"start": t0, "end": t1, "merged": meta["merged"]},
        [encode_wire("events", columns, meta)],
    )


def range_summary(source: Source, message: Mapping[str, Any]) -> Reply:
    data = source.data
    t0, t1 = span(message)
    # A --steps trace was recorded in windows: shares are of the recorded part of the range.
    recorded = recorded_ns(source.trace, t0, t1)
    ranks = []
    for rank in sorted({lane.rank for lane in data.lanes} | set(source.trace.ranks)):
        gpu_lanes = [x.id for x in data.lanes if x.rank == rank and x.kind == "gpu"]
        cpu_lanes = [x.id for x in data.lanes if x.rank == rank and x.kind == "cpu"]
        gpu = window_ids(data, t0, t1, gpu_lanes)
        g_start, g_end = _clipped(data, gpu, t0, t1)
        # Busy: the union over streams, as the report's GPU time (analyses/intervals.py).
        busy = union_length(g_start, g_end)
        kernels = gpu[data.kind[gpu] == KINDS.index("kernel")]
        cpu = window_ids(data, t0, t1, cpu_lanes)
        outermost = cached(data, "outermost_ops", lambda: _outermost_ops(source))
        top_level_ops = cpu[outermost[cpu]]
        ranks.append(
            {
                "rank": rank,
                "gpu_busy_ns": busy if gpu_lanes else None,
                "gpu_busy_pct": (100.0 * busy / recorded if recorded > 0 else 0.0)
                if gpu_lanes
                else None,
                "kernels": len(kernels),
                "top_kernels": _top_names(data, kernels, t0, t1),
                "top_ops": _top_names(data, top_level_ops, t0, t1),
            }
        )
    return {"start": t0, "end": t1, "range": {"ranks": ranks, "recorded_ns": recorded}}, []


def _outermost_ops(source: Source) -> np.ndarray:
    """Per event: an aten op with no aten op around it (not a ProfilerStep or a Python frame)."""
    return gid_mask(source.data, source.trace, "ops", analysis_of(source).outermost_cpu_ops)


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
        hit_names = _regex_hits(data.names, pattern)
    else:
        needle = pattern.casefold()
        hit_names = [i for i, name in enumerate(data.names) if needle in name.casefold()]
    lut = np.zeros(len(data.names), bool)
    lut[hit_names] = True
    per_name = cached(data, "name_counts", lambda: np.bincount(data.name, minlength=len(lut)))
    count = int(per_name[lut].sum())
    if count == 0:
        ids = np.empty(0, np.int64)
    else:
        time_order = cached(data, "time_order", lambda: np.argsort(data.start, kind="stable"))
        ids = _first_matches(data, time_order, lut, min(count, SEARCH_LIMIT))
    return {"count": count, "names": hit_names}, [
        encode_wire("event_list", event_columns(data, ids))
    ]


def _regex_hits(names: list[str], pattern: str) -> list[int]:
    """Indexes of the names the pattern matches, within REGEX_BUDGET_S for all names (the
    `regex` module, unlike `re`, can stop a search that runs too long)."""
    try:
        compiled = regex.compile(pattern)
    except regex.error as err:
        raise BadRequest(f"bad regular expression {pattern!r}: {err}") from None
    deadline = time.monotonic() + REGEX_BUDGET_S
    hits = []
    try:
        for i, name in enumerate(names):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            if compiled.search(name, timeout=left):
                hits.append(i)
    except TimeoutError:
        raise BadRequest(
            f"regular expression {pattern!r} took over {REGEX_BUDGET_S:g} s on "
            f"{len(names):,} names (it backtracks too much): simplify it"
        ) from None
    return hits


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
# every instance of one name (a row of the report's top kernels or top ops)

NAMED_KINDS = {"kernels": KINDS.index("kernel"), "ops": KINDS.index("op")}


def named(source: Source, message: Mapping[str, Any]) -> Reply:
    """The events of one kind with exactly this name on one rank: how many, the longest (where
    the timeline zooms) and the MAX_POINT_MARKS longest of them in time order (what it
    outlines, as for a roofline point)."""
    data = source.data
    table = message.get("table")
    if table not in NAMED_KINDS:
        raise BadRequest(f"'table' must be one of {sorted(NAMED_KINDS)}, not {table!r}")
    kind = NAMED_KINDS[str(table)]
    name = str(message.get("name", ""))
    rank = int(number(message, "rank"))
    codes = [i for i, n in enumerate(data.names) if n == name and data.name_kinds[i] == kind]
    lane_rank = cached(data, "lane_rank", lambda: np.array([x.rank for x in data.lanes]))
    ids = np.flatnonzero(np.isin(data.name, codes) & (lane_rank[data.lane] == rank))
    dur = data.end[ids] - data.start[ids]
    heaviest = int(ids[np.argmax(dur)]) if len(ids) else None
    kept = ids[np.argsort(-dur, kind="stable")[:MAX_POINT_MARKS]]
    kept = kept[np.argsort(data.start[kept], kind="stable")]
    reply = {"count": len(ids), "heaviest": heaviest}
    return reply, [encode_wire("event_list", event_columns(data, kept))]


HANDLERS: dict[str, Callable[[Source, Mapping[str, Any]], Reply]] = {
    "window": window,
    "details": details,
    "range": range_summary,
    "search": search,
    "named": named,
    "collective": collective,
}
