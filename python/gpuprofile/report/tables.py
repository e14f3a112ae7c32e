"""A Trace's events as DataFrames for users: readable columns, new frames every call.

The Trace's own tables are built for analyses (categorical names, -1 for "not known"); these are
built for reading and for pandas work: names are plain strings, an id or a count the trace does
not know is ``<NA>`` (nullable ``Int64``), and every frame is a copy, so changing it never
changes the Trace. docs/data.md lists the columns.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from gpuprofile.analyses.kernel_kind import KernelClasses
from gpuprofile.trace.model import NO_ID, Trace

KERNEL_COLUMNS = (
    "id", "rank", "device", "stream", "name", "kind", "start_ns", "dur_ns",
    "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z",
    "registers_per_thread", "shared_memory", "occupancy", "blocks_per_sm",
    "flops", "bytes", "collective", "comm_bytes", "correlation", "external_id", "op_id",
)  # fmt: skip
OP_COLUMNS = (
    "id", "rank", "pid", "tid", "name", "category", "start_ns", "dur_ns", "parent", "depth",
    "input_dims", "input_types", "flops", "flops_source", "external_id",
)  # fmt: skip
COPY_COLUMNS = (
    "id", "rank", "device", "stream", "name", "kind", "pinned", "start_ns", "dur_ns", "bytes",
    "bytes_per_s", "correlation", "external_id",
)  # fmt: skip

# Integer columns where the Trace writes NO_ID for "not known": <NA> here.
_MAYBE_UNKNOWN = frozenset(
    (
        "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z",
        "registers_per_thread", "shared_memory", "comm_bytes", "seq", "correlation",
        "external_id", "op_id", "parent", "bytes", "pid", "tid", "device", "stream",
    )
)  # fmt: skip


def kernel_table(trace: Trace, classes: KernelClasses) -> pd.DataFrame:
    """The trace's GPU kernels, one row each, in the trace's order.

    Parameters:
        trace: the Trace.
        classes: its kernels' classes (``Analysis.kernel_classes``).

    Returns:
        A new DataFrame with columns ``KERNEL_COLUMNS`` (docs/data.md): ``kind`` is the
        kernel's class (compute, communication, memory, sync); ``flops`` and ``bytes`` are
        what a source measured on the launch (NaN: not measured).
    """
    kernels = trace.kernels
    out = readable(kernels, [c for c in KERNEL_COLUMNS if c != "kind"])
    out["kind"] = pd.Series(classes.kinds_of(kernels["name"]), index=out.index, dtype=object)
    out["kind"] = out["kind"].astype(str)
    return out[list(KERNEL_COLUMNS)]


def op_table(trace: Trace, op_costs: pd.DataFrame | None = None) -> pd.DataFrame:
    """The trace's CPU ops (aten ops, annotations, python functions), one row each.

    Parameters:
        trace: the Trace.
        op_costs: the analysis' per-op costs (``Analysis.op_costs``, indexed by op id); their
            FLOPs fill ``flops`` and ``flops_source``. None: the trace's own counts only.

    Returns:
        A new DataFrame with columns ``OP_COLUMNS`` (docs/data.md): ``parent`` is the id of the
        enclosing op (<NA> at the top); ``input_dims`` and ``input_types`` are the JSON text
        the trace recorded (missing when not recorded).
    """
    ops = trace.ops
    out = readable(ops, [c for c in OP_COLUMNS if c != "flops_source"])
    recorded = ops["flops"].to_numpy()
    if op_costs is not None and len(ops):
        costs = op_costs.reindex(ops["id"].to_numpy())
        out["flops"] = costs["flops"].to_numpy(dtype=np.float64)
        source = costs["flops_source"].astype(object).to_numpy()
    else:
        source = np.where(np.isfinite(recorded), "measured", "unknown")
    out["flops_source"] = pd.Series(source, index=out.index, dtype=object).fillna("unknown")
    out["flops_source"] = out["flops_source"].astype(str)
    return out[list(OP_COLUMNS)]


def copy_table(trace: Trace) -> pd.DataFrame:
    """The trace's memory copies (memcpy), one row each.

    Parameters:
        trace: the Trace.

    Returns:
        A new DataFrame with columns ``COPY_COLUMNS`` (docs/data.md): ``kind`` is HtoD, DtoH,
        DtoD, HtoH, PtoP or unknown; ``pinned``: the host side was page-locked;
        ``bytes_per_s`` the achieved bandwidth (NaN where bytes or duration is unknown or 0).
    """
    copies = trace.memcpy
    out = readable(copies, [c for c in COPY_COLUMNS if c != "bytes_per_s"])
    nbytes = copies["bytes"].to_numpy().astype(np.float64)
    dur = copies["dur_ns"].to_numpy().astype(np.float64)
    known = (nbytes >= 0) & (dur > 0)
    rate = np.full(len(copies), np.nan)
    np.divide(nbytes * 1e9, dur, out=rate, where=known)
    out["bytes_per_s"] = rate
    return out[list(COPY_COLUMNS)]


def readable(frame: pd.DataFrame, columns: Iterable[str]) -> pd.DataFrame:
    """A new frame of these columns of a Trace table: categoricals as strings, NO_ID in the
    columns that use it as <NA>, everything else copied as it is."""
    data: dict[str, object] = {}
    for name in columns:
        column = frame[name]
        if isinstance(column.dtype, pd.CategoricalDtype):
            data[name] = column.astype(str).to_numpy()
        elif name in _MAYBE_UNKNOWN and column.dtype.kind == "i":
            values = column.to_numpy()
            data[name] = pd.arrays.IntegerArray(values.astype(np.int64), mask=values == NO_ID)
        else:
            data[name] = column.to_numpy(copy=True)
    return pd.DataFrame(data, index=pd.RangeIndex(len(frame)))
