"""Lane layout shared by the importers and the views: nesting on threads, rows on streams."""

from __future__ import annotations

import numpy as np

from gpuprofile.trace.model import NO_ID
from gpuprofile.trace.walk import (
    COMPILED,
    compiled_depth_rows,
    compiled_walk,
    event_order,
    first_fit,
    walk,
)


def nest(thread: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Parent position (or NO_ID) and depth of each interval among those of its thread.

    Intervals on one thread nest like call frames; an interval's parent is the innermost one
    that started before it and has not ended: a call-stack walk in start order, longest first
    at equal starts. The walk's answer is reached with whole-column operations, and the walk
    itself runs only over the stretches of a thread where intervals cross.
    """
    n = len(start)
    order = _sorted_order(thread, start, end)
    thread_s, start_s, end_s = thread[order], start[order], end[order]
    # The walk itself, one pass in C, beats the column operations of _nest_sorted.
    walked = compiled_walk(thread_s, start_s, end_s)
    parent_s, depth_s = walked if walked is not None else _nest_sorted(thread_s, start_s, end_s)
    parent = np.full(n, NO_ID, np.int64)
    depth = np.empty(n, np.int32)
    has_parent = parent_s != NO_ID
    parent[order[has_parent]] = order[parent_s[has_parent]]
    depth[order] = depth_s
    return parent, depth


def _sorted_order(thread: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The positions by (thread, start, longest first, position): the timeline's event order
    (the compiled core's merge sort, which finds the runs a thread's ops already have) where
    thread holds small ids from 0 (shared_codes'), else a lexsort."""
    if COMPILED and len(thread) and int(thread.min()) >= 0 and int(thread.max()) < 2**31:
        return event_order(thread.astype(np.int32), start, end)
    return np.lexsort((-(end - start), start, thread))


def _nest_sorted(
    thread: np.ndarray, start: np.ndarray, end: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The call-stack walk's (parent, depth) over intervals sorted as ``nest`` sorts them.

    An interval's depth is how many intervals before it are still open at its start. Where none
    of them cross, they form a chain, and its parent is the last interval before it one level
    up; each interval ending within that parent proves, in sorted order, that none crossed. An
    interval at depth 0 meets an empty stack, so the walk is needed only from the last such
    interval before a crossing to the next one. (Where the compiled core is built, nest walks
    every interval instead; tests/unit/test_nesting.py holds both paths to the walk.)
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
        walked_parent, depth[redo] = walk(thread[redo], start[redo], end[redo])
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


def overlap_rows(lane: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Row of each interval within its lane so that intervals on one row never overlap.

    Kernels on one stream normally run one after another; when a trace shows them overlapping
    they go to extra rows instead of being drawn over each other (or dropped): first fit, in
    start order (walk.first_fit).
    """
    order = np.lexsort((start, lane))
    rows = np.empty(len(start), np.int32)
    rows[order] = first_fit(lane[order], start[order], end[order])
    return rows


def clusters(s: np.ndarray, running: np.ndarray) -> np.ndarray:
    """Cluster of each event: events chained by overlap (running: the running max of end)."""
    return np.cumsum(np.r_[True, s[1:] >= running[:-1]])


def depth_rows(s: np.ndarray, e: np.ndarray, running: np.ndarray) -> np.ndarray:
    """Row of each event of one lane (sorted by start, longest first at equal starts; running:
    the running max of end): its nesting depth, the events open at its start (started before
    it, not yet ended).

    Exact for properly nested events. A partial overlap (a child outliving its parent) can put
    two overlapping events on one row; those clusters get the call-stack walk of nest(). The
    compiled core (walk.py) gives the same rows in one pass; py_depth_rows is its reference."""
    compiled = compiled_depth_rows(s, e)
    return compiled if compiled is not None else py_depth_rows(s, e, running)


def py_depth_rows(s: np.ndarray, e: np.ndarray, running: np.ndarray) -> np.ndarray:
    """depth_rows by whole-column operations (the compiled core's reference)."""
    # Stable: a merge of the runs the ends already have (timsort), not a full quicksort.
    closed = np.searchsorted(np.sort(e, kind="stable"), s, side="right")
    depth = np.arange(len(s)) - closed
    # Zero-length events at an event's start that come after it (they sort last among equal
    # starts) ended "by" its start but are not before it: do not count them, nor itself.
    zero = e == s
    zero_starts = s[zero]  # ascending: the lane runs by start
    if len(zero_starts):
        left = np.searchsorted(zero_starts, s, side="left")
        later = np.searchsorted(zero_starts, s, side="right") - left
        later[zero] -= np.arange(len(zero_starts)) - left[zero]
        depth += later
    bad = _row_conflicts(s, e, depth)
    if len(bad):
        cluster = clusters(s, running)
        redo = np.isin(cluster, np.unique(cluster[bad]))
        depth[redo] = nest(cluster[redo], s[redo], e[redo])[1]
    return depth.astype(np.int32)


def _row_conflicts(s: np.ndarray, e: np.ndarray, row: np.ndarray) -> np.ndarray:
    """Positions of events that overlap the previous event of their row."""
    # Stable (a radix sort on 16 bits): within a row, events stay in start order.
    narrow = row.astype(np.uint16) if int(row.max()) < 2**16 else row
    by_row = np.argsort(narrow, kind="stable")
    conflict = s[by_row[1:]] < e[by_row[:-1]]
    last_of_row = np.cumsum(np.bincount(row)) - 1  # its next event is on another row
    conflict[last_of_row[(last_of_row >= 0) & (last_of_row < len(conflict))]] = False
    return np.asarray(by_row[1:][conflict])
