"""The Kineto reader's direct path: a part of a large file read from its events' JSON texts
straight into the columns of their tables by the compiled core (``_scan.c``), where the
msgspec path decodes each event into structs, sorts them into tables and gathers each field.

The core reads a part only where every event in it is one it reads exactly as the msgspec
path does (timeline events with their collectives' args, allocator instants, GPU
annotations, flows, metadata, the profiler's own spans and instants) and no value would be a
finding; otherwise (counters, an out-of-memory instant, a value out of range...) it declines
and the part takes the msgspec path (decode.py, columns.py: the reference, which
test_direct_core.py compares this with). What is left to Python here is what the columns
builders compute from the texts: the recorded inputs' check (check.Shapes), the memcpy kinds
and the collectives' message bytes. A file whose ts need their nanoseconds kept
(decode._keep_nanoseconds) is read here too: the core finds the earliest whole microsecond
and rebases each ts on it as decode.py does with Decimal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np

from gpuprofile.importers.kineto.check import Shapes
from gpuprofile.importers.kineto.columns import DTYPE_BYTES, memcpy_kind
from gpuprofile.trace.model import NO_ID

# A part's tables ({table: {column: values}}), for the tables it has events of.
Tables = dict[str, dict[str, Any]]


@dataclass(frozen=True)
class DirectPart:
    """A part read by the direct path: its tables' columns, and what columns.sort_events
    records beside them (what was skipped, by kind; the threads' names; the profiler's own
    spans' ends in ns)."""

    tables: Tables
    skipped: dict[str, int]
    thread_names: dict[str, str]
    span_ends: list[int]


Direct = Callable[[list[msgspec.Raw], int | None], DirectPart | None]

# _scan.part_columns: a part's tables as the core reads them (before _finished), and "part",
# every ts rebased on the anchor where one is given; _scan.earliest_us: a part's earliest whole
# us (decode._earliest_microsecond's), where the core reads it.
scanned: Callable[[list[msgspec.Raw], int | None], dict[str, Any] | None] | None
earliest_us: Callable[[list[msgspec.Raw]], tuple[bool, int | None]] | None
try:
    from gpuprofile.importers.kineto._scan import earliest_us
    from gpuprofile.importers.kineto._scan import part_columns as scanned
except ImportError:
    scanned = earliest_us = None
COMPILED = scanned is not None


# Each table's columns as its builder in columns.py makes them (the lanes of the tables
# without pid and tid last, as trace.py adds them), and which the core gives as float64.
_COLUMNS = {
    "ops": ("pid", "tid", "name", "category", "start_ns", "dur_ns", "external_id"),
    "kernels": (
        "device", "stream", "name", "start_ns", "dur_ns", "correlation", "external_id",
        "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z",
        "registers_per_thread", "shared_memory", "occupancy", "blocks_per_sm", "_pid", "_tid",
    ),
    "memcpy": (
        "device", "stream", "name", "start_ns", "dur_ns", "correlation", "external_id",
        "bytes", "_pid", "_tid",
    ),
    "memset": (
        "device", "stream", "name", "start_ns", "dur_ns", "correlation", "external_id",
        "bytes", "_pid", "_tid",
    ),
    "runtime": (
        "pid", "tid", "name", "category", "start_ns", "dur_ns", "correlation", "external_id"
    ),
    "memory": (
        "time_ns", "pid", "tid", "device", "bytes", "total_allocated", "total_reserved", "addr"
    ),
    "gpu_annotations": (
        "device", "stream", "name", "start_ns", "dur_ns", "external_id", "_pid", "_tid"
    ),
}  # fmt: skip
_FLOATS = frozenset(("occupancy", "blocks_per_sm"))


def direct_reader(shapes: Shapes) -> Direct | None:
    """The direct path for one file's parts (``shapes`` checks its recorded inputs, as the
    msgspec path's builders do); None where the core is not built."""
    part_columns = scanned
    if part_columns is None:
        return None

    def read(raws: list[msgspec.Raw], anchor: int | None) -> DirectPart | None:
        found = part_columns(raws, anchor)
        if found is None:
            return None
        part = found.pop("part")
        tables: Tables = {}
        for table, columns in found.items():
            finished = _finished(table, columns, shapes)
            if finished is None:
                return None
            tables[table] = finished
        return DirectPart(
            tables=tables,
            skipped=part["skipped"],
            thread_names=part["thread_names"],
            span_ends=np.frombuffer(part["span_ends"], np.int64).tolist(),
        )

    return read


def earliest_reader() -> Callable[[list[msgspec.Raw]], tuple[bool, int | None]] | None:
    """The core's earliest whole us of a part's ts, for files read with exact times; None
    where the core (its direct path) is not there."""
    return earliest_us if scanned is not None else None


def _finished(table: str, read: dict[str, Any], shapes: Shapes) -> dict[str, Any] | None:
    """A table's columns as its builder in columns.py makes them; None where a message's
    bytes would be beyond int64 (a finding there: the part takes the msgspec path)."""
    columns = {name: _column(name, read[name]) for name in _COLUMNS[table]}
    comm = _comm_columns(read) if "comm" in read else {}
    if comm is None:
        return None
    if table == "kernels":  # as columns.kernel_columns: after its own, before the lanes
        lanes = {name: columns.pop(name) for name in ("_pid", "_tid")}
        columns.update(comm)
        columns.update(lanes)
    if table == "memcpy":
        names = columns["name"]
        columns["kind"] = [memcpy_kind(n) for n in names]
        columns["pinned"] = np.fromiter(("Pinned" in n for n in names), bool, len(names))
    if table == "ops":
        columns["input_dims"] = shapes.dims(_coded(read["input_dims"]))
        columns["input_types"] = shapes.types(_coded(read["input_types"]))
        columns["concrete_inputs"] = shapes.concrete(_coded(read["concrete_inputs"]))
        columns.update(comm)
        autograd, caller_line = read["any_set"]
        if autograd:  # as columns.autograd_columns: only where some op has one
            columns["sequence"] = _column("sequence", read["sequence"])
            columns["fwd_tid"] = _column("fwd_tid", read["fwd_tid"])
        if caller_line:
            columns["caller_line"] = _column("caller_line", read["caller_line"])
    return columns


def _comm_columns(read: dict[str, Any]) -> dict[str, Any] | None:
    """columns.comm_columns from the core's texts and counts; None where a message's bytes
    are beyond int64."""
    collective, group, ranks = (_texts(pair) for pair in read["comm"][:3])
    # columns._message_bytes: the larger count (NO_ID where none) times the dtype's size
    elems = np.maximum(_column("", read["_in_elems"]), _column("", read["_out_elems"]))
    codes, dtypes = read["comm"][3]
    size = np.array([DTYPE_BYTES.get(t, 0) for t in dtypes] + [0], np.int64)[
        np.frombuffer(codes, np.int64)
    ]
    known = (size > 0) & (elems >= 0)
    if (elems[known] > np.iinfo(np.int64).max // size[known]).any():
        return None
    return {
        "collective": collective,
        "process_group": group,
        "group_ranks": ranks,
        "seq": _column("seq", read["seq"]),
        "comm_bytes": np.where(known, elems * size, NO_ID),
    }


def _texts(read: tuple[bytearray, list[str]]) -> list[str]:
    codes, distinct = read
    texts: list[str] = np.array([*distinct, ""], object)[np.frombuffer(codes, np.int64)].tolist()
    return texts


def _column(name: str, values: Any) -> Any:
    if isinstance(values, bytearray):
        return np.frombuffer(values, np.float64 if name in _FLOATS else np.int64)
    return values


def _coded(read: tuple[bytearray, list[bytes]]) -> tuple[np.ndarray, list[bytes]]:
    codes, distinct = read
    return np.frombuffer(codes, np.int64), distinct
