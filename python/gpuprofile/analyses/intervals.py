"""Interval arithmetic on int64 nanosecond arrays."""

from __future__ import annotations

import numpy as np


def union_length(start: np.ndarray, end: np.ndarray) -> int:
    """Total length covered by the union of [start, end) intervals."""
    if len(start) == 0:
        return 0
    order = np.argsort(start, kind="stable")
    start, end = start[order], end[order]
    reach = np.maximum.accumulate(end)
    # A new merged block begins where an interval starts after everything before it ended.
    new_block = np.empty(len(start), dtype=bool)
    new_block[0] = True
    new_block[1:] = start[1:] > reach[:-1]
    firsts = np.flatnonzero(new_block)
    lasts = np.append(firsts[1:] - 1, len(start) - 1)
    return int((reach[lasts] - start[firsts]).sum())


def running_argmax(values: np.ndarray) -> np.ndarray:
    """Index of the largest value so far, at each position (the last one on ties)."""
    if not len(values):
        return np.zeros(0, dtype=np.int64)
    is_new = values >= np.maximum.accumulate(values)
    return np.maximum.accumulate(np.where(is_new, np.arange(len(values)), 0))
