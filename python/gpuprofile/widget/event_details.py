"""One event's details for the browser: its fields, the runtime call that launched it, the op
around that call, and the GPU work an op or runtime call launched (for flow arrows).

Lookups by correlation id and the aten-op mask are built on the first request and kept in
data.cache.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from gpuprofile.analyses.measured import MEASURED_METRICS
from gpuprofile.analyses.modules import OTHER, PHASES
from gpuprofile.trace.model import NO_ID
from gpuprofile.units import format_bytes, format_count, format_percent
from gpuprofile.widget.marks import gid_mask, gid_of_row, global_ids
from gpuprofile.widget.request_args import Reply, Source, analysis_of, cached, event_id
from gpuprofile.widget.timeline import CPU_KINDS, KIND_TABLES, KINDS, TimelineData

MAX_KERNELS = 50
_CORRELATION_BITS = 40


def details(source: Source, message: Mapping[str, Any]) -> Reply:
    data, trace = source.data, source.trace
    gid = event_id(data, message)
    kind = int(data.kind[gid])
    table = trace.table(KIND_TABLES[kind])
    record = table.iloc[int(data.source[gid])]
    launch: int | None = None
    op: int | None = None
    launched = np.empty(0, np.int64)
    if kind not in CPU_KINDS:
        launch = _launch_of(source, record)
        op = kernel_op(source, record) if kind == KINDS.index("kernel") else None
        if op is None and launch is not None:
            op = _enclosing_op(source, launch)
    elif kind == KINDS.index("runtime"):
        op = _enclosing_op(source, gid)
        launched = _launched_by_calls(source, np.array([gid]))
    else:
        launched = launched_by_op(source, gid)
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
    if kind not in CPU_KINDS:
        fields += [("device", int(record["device"])), ("stream", int(record["stream"]))]
    else:
        fields += [("thread", lane.label), ("category", record["category"])]
    fields += _program(source, kind, int(source.data.source[gid]))
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
            # A percentage in every source (Kineto's "est. achieved occupancy %", ncu's).
            ("occupancy", _percent(record["occupancy"])),
            ("blocks per SM", record["blocks_per_sm"]),
            *_measured(record),
        ]
    if kind == KINDS.index("memcpy"):
        fields += [("copy kind", record["kind"]), ("pinned", "yes" if record["pinned"] else "no")]
    if kind in (KINDS.index("memcpy"), KINDS.index("memset")):
        fields.append(("bytes", _bytes(record["bytes"])))
    if kind != KINDS.index("op"):
        fields.append(("correlation", record["correlation"]))
    fields.append(("external id", record["external_id"]))
    return [[label, text] for label, value in fields if (text := _text(value))]


def _program(source: Source, kind: int, row: int) -> list[tuple[str, Any]]:
    """Where an op or kernel sits in the user's program: its nn.Module call, its phase and the
    user's innermost line (analyses/modules.py, analyses/frames.py); nothing for other kinds."""
    if kind not in (KINDS.index("op"), KINDS.index("kernel")):
        return []
    analysis = analysis_of(source)
    modules, sources = analysis.modules, analysis.sources
    is_op = kind == KINDS.index("op")
    module = int((modules.op_module if is_op else modules.kernel_module)[row])
    phase = int((modules.op_phase if is_op else modules.kernel_phase)[row])
    line = int((sources.op_source if is_op else sources.kernel_source)[row])
    return [
        ("module", modules.paths[module] if module >= 0 else None),
        ("phase", PHASES[phase] if phase != OTHER else None),
        ("line", sources.lines[line].label if line >= 0 else None),
    ]


def _measured(record: pd.Series) -> list[tuple[str, Any]]:
    """What a tool (Nsight Compute) measured on this launch."""
    fields: list[tuple[str, Any]] = [("FLOPs (measured)", record["flops"])]
    if np.isfinite(record["bytes"]):
        fields.append(("DRAM bytes (measured)", _bytes(record["bytes"])))
    metrics = record["metrics"] if isinstance(record["metrics"], dict) else {}
    fields += [
        (f"{label} (measured)", format_percent(metrics[key]))
        for key, label in MEASURED_METRICS.items()
        if key in metrics
    ]
    return fields


def _percent(value: float) -> str:
    return format_percent(float(value)) if np.isfinite(value) else ""


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
    """A size as every number is spelt, with the exact count when that rounds it."""
    n = int(value)
    if n == NO_ID:
        return ""
    return format_bytes(n) if n < 1000 else f"{format_bytes(n)} ({format_count(n)} B)"


def _correlation_key(rank: np.ndarray, correlation: np.ndarray) -> np.ndarray:
    return (rank.astype(np.int64) << _CORRELATION_BITS) | (
        correlation.astype(np.int64) & ((1 << _CORRELATION_BITS) - 1)
    )


def _by_correlation(source: Source, tables: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(sorted (rank, correlation) keys, global ids in that order, ties by time) of the events
    of the given tables that have a correlation id."""
    data = source.data

    def build() -> tuple[np.ndarray, np.ndarray]:
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
        return key[order], gid[order]

    return cached(data, "corr:" + ",".join(tables), build)


def _launch_of(source: Source, record: pd.Series) -> int | None:
    if int(record["correlation"]) == NO_ID:
        return None
    keys, gids = _by_correlation(source, ("runtime",))
    key = _correlation_key(np.array([record["rank"]]), np.array([record["correlation"]]))[0]
    at = int(np.searchsorted(keys, key))
    return int(gids[at]) if at < len(keys) and keys[at] == key else None


def kernel_op(source: Source, record: pd.Series) -> int | None:
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
    aten = cached(data, "cpu_op", lambda: _cpu_op_mask(source))
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
    return gid_mask(source.data, source.trace, "ops", analysis_of(source).cpu_op_tree.is_cpu_op)


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


def launched_by_op(source: Source, gid: int) -> np.ndarray:
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
