"""Reference computations the tests check our results against: written plainly (sorted
Python loops, exact numbers), independent of gpuprofile's vectorised code."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def merged(intervals: Iterable[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """Overlapping or touching [start, end) intervals merged, in order."""
    out: list[tuple[Any, Any]] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def union_length(intervals: Iterable[tuple[Any, Any]]) -> Any:
    """The length the intervals cover together, in their own number type (int, Decimal)."""
    total: Any = 0
    for start, end in merged(intervals):
        total += end - start
    return total


def timeline_lanes(trace: Any) -> int:
    """Lanes a timeline of the trace has, counted with pandas from its tables: one per CPU
    thread, per GPU stream, per device with memory in use, per sampled counter series."""
    import pandas as pd

    def distinct(tables: tuple[str, ...], columns: list[str]) -> int:
        return len(pd.concat([trace.table(t)[columns] for t in tables]).drop_duplicates())

    return (
        distinct(("ops", "runtime"), ["rank", "pid", "tid"])
        + distinct(("kernels", "memcpy", "memset"), ["rank", "device", "stream"])
        + distinct(("memory",), ["rank", "device"])
        + distinct(("counters",), ["rank", "name", "device"])
    )
