"""The Kineto reader's last stage, trace: a rank's files taken through the earlier stages (read,
decode, check, columns) into one Trace with its tables and meta; a job's ranks read each so and
merged."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gpuprofile.collector import collector_paused
from gpuprofile.errors import TraceFormatError
from gpuprofile.importers.demangle import demangled
from gpuprofile.importers.kineto.capture_ranges import with_capture_ranges
from gpuprofile.importers.kineto.check import Findings, Shapes, checked_times, loose_events
from gpuprofile.importers.kineto.columns import (
    counter_columns,
    device_summary,
    gpu_annotation_columns,
    kernel_columns,
    memcpy_columns,
    memory_columns,
    memset_columns,
    op_columns,
    out_of_memory_text,
    runtime_columns,
    sort_events,
    thread_columns,
)
from gpuprofile.importers.kineto.decode import ExactTimesNeeded, event_parts
from gpuprofile.importers.kineto.direct import DirectPart, direct_reader, earliest_reader
from gpuprofile.importers.kineto.format import RANGE_PROFILER, Document, Event
from gpuprofile.importers.kineto.gather import text_codes_of
from gpuprofile.importers.kineto.header import (
    base_time,
    device_list,
    distributed_info,
    flag,
    scalar,
    steps_entry,
)
from gpuprofile.importers.kineto.read import job_files, job_ranks
from gpuprofile.importers.kineto.read import same_job as _same_job
from gpuprofile.importers.parallel import map_files
from gpuprofile.importers.source import read_trace_bytes
from gpuprofile.trace.links import launching_ops, with_nesting
from gpuprofile.trace.merge import merge
from gpuprofile.trace.meta import RankMeta, Source, TraceMeta
from gpuprofile.trace.model import SCHEMA, Trace, default_column, make_table
from gpuprofile.units import format_count


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
    exact: set[Path] = set()  # the files read again with every ts kept to the nanosecond
    while True:
        try:
            with collector_paused():  # here too: worker processes read ranks by this alone
                return _read_rank_parts(paths, exact)
        except ExactTimesNeeded as needed:
            if needed.path in exact:
                raise
            exact.add(needed.path)  # read again outside this handler: its frames let go


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


def _read_rank_parts(paths: list[Path], exact: set[Path]) -> tuple[Trace, int | None]:
    parts: dict[str, list[dict[str, Any]]] = {table: [] for table in _BUILDERS}
    thread_names: dict[str, str] = {}
    skipped: Counter[str] = Counter()
    findings = Findings()
    texts: dict[tuple[str, str], dict[str, int]] = {}  # _compact's
    doc: Document[Any] | None = None
    span_ends: list[int] = []  # the profiler's own spans' ends (Trace events), in ns
    failures: list[Event] = []  # the allocator's [OutOfMemory] instants
    failed_at: tuple[int, int] | None = None  # the last one's (ts in ns, tid)

    def loose(items: list[Any], first: int) -> list[Event]:
        return loose_events(items, first, findings)

    for path in paths:
        raw = read_trace_bytes(path)
        shapes = Shapes(findings)
        header, events_parts, parted = event_parts(
            path,
            raw,
            loose,
            exact=path in exact,
            direct=direct_reader(shapes),
            earliest=earliest_reader(),
        )
        del raw  # a file decoded whole is let go now; one read in parts, after its last part
        if doc is None:
            doc = header
        elif base_time(header.baseTimeNanoseconds) != base_time(doc.baseTimeNanoseconds):
            raise TraceFormatError(
                path, f"baseTimeNanoseconds differs from {paths[0].name}'s: not one run"
            )
        named = f"{path.name} " if len(paths) > 1 else ""
        for first, events in events_parts:
            if isinstance(events, DirectPart):  # read by the direct path: no finding
                thread_names.update(events.thread_names)
                skipped.update(events.skipped)
                span_ends.extend(events.span_ends)
                for table in _BUILDERS:
                    columns = events.tables.get(table) or _empty(table)
                    parts[table].append(_compact(table, columns, texts))
                continue
            buckets, counters, annotations, spans, names, part_skipped, oom = sort_events(events)
            failures += oom
            thread_names.update(names)
            skipped.update(part_skipped)
            buckets.update(counters=counters, gpu_annotations=annotations)
            where = _locator(named, first, events)
            if oom:
                kept, at, _ = checked_times(oom, "out-of-memory events", False, Findings(), where)
                if kept and isinstance(kept[-1].tid, int):
                    failed_at = (int(at[-1]), kept[-1].tid)
            if spans:
                _, start, dur = checked_times(spans, "profiler spans", True, Findings(), where)
                span_ends.extend((start + dur).tolist())
            for table, bucket in buckets.items():
                checked, start, dur = checked_times(
                    bucket, _WHAT[table], table not in _INSTANTS, findings, where
                )
                # Times from 0 here, rebased on the trace's first start once all are read.
                columns = _BUILDERS[table](checked, (start, dur), findings, shapes)
                if table in _LANELESS:
                    columns.update(_lane_columns(checked, findings))
                parts[table].append(_compact(table, columns, texts) if parted else columns)
            del events, buckets, counters, annotations
    assert doc is not None
    joined = {table: _joined(table, columns) for table, columns in parts.items()}
    _drop_outliers(joined, findings)
    if span_ends:
        _cut_at_profiler_end(joined["ops"], max(span_ends), findings)
    # Annotations and counters span or sample GPU work already in the timeline tables, so
    # the trace's origin (and scan_extent's, which shares table_of) ignores them.
    firsts = [int(c[_TIME[t]].min()) for t, c in joined.items() if t in _TIMELINE and _rows(c)]
    shift = min(firsts) if firsts else 0  # the first start, in ns
    base = base_time(doc.baseTimeNanoseconds)
    if doc.baseTimeNanoseconds is not None and base is None:
        findings.unknown_value("baseTimeNanoseconds that is not a time in int64 nanoseconds")
    origin = (base or 0) + shift
    distributed, declared_rank = distributed_info(doc.distributedInfo, findings)
    rank = declared_rank if declared_rank is not None else 0
    tables = {}
    for table, columns in joined.items():
        columns[_TIME[table]] = columns[_TIME[table]] - shift
        lanes = [columns.pop(name) for name in _LANE_COLUMNS if name in columns]
        frame = make_table(table, _numbered(table, columns, rank))
        tables[table] = _deduplicated(table, frame, lanes, findings)
    if findings.rejected and not any(len(t) for t in tables.values()):
        raise TraceFormatError(paths[0], f"no usable event: {findings.summary()}")
    tables["ops"] = with_capture_ranges(with_nesting(tables["ops"]))
    tables["kernels"]["name"] = _demangled(tables["kernels"]["name"])
    tables["kernels"]["op_id"] = launching_ops(tables["ops"], tables["runtime"], tables["kernels"])
    devices = device_list(doc, findings)
    versions = {
        k: scalar(v, k, findings)
        for k, v in (
            ("cupti", doc.cupti_version),
            ("cuda_runtime", doc.cuda_runtime_version),
            ("cuda_driver", doc.cuda_driver_version),
            ("roctracer", doc.roctracer_version),
            ("hip_runtime", doc.hip_runtime_version),
        )
        if v is not None
    }
    facts = RankMeta(
        devices=tuple(device_summary(d) for d in devices),
        thread_names=thread_names,
        files=tuple(str(p) for p in paths),
        schema_version=scalar(doc.schemaVersion, "schemaVersion", findings),
        distributed=distributed,
        record_shapes=flag(doc.record_shapes, "record_shapes", findings),
        profile_memory=flag(doc.profile_memory, "profile_memory", findings),
        with_stack=flag(doc.with_stack, "with_stack", findings),
        versions={k: v for k, v in versions.items() if v is not None},
        skipped=dict(skipped),
        rejected=dict(findings.rejected),
        unknown=dict(findings.unknown),
        duplicates=findings.duplicates,
        base_time_ns=base,
        host_name=doc.host_name if isinstance(doc.host_name, str) else None,
    )
    entry = steps_entry(doc.gpuprofile, findings) if len(paths) == 1 else None
    meta = TraceMeta(
        source=Source(format="kineto", path=str(paths[0]), files=tuple(str(p) for p in paths)),
        origin_ns=origin,
        ranks={rank: facts},
        windows=tuple(w.shifted(-origin) for w in entry.windows) if entry else (),
        steps=entry.steps if entry else None,
        notes=(range_profiler_note(skipped[RANGE_PROFILER]),) if skipped[RANGE_PROFILER] else (),
        failure=out_of_memory_text(failures[-1]) if failures else None,
        failure_at=(failed_at[0] - shift, failed_at[1]) if failed_at is not None else None,
    )
    return Trace(**tables, meta=meta), declared_rank


def _empty(table: str) -> dict[str, Any]:
    """A table's columns for a part without its events, as the msgspec path makes them: made
    once per table (a fresh dict each call; its empty columns are shared), where a direct part
    of a large file ran seven builders on nothing (7 ms over xDiT's 48 parts)."""
    return dict(_empty_columns(table))


@functools.cache
def _empty_columns(table: str) -> dict[str, Any]:
    findings = Findings()
    columns = _BUILDERS[table]([], (np.zeros(0, np.int64),) * 2, findings, Shapes(findings))
    if table in _LANELESS:
        columns.update(_lane_columns([], findings))
    return columns


def range_profiler_note(ranges: int) -> str:
    return (
        f"CUPTI's range profiler recorded this trace ({format_count(ranges, 'counter range')}, "
        f"'{RANGE_PROFILER}' events): it serializes each kernel and replays it to read its "
        "counters, so the host calls and the time between kernels here are far longer than the "
        "program's. No timing finding is given; profile again without the range profiler "
        "for times, and read kernel counters with Nsight Compute."
    )


def _demangled(names: pd.Series) -> pd.Series:
    """Kernel names with the mangled ones (ROCm writes some) demangled (importers/demangle.py),
    worked on the distinct names only."""
    names = names.astype("category")
    readable = demangled(names.cat.categories.astype(str))
    if not readable:
        return names
    new = [readable.get(c, c) for c in names.cat.categories.astype(str)]
    if len(set(new)) == len(new):
        return names.cat.rename_categories(new)
    return names.astype(str).map(lambda n: readable.get(n, n)).astype("category")


# What each table's events are called in the reasons they are rejected for.
_WHAT = {
    "ops": "CPU op events",
    "kernels": "kernel events",
    "memcpy": "memcpy events",
    "memset": "memset events",
    "runtime": "runtime events",
    "memory": "allocator events",
    "counters": "counter samples",
    "gpu_annotations": "GPU annotation events",
}
_INSTANTS = frozenset(("memory", "counters"))  # events without a duration
_TIME = {t: "time_ns" if t in _INSTANTS else "start_ns" for t in _BUILDERS}
# Events spanning more than this are taken to hold corrupt times: a profiler trace covers
# seconds to minutes (an hour of events is already gigabytes), and one far-off ts (a time
# from another clock, a value swapped in) would stretch every figure over days or years.
# Then the events more than half of it from the median time are not read.
MAX_SPAN_NS = 86_400 * 10**9


def _rows(columns: dict[str, Any]) -> int:
    return len(next(iter(columns.values()))) if columns else 0


def _locator(named: str, first: int, events: list[Event]) -> Callable[[Event], str]:
    """Describes an event of a part (its index in the file), for the first of each reason."""

    def where(event: Event) -> str:
        index = first + next(i for i, e in enumerate(events) if e is event)
        return f"{named}traceEvents[{index}] ({event.cat or 'no category'} {event.name!r})"

    return where


def _drop_outliers(joined: dict[str, dict[str, Any]], findings: Findings) -> None:
    """Reject the events more than half of MAX_SPAN_NS from the median start, where the
    events span more than MAX_SPAN_NS: a corrupt ts, not a day-long profile."""
    starts = [c[_TIME[t]] for t, c in joined.items() if _rows(c)]
    if not starts:
        return
    ends = [c[_TIME[t]] + c.get("dur_ns", 0) for t, c in joined.items() if _rows(c)]
    low, high = min(int(s.min()) for s in starts), max(int(e.max()) for e in ends)
    if high - low <= MAX_SPAN_NS:
        return
    middle = int(np.median(np.concatenate(starts)))
    for table, columns in joined.items():
        if not _rows(columns):
            continue
        start = columns[_TIME[table]]
        end = start + columns.get("dur_ns", 0)
        far = (start < middle - MAX_SPAN_NS // 2) | (end > middle + MAX_SPAN_NS // 2)
        if far.any():
            findings.reject(
                f"{_WHAT[table]} more than 12 h from the trace's median time (corrupt times: "
                "no profile spans a day)",
                int(far.sum()),
            )
            keep = np.flatnonzero(~far)
            for name, values in columns.items():
                if isinstance(values, list):
                    columns[name] = [values[i] for i in keep.tolist()]
                else:
                    columns[name] = values[keep]


# Host ranges ending this long after the profiler's own span are left open, not late.
PAST_PROFILER_END_NS = 1_000_000


def _cut_at_profiler_end(ops: dict[str, Any], end_ns: int, findings: Findings) -> None:
    """End at the profiler's own span's end (its ``Trace`` event) each host range that ends
    more than PAST_PROFILER_END_NS after it: a range never closed (a ``ProfilerStep#`` whose
    step() never came) is given the time until the trace was written, seconds after every
    recorded event, and would stretch the wall over time nothing was recorded in."""
    if not _rows(ops):
        return
    start, dur = ops["start_ns"], ops["dur_ns"]
    late = start + dur > end_ns + PAST_PROFILER_END_NS
    if not late.any():
        return
    ops["dur_ns"] = np.where(late, np.maximum(end_ns - start, 0), dur)
    findings.unknown_value(
        "the end of a host range that outlasts the profiler's own span (left open: never "
        "closed before the trace was written); it ends with the span",
        int(late.sum()),
    )


# The tables without pid and tid columns: their events' pid and tid (a GPU lane; a rank, in
# an export of a job) still tell two events apart, so the duplicates check compares them.
_KEYED = ("dur_ns", "correlation", "pid", "tid", "stream", "external_id", "value")
_LANELESS = frozenset(("kernels", "memcpy", "memset", "gpu_annotations", "counters"))
_LANE_COLUMNS = ("_pid", "_tid")


def _lane_columns(bucket: list[Event], findings: Findings) -> dict[str, Any]:
    """The events' pid and tid, read as the host tables' are, under _LANE_COLUMNS."""
    pid_tid = thread_columns(bucket, findings)
    return {lane: pid_tid[name] for lane, name in zip(_LANE_COLUMNS, ("pid", "tid"), strict=True)}


def _deduplicated(
    table: str, frame: pd.DataFrame, lanes: list[np.ndarray], findings: Findings
) -> pd.DataFrame:
    """The table without rows equal to an earlier row in every column (ids apart) and in
    ``lanes`` (the events' pid and tid where the table keeps neither): an event written twice
    is counted once. A hash of the times, ids and lanes finds the candidates; only those are
    compared column by column."""
    if len(frame) < 2:
        return frame
    time = frame[_TIME[table]].to_numpy()
    key = time.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    keyed = [frame[name].to_numpy() for name in _KEYED if name in frame.columns]
    for values in [*keyed, *lanes]:
        bits = values.view(np.uint64) if values.dtype.itemsize == 8 else values.astype(np.uint64)
        key = (key ^ bits) * np.uint64(0xBF58476D1CE4E5B9)
    candidates = np.flatnonzero(pd.Series(key).duplicated(keep=False).to_numpy())
    if not len(candidates):
        return frame
    columns = [c for c in frame.columns if c != "id"]
    subset = frame.iloc[candidates][columns]
    for i, lane in enumerate(lanes):
        subset.insert(len(subset.columns), f"lane{i}", lane[candidates])
    repeated = candidates[subset.duplicated().to_numpy()]
    if not len(repeated):
        return frame
    findings.duplicates += len(repeated)
    kept: pd.DataFrame = frame.drop(index=frame.index[repeated]).reset_index(drop=True)
    if "id" in kept.columns:
        kept["id"] = np.arange(len(kept), dtype=np.int64)
    return kept


_TIMELINE = frozenset(("ops", "kernels", "memcpy", "memset", "runtime", "memory"))


def _numbered(table: str, columns: dict[str, Any], rank: int) -> dict[str, Any]:
    """A table's columns with its rank, and ids 0.. in file order where the table has ids."""
    n = len(next(iter(columns.values()))) if columns else 0
    numbered = {**columns, "rank": np.full(n, rank, np.int32)}
    if "id" in SCHEMA[table]:
        numbered["id"] = np.arange(n, dtype=np.int64)
    return numbered


def _joined(table: str, parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One table's columns from its parts' columns. A column some parts lack (the
    communication columns of parts without collectives) gets the table's default there."""
    if len(parts) == 1 and not any(isinstance(v, _Encoded) for v in parts[0].values()):
        return dict(parts[0])
    sizes = [len(next(iter(p.values()), ())) for p in parts]
    columns: dict[str, Any] = {}
    for name in dict.fromkeys(name for p in parts for name in p):
        values = [
            p[name] if name in p else _default(table, name, n)
            for p, n in zip(parts, sizes, strict=True)
        ]
        if SCHEMA[table].get(name) == "category":
            columns[name] = _categorical(values)
        elif all(isinstance(v, np.ndarray) for v in values):
            columns[name] = np.concatenate(values)
        else:
            columns[name] = [x for v in values for x in v]
    return columns


class _Encoded:
    """A part's text column as codes into its texts, which every part of the column shares
    (texts: text -> code, in the order first met)."""

    __slots__ = ("codes", "texts")

    def __init__(self, values: list[str], texts: dict[str, int]) -> None:
        self.texts = texts
        self.codes = text_codes_of(values, texts)

    def __len__(self) -> int:
        return len(self.codes)


def _categorical(values: list[Any]) -> pd.Categorical[str]:
    """A text column of parts (each _Encoded, or a default column) as one Categorical with
    sorted categories, as one decoded whole is."""
    texts = next((v.texts for v in values if isinstance(v, _Encoded)), {})
    encoded = [v if isinstance(v, _Encoded) else _Encoded(list(v), texts) for v in values]
    categories = pd.Index(list(texts))
    order = categories.argsort()
    code_of = np.empty(len(order), np.int64)
    code_of[order] = np.arange(len(order))
    codes = np.concatenate([e.codes for e in encoded])
    return pd.Categorical.from_codes(code_of[codes], categories=categories[order])


def _compact(
    table: str, columns: dict[str, Any], texts: dict[tuple[str, str], dict[str, int]]
) -> dict[str, Any]:
    """A part's columns in less memory until the parts are joined: names as codes into the
    texts of their column, shared by the parts (``texts``: per (table, column)). Codes, not a
    Categorical per part: building one costs a fixed 0.4 ms, and a large file has 8 tables of
    dozens of parts. The text columns (input shapes, which repeat across ops) need nothing
    here: check.Shapes gives one string object for each distinct text of a file."""
    schema = SCHEMA[table]
    compact = dict(columns)
    for name, values in columns.items():
        if schema.get(name) == "category":
            compact[name] = _Encoded(values, texts.setdefault((table, name), {}))
    return compact


def _default(table: str, name: str, n: int) -> Any:
    """What a part without a column holds in it: make_table's default, as a list for a name
    or text column (which the parts hold as lists) and as an array for the rest."""
    column = default_column(SCHEMA[table][name], n)
    return np.asarray(column) if isinstance(column, np.ndarray) else list(column)
