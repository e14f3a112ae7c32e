"""Per-rank counts, top kernels and ops by total time, and host-device copies by kind."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from gpuprofile.analyses.memo import per_trace
from gpuprofile.trace.model import Trace

_EVENT_TABLES = ("kernels", "memcpy", "memset", "ops", "runtime")


@dataclass(frozen=True)
class NameTotal:
    name: str
    count: int
    total_ns: int


@dataclass(frozen=True)
class CopyKind:
    kind: str
    count: int
    bytes: int
    total_ns: int

    @property
    def gbps(self) -> float:
        """Achieved bandwidth in GB/s (bytes per nanosecond)."""
        return self.bytes / self.total_ns if self.total_ns else 0.0


def counts(trace: Trace, rank: int) -> dict[str, int]:
    return {t: int((trace.table(t)["rank"] == rank).sum()) for t in _EVENT_TABLES}


@per_trace
def wall_ns(trace: Trace, rank: int) -> int:
    """From the rank's first event to the end of its last one."""
    first, last = None, None
    single_rank = len(trace.ranks) <= 1  # most traces: no per-rank filtering needed
    for table in _EVENT_TABLES:
        rows = trace.table(table)
        if rows.empty:
            continue
        start = rows["start_ns"].to_numpy()
        end = start + rows["dur_ns"].to_numpy()
        if not single_rank:
            mine = rows["rank"].to_numpy() == rank
            start, end = start[mine], end[mine]
        if len(start):
            first = int(start.min()) if first is None else min(first, int(start.min()))
            last = int(end.max()) if last is None else max(last, int(end.max()))
    return last - first if first is not None and last is not None else 0


def top_by_total(frame: pd.DataFrame, limit: int) -> list[NameTotal]:
    """Names ranked by summed duration (ties by count, then name, so the order is stable)."""
    if frame.empty:
        return []
    grouped = frame.groupby("name", observed=True)["dur_ns"].agg(["count", "sum"])
    grouped = grouped.reset_index().sort_values(
        ["sum", "count", "name"], ascending=[False, False, True], kind="stable"
    )
    return [
        NameTotal(name=str(name), count=int(count), total_ns=int(total))
        for name, count, total in grouped.head(limit).itertuples(index=False)
    ]


def top_kernels(trace: Trace, rank: int, limit: int = 10) -> list[NameTotal]:
    return top_by_total(trace.kernels[trace.kernels["rank"] == rank], limit)


def top_ops(trace: Trace, rank: int, limit: int = 10) -> list[NameTotal]:
    """aten ops (category cpu_op) by inclusive time; annotations and python frames nest them."""
    ops = trace.ops
    return top_by_total(ops[(ops["rank"] == rank) & (ops["category"] == "cpu_op")], limit)


def copies(trace: Trace, rank: int) -> list[CopyKind]:
    rows = trace.memcpy[trace.memcpy["rank"] == rank]
    if rows.empty:
        return []
    # Unknown sizes (-1) count as zero bytes rather than subtracting.
    rows = rows.assign(bytes=rows["bytes"].clip(lower=0))
    grouped = rows.groupby("kind", observed=True).agg(
        count=("dur_ns", "size"), bytes=("bytes", "sum"), total_ns=("dur_ns", "sum")
    )
    return [
        CopyKind(
            kind=str(kind),
            count=int(r["count"]),
            bytes=int(r["bytes"]),
            total_ns=int(r["total_ns"]),
        )
        for kind, r in grouped.sort_values("total_ns", ascending=False).iterrows()
    ]
