"""Interval arithmetic on int64 nanosecond arrays: unions of [start, end) intervals, and sets
of intervals that many gaps query at once."""

from __future__ import annotations

import numpy as np


def merged_blocks(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of the intervals as disjoint blocks (block starts, block ends), in order;
    intervals that touch or overlap join one block."""
    if len(start) == 0:
        return start[:0], end[:0]
    order = np.argsort(start, kind="stable")
    start, end = start[order], end[order]
    reach = np.maximum.accumulate(end)
    # A new block begins where an interval starts after everything before it ended.
    firsts = np.flatnonzero(np.r_[True, start[1:] > reach[:-1]])
    lasts = np.r_[firsts[1:] - 1, len(start) - 1]
    return start[firsts], reach[lasts]


def union_length(start: np.ndarray, end: np.ndarray) -> int:
    """Total length covered by the union of [start, end) intervals."""
    block_start, block_end = merged_blocks(start, end)
    return int((block_end - block_start).sum())


def running_argmax(values: np.ndarray) -> np.ndarray:
    """Index of the largest value so far, at each position (the last one on ties)."""
    if not len(values):
        return np.zeros(0, dtype=np.int64)
    is_new = values >= np.maximum.accumulate(values)
    return np.maximum.accumulate(np.where(is_new, np.arange(len(values)), 0))


class IntervalSet:
    """Intervals merged once, so any gap asks how much of it they cover in O(log n).

    Parameters:
        start, end: the intervals.
        op, call: per interval, what it stands for (positions or ids a caller looks up by the
            position ``running_at`` and ``first_in`` return); -1 when not given.
    """

    def __init__(
        self,
        start: np.ndarray,
        end: np.ndarray,
        op: np.ndarray | None = None,
        call: np.ndarray | None = None,
    ) -> None:
        none = np.full(len(start), -1, np.int64)
        order = np.argsort(start, kind="stable")
        self.start, self.end = start[order], end[order]
        self.op = (none if op is None else op)[order]
        self.call = (none if call is None else call)[order]
        # The event reaching furthest among those started so far: it encloses t if any does.
        self.reach_at = running_argmax(self.end)
        self.block_start, self.block_end = merged_blocks(self.start, self.end)
        self.before = np.r_[0, np.cumsum(self.block_end - self.block_start)]

    def covered(self, t: np.ndarray) -> np.ndarray:
        """Length of the union that lies before each time t."""
        if len(self.block_start) == 0:
            return np.zeros(len(t), np.int64)
        k = np.searchsorted(self.block_start, t, side="right") - 1
        kk = np.maximum(k, 0)
        inside = np.clip(t - self.block_start[kk], 0, self.block_end[kk] - self.block_start[kk])
        return np.where(k >= 0, self.before[kk] + inside, 0)

    def coverage(self, start: np.ndarray, end: np.ndarray) -> np.ndarray:
        """Per gap [start, end), the length of the union inside it."""
        return np.asarray(self.covered(end) - self.covered(start))

    def running_at(self, t: np.ndarray) -> np.ndarray:
        """Position (in this set) of an event in progress at t, or -1."""
        if len(self.start) == 0:
            return np.full(len(t), -1, np.int64)
        k = np.searchsorted(self.start, t, side="right") - 1
        j = self.reach_at[np.maximum(k, 0)]
        return np.where((k >= 0) & (self.end[j] >= t), j, -1)

    def first_in(self, start: np.ndarray, end: np.ndarray) -> np.ndarray:
        """Position of an event covering the first covered instant of each gap, or -1."""
        if len(self.block_start) == 0:
            return np.full(len(start), -1, np.int64)
        k = np.searchsorted(self.block_end, start, side="right")
        kk = np.minimum(k, len(self.block_start) - 1)
        t = np.maximum(start, self.block_start[kk])
        return np.where((k < len(self.block_start)) & (t < end), self.running_at(t), -1)
