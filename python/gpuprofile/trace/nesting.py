"""Lane layout shared by the importers and the views: nesting on threads, rows on streams."""

from __future__ import annotations

import numpy as np

from gpuprofile.trace.model import NO_ID


def nest(thread: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Parent position (or NO_ID) and depth of each interval among those of its thread.

    Intervals on one thread nest like call frames; an interval's parent is the innermost one
    that started before it and has not ended: a call-stack walk in start order, longest first
    at equal starts. The walk's answer is reached with whole-column operations, and the walk
    itself runs only over the stretches of a thread where intervals cross.
    """
    n = len(start)
    order = np.lexsort((-(end - start), start, thread))
    thread_s, start_s, end_s = thread[order], start[order], end[order]
    parent_s, depth_s = _nest_sorted(thread_s, start_s, end_s)
    parent = np.full(n, NO_ID, np.int64)
    depth = np.empty(n, np.int32)
    has_parent = parent_s != NO_ID
    parent[order[has_parent]] = order[parent_s[has_parent]]
    depth[order] = depth_s
    return parent, depth


def _nest_sorted(
    thread: np.ndarray, start: np.ndarray, end: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The call-stack walk's (parent, depth) over intervals sorted as ``nest`` sorts them.

    An interval's depth is how many intervals before it are still open at its start. Where none
    of them cross, they form a chain, and its parent is the last interval before it one level
    up; each interval ending within that parent proves, in sorted order, that none crossed. An
    interval at depth 0 meets an empty stack, so the walk is needed only from the last such
    interval before a crossing to the next one.
    """
    n = len(start)
    # Ends and starts merged in (thread, time) order, an end before a start at the same time:
    # the ends counted up to each start are those of earlier threads and those of its own that
    # ended by then.
    merged = np.lexsort(
        (np.r_[np.zeros(n, np.int8), np.ones(n, np.int8)], np.r_[end, start], np.r_[thread, thread])
    )
    ended = np.cumsum(merged < n)
    closed = np.empty(n, np.int64)
    closed[merged[merged >= n] - n] = ended[merged >= n]
    closed -= _empty_at_or_after(thread, start, end)
    depth = (np.arange(n) - closed).astype(np.int32)
    parent = np.full(n, NO_ID, np.int64)
    for level in range(1, int(depth.max(initial=0)) + 1):
        above = np.flatnonzero(depth == level - 1)
        here = np.flatnonzero(depth == level)
        parent[here] = above[np.searchsorted(above, here) - 1]
    inner = parent != NO_ID
    crossing = np.zeros(n, bool)
    crossing[inner] = end[inner] > end[parent[inner]]
    if crossing.any():
        stretch = np.cumsum(depth == 0)
        redo = np.flatnonzero(np.isin(stretch, stretch[crossing]))
        walked_parent, depth[redo] = _nest_walk(thread[redo], start[redo], end[redo])
        parent[redo] = np.where(walked_parent == NO_ID, NO_ID, redo[walked_parent])
    return parent, depth


def _empty_at_or_after(thread: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """For each interval (sorted as ``nest`` sorts them), the empty intervals of its thread at
    its start from its own place on: they count as ended by that start yet do not come before
    it. Empty intervals sort last among equal starts, so they are counted to the end of the
    interval's run of equal (thread, start)."""
    n = len(start)
    from_end = np.append(np.cumsum((end == start)[::-1])[::-1], 0)
    new_run = np.r_[True, (thread[1:] != thread[:-1]) | (start[1:] != start[:-1])]
    run_first = np.flatnonzero(new_run)
    run_stop = np.append(run_first[1:], n)[np.cumsum(new_run) - 1]
    return np.asarray(from_end[:n] - from_end[run_stop])


def _nest_walk(
    thread: np.ndarray, start: np.ndarray, end: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The call-stack walk over intervals sorted as ``nest`` sorts them: (parent, depth)."""
    n = len(start)
    thread_s, start_s, end_s = thread.tolist(), start.tolist(), end.tolist()
    parent_s = [NO_ID] * n
    depth_s = [0] * n
    stack: list[int] = []
    previous = None
    for i in range(n):
        if thread_s[i] != previous:
            stack.clear()
            previous = thread_s[i]
        while stack and end_s[stack[-1]] <= start_s[i]:
            stack.pop()
        if stack:
            parent_s[i] = stack[-1]
            depth_s[i] = len(stack)
        stack.append(i)
    return np.asarray(parent_s, np.int64), np.asarray(depth_s, np.int32)


def overlap_rows(lane: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Row of each interval within its lane so that intervals on one row never overlap.

    Kernels on one stream normally run one after another; when a trace shows them overlapping
    they go to extra rows instead of being drawn over each other (or dropped).
    """
    n = len(start)
    order = np.lexsort((start, lane))
    lane_s, start_s, end_s = lane[order].tolist(), start[order].tolist(), end[order].tolist()
    rows_s = [0] * n
    row_ends: list[int] = []
    previous = None
    for i in range(n):
        if lane_s[i] != previous:
            row_ends = []
            previous = lane_s[i]
        for row, row_end in enumerate(row_ends):
            if row_end <= start_s[i]:
                row_ends[row] = end_s[i]
                rows_s[i] = row
                break
        else:
            rows_s[i] = len(row_ends)
            row_ends.append(end_s[i])
    rows = np.empty(n, np.int32)
    rows[order] = rows_s
    return rows
