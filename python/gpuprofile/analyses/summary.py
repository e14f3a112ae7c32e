"""Per-rank counts, top kernels and ops by total time, and host-device copies by kind."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from gpuprofile.analyses.lookups import Lookups
from gpuprofile.analyses.windows import recorded_span
from gpuprofile.trace.model import TIMELINE_TABLES, Trace


@dataclass(frozen=True)
class NameTotal:
    name: str
    count: int
    total_ns: int


@dataclass(frozen=True)
class CopyKind:
    kind: str
    count: int
    bytes: int | None  # None: some copy of the kind has no size in the trace
    total_ns: int

    @property
    def gbps(self) -> float | None:
        """Achieved bandwidth in GB/s (bytes per nanosecond); None with bytes unknown."""
        if self.bytes is None:
            return None
        return self.bytes / self.total_ns if self.total_ns else 0.0


def counts(facts: Lookups, rank: int) -> dict[str, int]:
    return {t: len(facts.rank_rows(t, rank)) for t in TIMELINE_TABLES}


def wall_ns(facts: Lookups, rank: int) -> int:
    """From the rank's first event to the end of its last one; with recorded windows
    (--steps), window by window, summed: nothing recorded the time between them
    (``Analysis.wall_ns``)."""
    return recorded_span(facts.trace, *_rank_intervals(facts, rank))


def span_ns(facts: Lookups, rank: int) -> tuple[int, int]:
    """(start of the rank's first event, end of its last); (0, 0) for a rank without events."""
    start, end = _rank_intervals(facts, rank)
    return (int(start.min()), int(end.max())) if len(start) else (0, 0)


def _rank_intervals(facts: Lookups, rank: int) -> tuple[np.ndarray, np.ndarray]:
    """[start, end) of the rank's timeline events, table after table."""
    trace = facts.trace
    single_rank = len(trace.ranks) <= 1  # most traces: no per-rank filtering needed
    starts, ends = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for table in TIMELINE_TABLES:
        rows = trace.table(table)
        if rows.empty:
            continue
        start = rows["start_ns"].to_numpy()
        end = start + rows["dur_ns"].to_numpy()
        if not single_rank:
            mine = facts.rank_rows(table, rank)
            start, end = start[mine], end[mine]
        starts.append(start)
        ends.append(end)
    return np.concatenate(starts), np.concatenate(ends)


def _top(names: pd.Series, dur: np.ndarray, rows: np.ndarray, limit: int) -> list[NameTotal]:
    """Names of the rows (a mask) ranked by summed duration, ties by count then name, counted
    per category code
    rather than by a groupby: a name's rank ties by its category's position, the order a
    groupby on the categorical sorts by."""
    if not rows.any():
        return []
    if not isinstance(names.dtype, pd.CategoricalDtype):
        names = names.astype("category")
    codes = names.cat.codes.to_numpy()
    rows = rows & (codes >= 0)  # a missing name is no group
    codes, dur = codes[rows].astype(np.int64), dur[rows].astype(np.int64)
    categories = names.cat.categories
    count = np.bincount(codes, minlength=len(categories))
    total = np.zeros(len(categories), np.int64)
    np.add.at(total, codes, dur)
    seen = np.flatnonzero(count > 0)
    order = seen[np.lexsort((seen, -count[seen], -total[seen]))][:limit]
    return [
        NameTotal(name=str(categories[c]), count=int(count[c]), total_ns=int(total[c]))
        for c in order.tolist()
    ]


def top_kernels(trace: Trace, rank: int, limit: int = 10) -> list[NameTotal]:
    kernels = trace.kernels
    mine = kernels["rank"].to_numpy() == rank
    return _top(kernels["name"], kernels["dur_ns"].to_numpy(), mine, limit)


# The ops ranked: aten ops, an inference engine's layers (TensorRT) and XLA ops (JAX): the
# work itself, which annotations and python frames enclose.
TOP_OP_CATEGORIES = ("cpu_op", "trt_layer", "xla_op")


def top_ops(trace: Trace, rank: int, limit: int = 10) -> list[NameTotal]:
    """Ops of ``TOP_OP_CATEGORIES`` by inclusive time; on a rank that has none (an NVTX-only
    Nsight Systems trace, annotations alone), all its ops."""
    ops = trace.ops
    rank_rows = ops["rank"].to_numpy() == rank
    mine = rank_rows & ops["category"].isin(TOP_OP_CATEGORIES).to_numpy()
    return _top(ops["name"], ops["dur_ns"].to_numpy(), mine if mine.any() else rank_rows, limit)


def copies(trace: Trace, rank: int) -> list[CopyKind]:
    memcpy = trace.memcpy
    rows = memcpy["rank"].to_numpy() == rank
    if not rows.any():
        return []
    kinds = memcpy["kind"]
    if not isinstance(kinds.dtype, pd.CategoricalDtype):
        kinds = kinds.astype("category")
    codes = kinds.cat.codes.to_numpy()
    rows &= codes >= 0  # a missing kind is no group
    codes = codes[rows].astype(np.int64)
    categories = kinds.cat.categories
    count = np.bincount(codes, minlength=len(categories))
    # Unknown sizes (-1) make the kind's bytes unknown: a sum of the others would read as all.
    nbytes, total = np.zeros(len(categories), np.int64), np.zeros(len(categories), np.int64)
    sizes = memcpy["bytes"].to_numpy()[rows]
    unknown = np.bincount(codes, weights=(sizes < 0), minlength=len(categories)) > 0
    np.add.at(nbytes, codes, np.maximum(sizes, 0).astype(np.int64))
    np.add.at(total, codes, memcpy["dur_ns"].to_numpy()[rows].astype(np.int64))
    seen = np.flatnonzero(count > 0)
    # Longest first; ties in category order.
    order = seen[np.argsort(-total[seen], kind="stable")]
    return [
        CopyKind(
            kind=str(categories[k]),
            count=int(count[k]),
            bytes=None if unknown[k] else int(nbytes[k]),
            total_ns=int(total[k]),
        )
        for k in order.tolist()
    ]
