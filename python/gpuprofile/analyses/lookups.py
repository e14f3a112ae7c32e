"""Lookups on a trace's tables that several analyses need: how to compute them, and what the
Analysis (context.py) that caches them once per trace offers (``Lookups``).

The arrays are shared between callers, so they are read-only. The op tree is asked here: each
op's parent row (op_parents; an op's depth is the trace's own ``ops.depth`` column), and the
ancestor queries every analysis walks the tree with (outermost_with, has_ancestor,
innermost_with, innermost_everywhere), so none climbs parents by hand.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np
import pandas as pd

from gpuprofile.analyses.names import matches
from gpuprofile.trace.codes import shared_codes
from gpuprofile.trace.links import THREAD
from gpuprofile.trace.model import NO_ID, Trace
from gpuprofile.trace.walk import compiled_flagged_ancestors

if TYPE_CHECKING:
    from gpuprofile.analyses.kernel_kind import KernelClasses


class Lookups(Protocol):
    """A trace and its lookups, each computed once: the Analysis is one. The analyses that
    walk a trace's rows take this instead of the Trace, so that none recomputes them."""

    @property
    def trace(self) -> Trace: ...

    @property
    def op_parents(self) -> np.ndarray: ...

    @property
    def cpu_op_tree(self) -> CpuOpTree: ...

    @property
    def outermost_cpu_ops(self) -> np.ndarray: ...

    def id_index(self, table: str) -> pd.Index: ...

    def rank_rows(self, table: str, rank: int) -> np.ndarray: ...

    def rank_table(self, table: str, rank: int) -> pd.DataFrame: ...

    def gpu_activity(self, rank: int) -> pd.DataFrame: ...

    @property
    def kernel_classes(self) -> KernelClasses: ...


def op_parents(trace: Trace, ops_ids: pd.Index) -> np.ndarray:
    """Per ops row, the row position of its parent (by id), -1 when the trace has none.
    ops_ids: id_index(trace, "ops")."""
    parent = trace.ops["parent"].to_numpy()
    found = ops_ids.get_indexer(pd.Index(parent))
    return read_only(np.where(parent == NO_ID, -1, found))


def outermost_with(flag: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Per row, the position of its outermost ancestor-or-self with flag set, else -1.

    parent: per row, its parent's position (-1 at a root), as op_parents gives, or the same
    over a subset of rows (positions within it)."""
    if not flag.any():  # nothing flagged: no walk up the tree
        return np.full(len(flag), -1, np.int64)
    found = compiled_flagged_ancestors(flag, parent, outermost=True)
    return found if found is not None else py_outermost_with(flag, parent)


def py_outermost_with(flag: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """outermost_with in numpy: the reference of the compiled core (trace/_walk.c)."""
    # Pointer doubling: best[i] is the outermost flagged row on the path from i up to, not
    # including, jump[i]; each pass doubles the path, so stacks 50 deep take 6 passes.
    best = np.where(flag, np.arange(len(flag)), -1)
    jump = parent.copy()
    rows = np.flatnonzero(jump >= 0)
    while len(rows):
        above = jump[rows]
        higher = best[above]
        found = higher >= 0
        best[rows[found]] = higher[found]
        jump[rows] = jump[above]
        rows = rows[jump[rows] >= 0]
    return best


def has_ancestor(flag: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Per row, whether a strict ancestor (its parent, or the parent's ancestors) has flag set."""
    above = outermost_with(flag, parent)
    return np.asarray((parent >= 0) & (above[np.maximum(parent, 0)] >= 0))


def innermost_with(flag: np.ndarray, parent: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Per row of rows, the position of its innermost ancestor-or-self with flag set, else -1."""
    if not flag.any():  # nothing flagged: no climb to every root
        return np.full(len(rows), -1, np.int64)
    at = np.asarray(rows, dtype=np.int64).copy()
    climbing = np.flatnonzero(at >= 0)
    while len(climbing):
        here = at[climbing]
        climbing = climbing[~flag[here]]  # found: stop there
        at[climbing] = parent[at[climbing]]
        climbing = climbing[at[climbing] >= 0]
    return at


def innermost_everywhere(flag: np.ndarray, parent: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """innermost_with for every row at once, each row looked at once (climbing from each row
    costs one look per ancestor). depth: each row's depth in the tree parent describes (the
    trace's ``ops.depth``, 0 at a root), which the reference below walks by."""
    found = compiled_flagged_ancestors(flag, parent, outermost=False)
    return found if found is not None else py_innermost_everywhere(flag, parent, depth)


def py_innermost_everywhere(flag: np.ndarray, parent: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """innermost_everywhere in numpy, the reference of the compiled core (trace/_walk.c): one
    pass per level of the tree, top down (a row takes itself when flagged, else its parent's
    answer)."""
    n = len(flag)
    nearest = np.where(flag, np.arange(n), -1)
    if not n:
        return nearest
    if depth.min() < 0:  # a table without nesting: climb instead
        return innermost_with(flag, parent, np.arange(n))
    order = np.argsort(depth, kind="stable")
    bounds = np.searchsorted(depth[order], np.arange(int(depth.max()) + 2)).tolist()
    for lo, hi in itertools.pairwise(bounds[1:]):  # level 1 on: roots have no parent
        rows = order[lo:hi]
        open_rows = rows[nearest[rows] < 0]
        nearest[open_rows] = nearest[parent[open_rows]]
    return nearest


@dataclass(frozen=True)
class CpuOpTree:
    """Per ops row: start, end, cpu_op or not, aten cpu_op or not, parent position (-1 if
    none), host thread; per runtime row, its host thread (one integer per (rank, pid, tid),
    the same in both tables); and the cpu_op rows ordered by (thread, start), with each one's
    thread, so that searchsorted finds a thread's ops and the op running at a time."""

    start: np.ndarray
    end: np.ndarray
    is_cpu_op: np.ndarray
    is_aten: np.ndarray
    parent: np.ndarray
    op_thread: np.ndarray
    runtime_thread: np.ndarray
    by_thread: np.ndarray
    thread: np.ndarray


def cpu_op_tree(trace: Trace, parents: np.ndarray) -> CpuOpTree:
    """parents: op_parents of the trace."""
    ops = trace.ops
    start = ops["start_ns"].to_numpy()
    is_cpu_op = (ops["category"] == "cpu_op").to_numpy()
    cpu_rows = np.flatnonzero(is_cpu_op)
    # The threads are kept here, not in a cache of their own: whoever asks them also walks
    # this tree (idle's blocking calls, attention's ops on one thread).
    op_thread, runtime_thread = shared_codes([ops, trace.runtime], THREAD)
    cpu_thread = op_thread[cpu_rows]
    # By thread, then start; ties in row order (lexsort is stable).
    order = np.lexsort((start[cpu_rows], cpu_thread))
    tree = CpuOpTree(
        start=start,
        end=start + ops["dur_ns"].to_numpy(),
        is_cpu_op=is_cpu_op,
        is_aten=is_cpu_op & matches(ops["name"], re.compile(r"^aten::")),
        parent=parents,
        op_thread=op_thread,
        runtime_thread=runtime_thread,
        by_thread=cpu_rows[order],
        thread=cpu_thread[order],
    )
    for array in (
        tree.start,
        tree.end,
        tree.is_cpu_op,
        tree.is_aten,
        tree.op_thread,
        tree.runtime_thread,
        tree.by_thread,
        tree.thread,
    ):
        read_only(array)
    return tree


def id_index(trace: Trace, table: str) -> pd.Index:
    """The ids of a table's rows, as an Index for looking rows up by id (get_indexer)."""
    ids: pd.Index = pd.Index(trace.table(table)["id"].to_numpy())
    return ids


def rows_by_id(facts: Lookups, table: str, ids: np.ndarray) -> np.ndarray:
    """Row positions of ids in a table, failing as .set_index("id").loc[ids] does for an id it
    lacks."""
    index = facts.id_index(table)
    rows = index.get_indexer(pd.Index(ids))
    if (rows < 0).any():
        raise KeyError(f"{table} ids not in the trace: {np.asarray(ids)[rows < 0][:5].tolist()}")
    return rows


def rows_per_rank(trace: Trace, table: str) -> dict[int, np.ndarray]:
    """Per rank, the row positions of its rows in a table, in row order (read-only): one sort
    per table, where a mask per rank and caller would scan the whole table each time."""
    ranks = trace.table(table)["rank"].to_numpy()
    order = np.argsort(ranks, kind="stable")
    values, first = np.unique(ranks[order], return_index=True)
    if not len(values):
        return {}
    return {
        int(rank): read_only(rows)
        for rank, rows in zip(values.tolist(), np.split(order, first[1:]), strict=True)
    }


def read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


# A rank's rows of a table it has none in (Analysis.rank_rows).
NO_ROWS = read_only(np.zeros(0, np.int64))
