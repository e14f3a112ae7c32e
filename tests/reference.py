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
