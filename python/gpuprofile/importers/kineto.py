"""PyTorch profiler / Kineto Chrome-trace JSON (also written by vLLM, HTA's tests, TraceLens, ...).

msgspec decodes only the fields we use into typed structs, so a trace is never materialised as
Python dicts; unknown keys are skipped by the decoder. Every variant seen in the wild maps onto
the same tables: old capitalized categories (``Kernel``, ``Runtime``, ``Operator``), top-level
list documents, ``computeProperties``, absolute and ``baseTimeNanoseconds``-relative time, int
and float ``ts``, AMD/HIP names, and CUPTI range-profiler traces (which hold no kernel timeline).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gpuprofile.errors import TraceFormatError
from gpuprofile.importers.kineto_columns import (
    counter_columns,
    device_summary,
    kernel_columns,
    memcpy_columns,
    memory_columns,
    memset_columns,
    op_columns,
    runtime_columns,
)
from gpuprofile.importers.kineto_format import (
    FLOW_PHASES,
    TABLE_OF_CATEGORY,
    Document,
    Event,
    decode_document,
    exact_ns,
)
from gpuprofile.importers.source import trace_files
from gpuprofile.trace.links import launching_ops, with_nesting
from gpuprofile.trace.model import SCHEMA, Trace, make_table


def load_kineto(path: str | Path) -> Trace:
    """Read one Kineto trace file, or a directory holding one file per rank, into a Trace."""
    path = Path(path)
    if path.is_dir():
        ranks = [_read_rank([p]) for p in trace_files(path)]
        _assign_ranks(path, ranks)
        return _merge(ranks, str(path))
    return load_kineto_windows([path])


def load_kineto_windows(paths: Sequence[str | Path]) -> Trace:
    """Files of one rank recorded one after another on one time base (the windows of a
    capture under a step schedule), read as one Trace: one pass over all their events, so a
    run of many small windows costs what one file of as many events does."""
    rank = _read_rank([Path(p) for p in paths])
    rank.rank = rank.declared_rank if rank.declared_rank is not None else 0
    return _merge([rank], str(paths[0]))


@dataclass
class _RankTables:
    paths: list[Path]
    declared_rank: int | None
    origin_ns: int  # absolute start of this file's first event
    columns: dict[str, dict[str, Any]]
    meta: dict[str, Any]
    rank: int = 0
    thread_names: dict[str, str] = field(default_factory=dict)
    capture: Any = None  # gpuprofile's entry of a --steps export (anything, in other traces)


def _read_rank(paths: list[Path]) -> _RankTables:
    docs = [decode_document(p) for p in paths]
    doc = docs[0]
    for other, other_path in zip(docs[1:], paths[1:], strict=True):
        if (other.baseTimeNanoseconds or 0) != (doc.baseTimeNanoseconds or 0):
            raise TraceFormatError(
                other_path, f"baseTimeNanoseconds differs from {paths[0].name}'s: not one run"
            )
    events = doc.traceEvents if len(docs) == 1 else [e for d in docs for e in d.traceEvents]
    buckets: dict[str, list[Event]] = {t: [] for t in ("ops", "kernels", "memcpy", "memset")}
    buckets["runtime"] = []
    memory: list[Event] = []
    counters: list[Event] = []
    thread_names: dict[str, str] = {}
    skipped: Counter[str] = Counter()
    table_of = TABLE_OF_CATEGORY
    for event in events:
        ph = event.ph
        if ph == "X":
            table = table_of.get(event.cat)
            if table is not None:
                buckets[table].append(event)
            else:
                skipped[event.cat or "(no category)"] += 1
        elif ph in ("i", "I"):
            if event.name == "[memory]":
                memory.append(event)
            else:
                skipped[f"instant {event.name}"] += 1
        elif ph == "C":
            value = event.args.value if event.args is not None else None
            if isinstance(value, int | float) and not isinstance(value, bool):
                counters.append(event)
            else:
                skipped[f"counter {event.name} without a numeric 'value'"] += 1
        elif ph == "M":
            if event.name == "thread_name" and event.args is not None and event.args.name:
                thread_names[f"{event.pid}/{event.tid}"] = event.args.name
        elif ph not in FLOW_PHASES:
            skipped[f"phase {ph or '(none)'}"] += 1

    for table, bucket in (*buckets.items(), ("memory", memory), ("counters", counters)):
        _require_times(paths, docs, bucket, needs_dur=table not in ("memory", "counters"))
    starts = [float(e.ts) for b in (*buckets.values(), memory) for e in b]  # type: ignore[arg-type]
    ts0 = min(starts) if starts else 0.0
    base = doc.baseTimeNanoseconds or 0

    columns = {
        "ops": op_columns(buckets["ops"], ts0),
        "kernels": kernel_columns(buckets["kernels"], ts0),
        "memcpy": memcpy_columns(buckets["memcpy"], ts0),
        "memset": memset_columns(buckets["memset"], ts0),
        "runtime": runtime_columns(buckets["runtime"], ts0),
        "memory": memory_columns(memory, ts0),
        "counters": counter_columns(counters, ts0),
    }
    devices = doc.deviceProperties or doc.computeProperties or []
    meta = {
        "schema_version": doc.schemaVersion,
        "devices": [device_summary(d) for d in devices],
        "distributed": doc.distributedInfo,
        "record_shapes": bool(doc.record_shapes),
        "profile_memory": bool(doc.profile_memory),
        "with_stack": bool(doc.with_stack),
        "versions": {
            k: v
            for k, v in (
                ("cupti", doc.cupti_version),
                ("cuda_runtime", doc.cuda_runtime_version),
                ("cuda_driver", doc.cuda_driver_version),
                ("roctracer", doc.roctracer_version),
                ("hip_runtime", doc.hip_runtime_version),
            )
            if v is not None
        },
        "skipped": dict(skipped),
    }
    declared = (doc.distributedInfo or {}).get("rank")
    return _RankTables(
        paths=paths,
        declared_rank=int(declared) if isinstance(declared, int | str) else None,
        origin_ns=base + int(exact_ns(ts0)),
        columns=columns,
        meta=meta,
        thread_names=thread_names,
        capture=doc.gpuprofile if len(docs) == 1 else None,
    )


def _require_times(
    paths: Sequence[Path], docs: Sequence[Document], bucket: Sequence[Event], needs_dur: bool
) -> None:
    for e in bucket:
        if e.ts is None or (needs_dur and e.dur is None):
            missing = "ts" if e.ts is None else "dur"
            path, index = next(
                (path, i)
                for path, doc in zip(paths, docs, strict=True)
                for i, candidate in enumerate(doc.traceEvents)
                if candidate is e
            )
            raise TraceFormatError(
                path,
                f"traceEvents[{index}] ({e.cat or 'no category'} {e.name!r}) lacks required "
                f"field '{missing}'",
            )


def _assign_ranks(directory: Path, ranks: list[_RankTables]) -> None:
    declared = [r.declared_rank for r in ranks]
    if all(d is not None for d in declared):
        seen: dict[int, Path] = {}
        for r in ranks:
            assert r.declared_rank is not None
            if r.declared_rank in seen:
                raise TraceFormatError(
                    directory,
                    f"rank {r.declared_rank} appears twice: {seen[r.declared_rank].name} and "
                    f"{r.paths[0].name}",
                )
            seen[r.declared_rank] = r.paths[0]
            r.rank = r.declared_rank
    else:
        # Without distributedInfo the file order (sorted names) is the rank order.
        for index, r in enumerate(ranks):
            r.rank = index


def _merge(ranks: list[_RankTables], source_path: str) -> Trace:
    origin = min(r.origin_ns for r in ranks)
    tables: dict[str, pd.DataFrame] = {}
    for table, schema in SCHEMA.items():
        time_key = "start_ns" if "start_ns" in schema else "time_ns"
        parts = []
        for r in ranks:
            columns = dict(r.columns[table])
            shift = r.origin_ns - origin
            columns[time_key] = columns[time_key] + shift
            n = len(columns[time_key])
            columns["rank"] = np.full(n, r.rank, dtype=np.int32)
            parts.append(columns)
        merged = {k: _concat([p[k] for p in parts]) for k in parts[0]}
        n = len(merged["rank"])
        if "id" in schema:
            merged["id"] = np.arange(n, dtype=np.int64)
        tables[table] = make_table(table, merged)
    tables["ops"] = with_nesting(tables["ops"])
    tables["kernels"]["op_id"] = launching_ops(tables["ops"], tables["runtime"], tables["kernels"])
    meta = {
        "source": {
            "format": "kineto",
            "path": source_path,
            "files": [str(p) for r in ranks for p in r.paths],
        },
        "origin_ns": origin,
        "ranks": {
            r.rank: {
                **r.meta,
                "file": str(r.paths[0]),
                **({"files": [str(p) for p in r.paths]} if len(r.paths) > 1 else {}),
                "thread_names": r.thread_names,
            }
            for r in ranks
        },
    }
    if len(ranks) == 1 and isinstance(ranks[0].capture, dict):
        meta.update(_capture_meta(ranks[0].capture, origin))
    return Trace(**tables, meta=meta)


def _capture_meta(capture: dict[str, Any], origin: int) -> dict[str, Any]:
    """A --steps export's windows and steps, as the capture's own Trace holds them."""
    windows = capture.get("windows") or []
    try:
        chunks = [
            {
                "index": int(w["index"]),
                "step": w.get("step"),
                "origin_ns": int(w["start_ns"]),
                "start_ns": int(w["start_ns"]) - origin,
                "end_ns": int(w["end_ns"]) - origin,
            }
            for w in windows
        ]
    except (AttributeError, KeyError, TypeError, ValueError):
        return {}  # not ours after all: the trace reads as recorded whole
    return {"chunks": chunks, "steps": capture.get("steps")} if chunks else {}


def _concat(parts: list[Any]) -> Any:
    if len(parts) == 1:
        return parts[0]
    if isinstance(parts[0], np.ndarray):
        return np.concatenate(parts)
    return [v for p in parts for v in p]
