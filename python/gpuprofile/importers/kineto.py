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
from operator import attrgetter
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pandas as pd
from pandas.api.types import union_categoricals

from gpuprofile.errors import TraceFormatError
from gpuprofile.importers.job_files import job_files, job_ranks
from gpuprofile.importers.job_files import same_job as _same_job
from gpuprofile.importers.kineto_columns import (
    counter_columns,
    device_summary,
    gpu_annotation_columns,
    kernel_columns,
    memcpy_columns,
    memory_columns,
    memset_columns,
    op_columns,
    runtime_columns,
)
from gpuprofile.importers.kineto_format import (
    FLOW_PHASES,
    GPU_ANNOTATION,
    Document,
    Event,
    exact_ns,
    table_of,
)
from gpuprofile.importers.kineto_parts import WholeDocumentNeeded, event_parts
from gpuprofile.importers.parallel import map_files
from gpuprofile.trace.links import launching_ops, with_nesting
from gpuprofile.trace.merge import merge
from gpuprofile.trace.meta import RankMeta, Source, StepsEntry, TraceMeta
from gpuprofile.trace.model import SCHEMA, Trace, default_column, make_table


def load_kineto(
    path: str | Path | Sequence[str | Path],
    *,
    rank_regex: str | None = None,
    workers: int | None = None,
    scheduler: Any = None,
) -> Trace:
    """Read Kineto traces into a Trace: one file, or a job's files (one per rank) given as a
    directory, a list of files or a glob pattern.

    A job's ranks are what each trace declares (``distributedInfo.rank``), else what its file
    name says (``rank_regex``, one group of digits; by default ``rank3``, ``rank-3``,
    ``worker3``), else the lowest numbers not taken, in file name order (a notice says so).
    Two files of one rank, or files of different jobs (their world sizes differ, or, where
    every trace has a base time, they were recorded over an hour apart) raise
    TraceFormatError naming the files. The ranks are read as ``parallel.map_files`` says
    (``workers``, ``scheduler``).
    """
    files, where = job_files(path)
    if len(files) == 1 and where is None:
        return load_kineto_windows(files)
    read = map_files(_read_rank, [[p] for p in files], workers=workers, scheduler=scheduler)
    ranks, notes = job_ranks(files, [declared for _, declared in read], rank_regex)
    _same_job(files, [trace for trace, _ in read])
    source = Source(format="kineto", path=where, files=tuple(str(p) for p in files))
    job = merge([trace for trace, _ in read], ranks=ranks, source=source)
    return job.with_meta(notes=(*job.meta.notes, *notes)) if notes else job


def load_kineto_windows(paths: Sequence[str | Path]) -> Trace:
    """Files of one rank recorded one after another on one time base (the windows of a
    capture under a step schedule), read as one Trace: one pass over all their events, so a
    run of many small windows costs what one file of as many events does."""
    trace, _declared = _read_rank([Path(p) for p in paths])
    return trace


def _read_rank(paths: list[Path]) -> tuple[Trace, int | None]:
    """The files of one rank as a Trace, with the rank its trace declares (distributedInfo),
    which the Trace takes (0 when none is declared)."""
    try:
        return _read_rank_parts(paths, whole=False)
    except WholeDocumentNeeded:
        return _read_rank_parts(paths, whole=True)


# Each table's columns, built from the parts of a file one after another.
_BUILDERS = {
    "ops": op_columns,
    "kernels": kernel_columns,
    "memcpy": memcpy_columns,
    "memset": memset_columns,
    "runtime": runtime_columns,
    "memory": memory_columns,
    "counters": counter_columns,
    "gpu_annotations": gpu_annotation_columns,
}


def _read_rank_parts(paths: list[Path], whole: bool) -> tuple[Trace, int | None]:
    parts: dict[str, list[dict[str, Any]]] = {table: [] for table in _BUILDERS}
    thread_names: dict[str, str] = {}
    skipped: Counter[str] = Counter()
    firsts: list[int | float] = []
    doc: Document[Any] | None = None
    for path in paths:
        header, events_parts, parted = event_parts(path, whole=whole)
        if doc is None:
            doc = header
        elif (header.baseTimeNanoseconds or 0) != (doc.baseTimeNanoseconds or 0):
            raise TraceFormatError(
                path, f"baseTimeNanoseconds differs from {paths[0].name}'s: not one run"
            )
        for first, events in events_parts:
            buckets, counters, annotations, names, part_skipped = _sort_events(events)
            thread_names.update(names)
            skipped.update(part_skipped)
            buckets.update(counters=counters, gpu_annotations=annotations)
            for table, bucket in buckets.items():
                _require_times(path, first, events, bucket, table not in ("memory", "counters"))
            # min() over ints and floats compares them exactly, and float() keeps their order.
            # Annotations and counters span or sample GPU work already in the timeline tables,
            # so the trace's origin (and scan_extent's, which shares table_of) ignores them.
            firsts += [min(map(_TS, b)) for t, b in buckets.items() if b and t in _TIMELINE_BUCKETS]
            # Times from 0 here, rebased on the trace's first start once all parts are read.
            for table, bucket in buckets.items():
                columns = _BUILDERS[table](bucket, 0.0)
                parts[table].append(_compact(table, columns) if parted else columns)
            del events, buckets, counters, annotations
    assert doc is not None
    shift = int(exact_ns(float(min(firsts)))) if firsts else 0  # the first start, in ns
    origin = (doc.baseTimeNanoseconds or 0) + shift
    declared = (doc.distributedInfo or {}).get("rank")
    declared_rank = int(declared) if isinstance(declared, int | str) else None
    rank = declared_rank if declared_rank is not None else 0
    tables = {
        table: make_table(table, _numbered(table, _joined(table, columns, shift), rank))
        for table, columns in parts.items()
    }
    tables["ops"] = with_nesting(tables["ops"])
    tables["kernels"]["op_id"] = launching_ops(tables["ops"], tables["runtime"], tables["kernels"])
    devices = doc.deviceProperties or doc.computeProperties or []
    facts = RankMeta(
        devices=tuple(device_summary(d) for d in devices),
        thread_names=thread_names,
        files=tuple(str(p) for p in paths),
        schema_version=doc.schemaVersion,
        distributed=doc.distributedInfo,
        record_shapes=bool(doc.record_shapes),
        profile_memory=bool(doc.profile_memory),
        with_stack=bool(doc.with_stack),
        versions={
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
        skipped=dict(skipped),
        base_time_ns=doc.baseTimeNanoseconds,
        host_name=doc.host_name if isinstance(doc.host_name, str) else None,
    )
    entry = _steps_entry(doc.gpuprofile) if len(paths) == 1 else None
    meta = TraceMeta(
        source=Source(format="kineto", path=str(paths[0]), files=tuple(str(p) for p in paths)),
        origin_ns=origin,
        ranks={rank: facts},
        windows=tuple(w.shifted(-origin) for w in entry.windows) if entry else (),
        steps=entry.steps if entry else None,
    )
    return Trace(**tables, meta=meta), declared_rank


def _sort_events(
    events: list[Event],
) -> tuple[dict[str, list[Event]], list[Event], list[Event], dict[str, str], Counter[str]]:
    """The events of each table in file order; the counter samples; the GPU annotations; the
    threads' names; and what was skipped, by kind, in the order first met.

    Timeline events are routed by their (phase, category) pair in C-level passes (each pair's
    route worked out once); only the other events (instants, counters, metadata, unknown
    categories) are looked at one by one.
    """
    route = _Routes()
    event_route = np.fromiter(map(route.__getitem__, map(_PH_CAT, events)), np.int8, len(events))
    buckets: dict[str, list[Event]] = {
        table: [events[i] for i in np.flatnonzero(event_route == k).tolist()]
        for k, table in enumerate(_TABLES)
    }
    counters: list[Event] = []
    # Apart from the buckets: they span GPU work already in them, so they leave the trace's
    # origin (and scan_extent's, which shares table_of) where the timeline tables put it.
    gpu_annotations: list[Event] = []
    thread_names: dict[str, str] = {}
    skipped: Counter[str] = Counter()
    for i in np.flatnonzero(event_route == _ONE_BY_ONE).tolist():
        event = events[i]
        ph = event.ph
        if table_of(ph, event.cat, event.name) == "memory":
            buckets["memory"].append(event)
        elif ph == "X" and event.cat == GPU_ANNOTATION:
            gpu_annotations.append(event)
        elif ph == "X":
            skipped[event.cat or "(no category)"] += 1
        elif ph in ("i", "I"):
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
        else:
            skipped[f"phase {ph or '(none)'}"] += 1
    return buckets, counters, gpu_annotations, thread_names, skipped


_TS, _DUR, _PH_CAT = attrgetter("ts"), attrgetter("dur"), attrgetter("ph", "cat")


class _Routes(dict[tuple[str, str], int]):
    """(phase, category) -> its route: a timeline table's index in _TABLES, _FLOW or
    _ONE_BY_ONE; each pair's route is worked out the first time it is met."""

    def __missing__(self, pair: tuple[str, str]) -> int:
        ph, cat = pair
        table = table_of(ph, cat, "") if ph == "X" else None
        route = _TABLES.index(table) if table else _FLOW if ph in FLOW_PHASES else _ONE_BY_ONE
        self[pair] = route
        return route


_TIMELINE_BUCKETS = frozenset(("ops", "kernels", "memcpy", "memset", "runtime", "memory"))
# The timeline tables an event's (phase, category) alone decides, in the order the importer
# builds them; then the two other routes of _sort_events.
_TABLES = ("ops", "kernels", "memcpy", "memset", "runtime", "memory")
_FLOW, _ONE_BY_ONE = len(_TABLES), len(_TABLES) + 1


def _numbered(table: str, columns: dict[str, Any], rank: int) -> dict[str, Any]:
    """A table's columns with its rank, and ids 0.. in file order where the table has ids."""
    n = len(next(iter(columns.values()))) if columns else 0
    numbered = {**columns, "rank": np.full(n, rank, np.int32)}
    if "id" in SCHEMA[table]:
        numbered["id"] = np.arange(n, dtype=np.int64)
    return numbered


def _require_times(
    path: Path, first: int, events: list[Event], bucket: Sequence[Event], needs_dur: bool
) -> None:
    """TraceFormatError naming the first event of ``bucket`` without ts (or dur, where the
    table needs one) by its index in the file (``events`` starts at index ``first``)."""
    if None not in map(_TS, bucket) and not (needs_dur and None in map(_DUR, bucket)):
        return
    for e in bucket:
        if e.ts is None or (needs_dur and e.dur is None):
            missing = "ts" if e.ts is None else "dur"
            index = first + next(i for i, candidate in enumerate(events) if candidate is e)
            raise TraceFormatError(
                path,
                f"traceEvents[{index}] ({e.cat or 'no category'} {e.name!r}) lacks required "
                f"field '{missing}'",
            )


def _joined(table: str, parts: list[dict[str, Any]], shift: int) -> dict[str, Any]:
    """One table's columns from its parts' columns, times moved ``shift`` ns earlier. A column
    some parts lack (the communication columns of parts without collectives) gets the table's
    default there."""
    if len(parts) == 1:
        columns = dict(parts[0])
    else:
        sizes = [len(next(iter(p.values()), ())) for p in parts]
        columns = {}
        for name in dict.fromkeys(name for p in parts for name in p):
            values = [
                p[name] if name in p else _default(table, name, n)
                for p, n in zip(parts, sizes, strict=True)
            ]
            if SCHEMA[table][name] == "category":
                # Only parts with rows: an empty Categorical's categories have another dtype.
                filled = [v for v in values if len(v)] or values[:1]
                categorical = [pd.Categorical(v) for v in filled]
                columns[name] = union_categoricals(categorical, sort_categories=True)
            elif all(isinstance(v, np.ndarray) for v in values):
                columns[name] = np.concatenate(values)
            else:
                columns[name] = [x for v in values for x in v]
    for name in ("start_ns", "time_ns"):
        if name in columns:
            columns[name] = columns[name] - shift
    return columns


def _compact(table: str, columns: dict[str, Any]) -> dict[str, Any]:
    """A part's columns in less memory until the parts are joined: names dictionary-encoded,
    and one string object for each distinct text (input shapes repeat across ops)."""
    schema = SCHEMA[table]
    compact = dict(columns)
    for name, values in columns.items():
        if schema[name] == "category":
            compact[name] = pd.Categorical(values)
        elif schema[name] == "object":
            distinct: dict[Any, Any] = {}
            compact[name] = [distinct.setdefault(v, v) for v in values]
    return compact


def _default(table: str, name: str, n: int) -> Any:
    """What a part without a column holds in it: make_table's default, as a list for a name
    or text column (which the parts hold as lists) and as an array for the rest."""
    column = default_column(SCHEMA[table][name], n)
    return np.asarray(column) if isinstance(column, np.ndarray) else list(column)


def _steps_entry(entry: Any) -> StepsEntry | None:
    """A --steps export's windows and steps (times absolute), or None: a trace without the
    entry, or with someone else's under that key, reads as recorded whole."""
    if not isinstance(entry, dict) or not entry.get("windows"):
        return None
    try:
        return msgspec.convert(entry, StepsEntry)
    except msgspec.ValidationError:
        return None
