"""Lane layout's loops and sorts: the call-stack walks (nesting.py), the timeline's event
order and the op tree's flagged ancestors (analyses/lookups.py), by the compiled core
(``_walk.c``) where it was built, else by the pure-Python twins below (and in lookups.py),
which are the reference: the core gives the same answers (tests/unit/test_walk_core.py). The
walks take columns already sorted as their callers sort them; the order sorts them."""

from __future__ import annotations

from types import ModuleType

import numpy as np

from gpuprofile.trace.model import NO_ID


def py_walk(thread: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, ...]:
    """The call-stack walk over intervals sorted by (thread, start, longest first): (parent,
    depth): each one's parent is the innermost interval still open at its start (NO_ID at
    none), its depth how many are open on the stack then; the stack empties at a new thread."""
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


def py_first_fit(lane: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Intervals sorted by (lane, start): each takes the lowest row of its lane whose last
    interval ended by its start, else a new row."""
    n = len(start)
    lane_s, start_s, end_s = lane.tolist(), start.tolist(), end.tolist()
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
    return np.asarray(rows_s, np.int32)


def py_event_order(lane: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The timeline's id order of events: by lane, then start, then longest first (a parent
    before its child), ties in position order; the positions of the events in that order.

    Stable sorts find the runs each table already has, so this is near linear; only events
    that start at the same time as another are reordered by duration."""
    # A stable sort of 16-bit keys is a radix sort: lanes are few.
    narrow = lane.astype(np.uint16) if len(lane) and int(lane.max()) < 2**16 else lane
    order = np.argsort(narrow, kind="stable")
    lane_s = lane[order]
    bounds = np.flatnonzero(np.diff(lane_s)) + 1
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(order)], strict=True):
        part = order[lo:hi]
        part = part[np.argsort(start[part], kind="stable")]
        s = start[part]
        tied = np.flatnonzero(s[1:] == s[:-1])
        if len(tied):
            at = np.union1d(tied, tied + 1)
            run = np.cumsum(np.r_[True, np.diff(at) > 1] | np.r_[True, s[at][1:] != s[at][:-1]])
            dur = end[part[at]] - s[at]
            part[at] = part[at][np.lexsort((-dur, run))]
        order[lo:hi] = part
    return order


def _int64(*columns: np.ndarray) -> list[np.ndarray] | None:
    """The columns as contiguous int64 for the core, or None where one holds a value int64
    does not equal (the timeline's float64 times are whole nanoseconds; the reference takes
    any other)."""
    out = []
    for values in columns:
        exact = np.ascontiguousarray(values, dtype=np.int64)
        if values.dtype != np.int64 and not np.array_equal(exact, values):
            return None
        out.append(exact)
    return out


_walk: ModuleType | None
try:
    from gpuprofile.trace import _walk
except ImportError:
    _walk = None
COMPILED = _walk is not None


def walk(thread: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, ...]:
    """py_walk's (parent, depth)."""
    walked = compiled_walk(thread, start, end)
    return walked if walked is not None else py_walk(thread, start, end)


def compiled_walk(
    thread: np.ndarray, start: np.ndarray, end: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """py_walk's (parent, depth) by the compiled core; None where it is not built or a time is
    no whole int64 (the caller chooses what runs instead)."""
    columns = _int64(thread, start, end) if _walk is not None else None
    if _walk is None or columns is None:
        return None
    parent = np.empty(len(start), np.int64)
    depth = np.empty(len(start), np.int32)
    _walk.walk(*columns, parent, depth)
    return parent, depth


def first_fit(lane: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """py_first_fit's rows."""
    columns = _int64(lane, start, end) if _walk is not None else None
    if _walk is None or columns is None:
        return py_first_fit(lane, start, end)
    rows = np.empty(len(start), np.int32)
    _walk.first_fit(*columns, rows)
    return rows


def compiled_depth_rows(start: np.ndarray, end: np.ndarray) -> np.ndarray | None:
    """nesting.depth_rows' answer by the compiled core, or None where it is not built or the
    intervals are not sorted by start, longest first (the caller's reference then runs)."""
    columns = _int64(start, end) if _walk is not None else None
    if _walk is None or columns is None:
        return None
    rows = np.empty(len(start), np.int32)
    return rows if _walk.cpu_rows(*columns, rows) else None


def event_order(lane: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """py_event_order's positions (lane: ids from 0)."""
    columns = _int64(start, end) if _walk is not None else None
    if _walk is None or columns is None or lane.dtype != np.int32:
        return py_event_order(lane, start, end)
    order = np.empty(len(start), np.int64)
    if not _walk.event_order(np.ascontiguousarray(lane), *columns, order):
        return py_event_order(lane, start, end)
    return order


def compiled_flagged_ancestors(
    flag: np.ndarray, parent: np.ndarray, *, outermost: bool
) -> np.ndarray | None:
    """Per row, the innermost (outermost) of it and its ancestors with flag set, -1 where none
    is, by the compiled core; None where it is not built or parent (each row's parent's
    position, -1 at a root) is no tree. The references are analyses/lookups.py's
    py_innermost_everywhere and py_outermost_with."""
    if _walk is None:
        return None
    found = np.empty(len(flag), np.int64)
    columns = (np.ascontiguousarray(flag, bool), np.ascontiguousarray(parent, np.int64), found)
    return found if _walk.flagged_ancestors(columns, outermost) else None


def compiled_boxes(
    lane: np.ndarray,
    row: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    ids: np.ndarray | None,
    first_row: np.ndarray,
    t0: float,
    width: float,
    bins: int,
) -> tuple[np.ndarray, ...] | None:
    """The overview's boxes by the compiled core (``_walk.c``'s overview_boxes; the reference
    is widget/tables.py_boxes): per box number its members' count, first member, last end and
    first longest member, then the ids of the events ``width`` long or longer; None where the
    core is not built. ids: ascending, not empty (None: every event)."""
    if _walk is None:
        return None
    boxes = int(first_row[-1]) * bins
    count, first, first_longest = (np.empty(boxes, np.int64) for _ in range(3))
    last_end, longest = np.empty(boxes, np.float64), np.empty(boxes, np.float64)
    long_ids = np.empty(len(lane), np.int64)  # pages never written are never touched
    listed = _walk.overview_boxes(
        np.ascontiguousarray(lane, np.int32),
        np.ascontiguousarray(row, np.int32),
        np.ascontiguousarray(start, np.float64),
        np.ascontiguousarray(end, np.float64),
        np.empty(0, np.int64) if ids is None else np.ascontiguousarray(ids, np.int64),
        np.ascontiguousarray(first_row, np.int64),
        count, first, last_end, longest, first_longest, long_ids,
        float(t0), float(width), int(bins),
    )  # fmt: skip
    return count, first, last_end, first_longest, long_ids[:listed].copy()
