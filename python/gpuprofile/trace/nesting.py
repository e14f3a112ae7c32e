"""Lane layout shared by the importers and the views: nesting on threads, rows on streams."""

from __future__ import annotations

import numpy as np

from gpuprofile.trace.model import NO_ID


def nest(thread: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Parent position (or NO_ID) and depth of each interval among those of its thread.

    Intervals on one thread nest like call frames; an interval's parent is the innermost one
    that started before it and has not ended.
    """
    n = len(start)
    order = np.lexsort((-(end - start), start, thread))
    thread_s, start_s, end_s = thread[order].tolist(), start[order].tolist(), end[order].tolist()
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
    parent = np.full(n, NO_ID, np.int64)
    depth = np.empty(n, np.int32)
    positions = np.asarray(parent_s, np.int64)
    has_parent = positions != NO_ID
    parent[order[has_parent]] = order[positions[has_parent]]
    depth[order] = depth_s
    return parent, depth


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
