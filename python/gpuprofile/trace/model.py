"""The one trace model every source is read into and every analysis reads.

Tables are pandas DataFrames with fixed columns and dtypes. Times are int64 nanoseconds from
the trace's own start (``meta.origin_ns`` holds that start on the source's absolute clock).
What the trace knows besides its tables is its ``TraceMeta`` (meta.py).
Names are dictionary-encoded as pandas categoricals: a million kernels have a few hundred names.
A multi-rank run is one Trace with a ``rank`` column.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np
import pandas as pd

from gpuprofile.trace.meta import TraceMeta

# Sentinel for "not known" in integer id columns (pandas' nullable ints are slow to build).
NO_ID = -1
# A module call's name (the capture's, ``{path} ({Type})`` after it; torch's, ``{Class}_{N}``).
MODULE_PREFIX = "nn.Module: "
# Memcpy kinds that cross the host link (PCIe, NVLink-C2C): the copies between host and device.
HOST_DEVICE_KINDS = ("HtoD", "DtoH")
# The tables of timed events drawn on a timeline (the memory and counters tables are samples).
TIMELINE_TABLES = ("ops", "runtime", "kernels", "memcpy", "memset")

_INT = "int64"
_I32 = "int32"
_F64 = "float64"
_CAT = "category"
_STR = "object"
_BOOL = "bool"

SCHEMA: dict[str, dict[str, str]] = {
    # CPU-side events: aten ops, record_function annotations, python functions.
    "ops": {
        "id": _INT,
        "rank": _I32,
        "pid": _INT,
        "tid": _INT,
        "name": _CAT,
        "category": _CAT,
        "start_ns": _INT,
        "dur_ns": _INT,
        "parent": _INT,
        "depth": _I32,
        "external_id": _INT,
        "input_dims": _STR,
        "input_types": _STR,
        # raw JSON text of "Concrete Inputs": scalar arguments (stride, dims, flags) as strings
        "concrete_inputs": _STR,
        "flops": _F64,
        # Communication facts a trace records on collective kernels and record_param_comms
        # ops: the collective's name ("allreduce"), its process group's name and ranks (as
        # written, "[0, 1]"), its sequence number in the group, and its message bytes.
        "collective": _CAT,
        "process_group": _CAT,
        "group_ranks": _CAT,
        "seq": _INT,
        "comm_bytes": _INT,
        # Autograd's facts on an op (NO_ID when absent): its sequence number (a forward op and
        # the backward engine op of the grad_fn it made share it) and torch's thread counter
        # of the forward that made it (0 forward, 1 backward; not an OS tid).
        "sequence": _INT,
        "fwd_tid": _INT,
        # The line of the user's code a row ran from (NO_ID unknown): a Python call's
        # (python_function row's) line in its caller, where the call was made (the frame's
        # own name carries only its function's first line); an op's, where a capture's line
        # range held it (an operator written inline, importers/kineto/capture_ranges.py).
        "caller_line": _INT,
    },
    "kernels": {
        "id": _INT,
        "rank": _I32,
        "device": _I32,
        "stream": _INT,
        "name": _CAT,
        "start_ns": _INT,
        "dur_ns": _INT,
        "correlation": _INT,
        "external_id": _INT,
        "op_id": _INT,
        # Wide: ROCm writes a grid in work-items, not blocks, and a large launch passes 2**31.
        "grid_x": _INT,
        "grid_y": _INT,
        "grid_z": _INT,
        "block_x": _I32,
        "block_y": _I32,
        "block_z": _I32,
        "registers_per_thread": _I32,
        "shared_memory": _INT,
        "occupancy": _F64,
        "blocks_per_sm": _F64,
        # What a source measured on this launch (Nsight Compute counters, XPlane stats): its
        # FLOPs and DRAM bytes (NaN: not measured), and its other metrics by name
        # (``{"sm_throughput_pct": 71.2, ...}``; None: none measured).
        "flops": _F64,
        "bytes": _F64,
        "metrics": _STR,
        # As for ops.
        "collective": _CAT,
        "process_group": _CAT,
        "group_ranks": _CAT,
        "seq": _INT,
        "comm_bytes": _INT,
    },
    # kind: HtoD, DtoH, DtoD, HtoH, PtoP or unknown; pinned: host side was page-locked.
    "memcpy": {
        "id": _INT,
        "rank": _I32,
        "device": _I32,
        "stream": _INT,
        "name": _CAT,
        "kind": _CAT,
        "pinned": _BOOL,
        "start_ns": _INT,
        "dur_ns": _INT,
        "bytes": _INT,
        "correlation": _INT,
        "external_id": _INT,
    },
    "memset": {
        "id": _INT,
        "rank": _I32,
        "device": _I32,
        "stream": _INT,
        "name": _CAT,
        "start_ns": _INT,
        "dur_ns": _INT,
        "bytes": _INT,
        "correlation": _INT,
        "external_id": _INT,
    },
    # CUDA/HIP runtime and driver API calls on the host.
    "runtime": {
        "id": _INT,
        "rank": _I32,
        "pid": _INT,
        "tid": _INT,
        "name": _CAT,
        "category": _CAT,
        "start_ns": _INT,
        "dur_ns": _INT,
        "correlation": _INT,
        "external_id": _INT,
    },
    # Annotations on the GPU timeline (Kineto's gpu_user_annotation): a record_function range
    # (ProfilerStep#N included) projected onto its device and stream, spanning the GPU work
    # it launched. Apart from ops, so that CPU-side analyses never meet a step twice.
    "gpu_annotations": {
        "id": _INT,
        "rank": _I32,
        "device": _I32,
        "stream": _INT,
        "name": _CAT,
        "start_ns": _INT,
        "dur_ns": _INT,
        "external_id": _INT,
    },
    # Allocator events; device -1 is host memory.
    "memory": {
        "rank": _I32,
        "time_ns": _INT,
        "pid": _INT,
        "tid": _INT,
        "device": _I32,
        "bytes": _INT,
        "total_allocated": _INT,
        "total_reserved": _INT,
        # The block's address (-1: unknown): pairs an allocation with its free.
        "addr": _INT,
    },
    "counters": {
        "rank": _I32,
        "name": _CAT,
        "unit": _CAT,
        "device": _I32,
        "time_ns": _INT,
        "value": _F64,
    },
}


def empty_table(table: str) -> pd.DataFrame:
    return make_table(table, {})


def make_table(table: str, columns: Mapping[str, Any]) -> pd.DataFrame:
    """Build a table of ``SCHEMA[table]`` from column arrays; missing columns get defaults."""
    schema = SCHEMA[table]
    unknown = set(columns) - set(schema)
    if unknown:
        raise ValueError(f"table {table!r} has no columns {sorted(unknown)}")
    lengths = {len(v) for v in columns.values()}
    if len(lengths) > 1:
        raise ValueError(f"table {table!r}: columns differ in length {sorted(lengths)}")
    n = lengths.pop() if lengths else 0
    if n == 0:
        # Most tables of a CPU capture, or of a short --steps window, are empty: a copy of
        # one made once costs a fraction of building a frame of typed empty columns.
        return _empty_frame(table).copy()
    return _frame(table, columns, n)


@functools.cache
def _empty_frame(table: str) -> pd.DataFrame:
    return _frame(table, {}, 0)


def _frame(table: str, columns: Mapping[str, Any], n: int) -> pd.DataFrame:
    schema = SCHEMA[table]
    data: dict[str, Any] = {}
    for name, dtype in schema.items():
        if name in columns:
            values = columns[name]
            if dtype == _CAT:
                data[name] = pd.Categorical(values)
            elif dtype == _STR:
                data[name] = pd.Series(values, dtype=object)
            else:
                try:
                    data[name] = np.asarray(values, dtype=dtype)
                except OverflowError:
                    # An importer let a value past the column's width through: say which.
                    raise ValueError(
                        f"table {table!r}: column {name!r} ({dtype}) cannot hold a value of "
                        f"{max(values, key=abs)}"
                    ) from None
        else:
            data[name] = default_column(dtype, n)
    return pd.DataFrame(data, copy=False)


def default_column(dtype: str, n: int) -> Any:
    if dtype == _CAT:
        if not n:  # no category at all, as a Categorical of no values has
            return pd.Categorical(np.full(0, "", dtype=object))
        # From codes: factorizing n empty strings took 12 ms per 160,000 rows.
        return pd.Categorical.from_codes(np.zeros(n, np.int8), categories=pd.Index([""]))
    if dtype == _STR:
        return pd.Series(np.full(n, None, dtype=object), dtype=object)
    if dtype == _F64:
        return np.full(n, np.nan)
    if dtype == _BOOL:
        return np.zeros(n, dtype=bool)
    return np.full(n, NO_ID, dtype=dtype)


# eq=False: a Trace is itself, compared and hashed by identity (two traces with equal tables are
# still two traces).
@dataclass(frozen=True, eq=False)
class Trace:
    """Columnar tables of one profiled run (one or many ranks), validated when built."""

    ops: pd.DataFrame = field(default_factory=lambda: empty_table("ops"))
    kernels: pd.DataFrame = field(default_factory=lambda: empty_table("kernels"))
    memcpy: pd.DataFrame = field(default_factory=lambda: empty_table("memcpy"))
    memset: pd.DataFrame = field(default_factory=lambda: empty_table("memset"))
    runtime: pd.DataFrame = field(default_factory=lambda: empty_table("runtime"))
    gpu_annotations: pd.DataFrame = field(default_factory=lambda: empty_table("gpu_annotations"))
    memory: pd.DataFrame = field(default_factory=lambda: empty_table("memory"))
    counters: pd.DataFrame = field(default_factory=lambda: empty_table("counters"))
    meta: TraceMeta = field(default_factory=TraceMeta)

    def __post_init__(self) -> None:
        for table, schema in SCHEMA.items():
            validate_table(table, getattr(self, table), schema)

    @property
    def ranks(self) -> list[int]:
        return sorted(self.meta.ranks)

    def devices(self, rank: int) -> list[dict[str, Any]]:
        """The device properties the trace records for a rank ([] when none)."""
        facts = self.meta.ranks.get(rank)
        return list(facts.devices) if facts is not None else []

    def with_meta(self, **facts: Any) -> Trace:
        """The same tables, with these facts of ``TraceMeta`` changed (a new Trace). The
        tables were validated when this Trace was built: they are shared, not checked again."""
        changed = copy.copy(self)
        object.__setattr__(changed, "meta", msgspec.structs.replace(self.meta, **facts))
        return changed

    def table(self, name: str) -> pd.DataFrame:
        if name not in SCHEMA:
            raise KeyError(f"no table {name!r}; tables are {sorted(SCHEMA)}")
        frame: pd.DataFrame = getattr(self, name)
        return frame


def validate_table(table: str, frame: pd.DataFrame, schema: Mapping[str, str]) -> None:
    columns = list(frame.columns)
    if columns != list(schema):
        raise ValueError(f"table {table!r}: columns {columns} differ from schema {list(schema)}")
    # frame.dtypes at once: a column lookup per name builds a Series each, which dominated
    # the reading of small traces (a --steps window).
    for (name, dtype), actual_dtype in zip(schema.items(), frame.dtypes, strict=True):
        actual = str(actual_dtype)
        if actual != dtype:
            raise ValueError(f"table {table!r}: column {name!r} is {actual}, expected {dtype}")
    if "dur_ns" in schema and len(frame) and int(frame["dur_ns"].min()) < 0:
        raise ValueError(f"table {table!r}: negative durations")
