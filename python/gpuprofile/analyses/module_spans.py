"""Interval sums by module for the module rows (module_rows.py): unions of each module's
intervals, the intervals lifted to every module above, and the allocator events inside them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from gpuprofile.analyses.memory_use import main_device

if TYPE_CHECKING:
    from gpuprofile.analyses.context import Analysis


def with_ancestors(module: np.ndarray, parents: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(position, module) pairs: each position with its module and every module above it."""
    positions, owners = [], []
    at = np.arange(len(module))
    current = module.astype(np.int64)
    while len(at):
        positions.append(at)
        owners.append(current)
        up = parents[current]
        at, current = at[up >= 0], up[up >= 0]
    if not positions:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(positions), np.concatenate(owners)


def blocks(
    group: np.ndarray, start: np.ndarray, end: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The union of each group's [start, end) intervals as disjoint blocks: (group, block
    start, block end), by group then time."""
    if not len(group):
        return group[:0], start[:0], end[:0]
    order = np.lexsort((start, group))
    g, s, e = group[order], start[order], end[order]
    reach = _running_max(g, e)
    new = np.r_[True, (g[1:] != g[:-1]) | (s[1:] > reach[:-1])]
    first = np.flatnonzero(new)
    return g[first], s[first], np.maximum.reduceat(e, first)


def _running_max(group: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per position, the largest value so far within its group (groups sorted, contiguous):
    one running maximum over values lifted by group, so no group's reaches into the next."""
    low, high = int(values.min()), int(values.max())
    span = high - low + 1
    count = int(group.max()) + 1
    if values.dtype.kind not in "iu" or int(group.min()) < 0 or count * span >= 2**62:
        return np.asarray(pd.Series(values).groupby(group).cummax().to_numpy())
    lift = group.astype(np.int64) * span - low
    return np.asarray(np.maximum.accumulate(values.astype(np.int64) + lift) - lift)


def union_by(group: np.ndarray, start: np.ndarray, end: np.ndarray, n: int) -> np.ndarray:
    """Per group 0..n-1, the length of its intervals' union."""
    g, s, e = blocks(np.asarray(group, np.int64), start, end)
    return np.bincount(g, weights=e - s, minlength=n).astype(np.int64)


def union(start: np.ndarray, end: np.ndarray) -> int:
    return int(union_by(np.zeros(len(start), np.int64), start, end, 1)[0])


def memory_by_module(
    analysis: Analysis,
    rank: int,
    module: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    e_module: np.ndarray,
    e_start: np.ndarray,
    e_end: np.ndarray,
    parents: np.ndarray,
) -> tuple[np.ndarray, np.ndarray] | None:
    """(alloc_bytes, peak_bytes) per module, None without allocator events on the rank."""
    memory = analysis.rank_table("memory", rank)
    if not len(memory):
        return None
    # The device the memory view and the peak gauge tell of.
    mine = memory[memory["device"].to_numpy() == main_device(memory)].sort_values(
        "time_ns", kind="stable"
    )
    time = mine["time_ns"].to_numpy()
    nbytes = mine["bytes"].to_numpy()
    total = mine["total_allocated"].to_numpy()
    n = len(parents)
    # Intervals: each call, and each engine op lifted to every module above its own.
    at, owner = with_ancestors(e_module, parents)
    group = np.concatenate([module, owner])
    lo_all = np.concatenate([start, e_start[at]])
    hi_all = np.concatenate([end, e_end[at]])
    # alloc: the allocations inside each module's blocks, each once.
    allocated = np.r_[0, np.cumsum(np.maximum(nbytes, 0))]
    g, s, e = blocks(group, lo_all, hi_all)
    inside = allocated[np.searchsorted(time, e, "right")] - allocated[np.searchsorted(time, s)]
    alloc = np.bincount(g, weights=inside, minlength=n).astype(np.int64)
    # peak: the highest total within an interval above the total when it began.
    lo = np.searchsorted(time, lo_all)
    hi = np.searchsorted(time, hi_all, "right")
    has = hi > lo
    rise = np.zeros(n, np.int64)
    if has.any() and len(total):
        bounds = np.ravel(np.column_stack([lo[has], hi[has]]))
        highest = np.maximum.reduceat(np.r_[total, 0], bounds)[::2]
        # Before the first event: its total less its own bytes (a total carried from before).
        first = int(total[0] - nbytes[0]) if total[0] >= 0 else 0
        before = np.where(lo[has] > 0, total[np.maximum(lo[has] - 1, 0)], first)
        np.maximum.at(rise, group[has], np.maximum(highest - before, 0))
    return alloc, rise
