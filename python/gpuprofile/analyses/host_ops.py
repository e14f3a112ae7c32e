"""Which host ops a stretch of a rank's time went to: the outermost aten ops (the ops the
program called, not those they call) by their time inside the given windows, largest first;
without aten ops (JAX, Nsight), the host's top-level events. The host-outside-GPU finding names
them for the time around the GPU window, the launch finding for the long launch-bound gaps."""

from __future__ import annotations

import numpy as np
import pandas as pd

from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.intervals import IntervalSet
from gpuprofile.analyses.names import codes, strings

MAIN_OPS = 3


def main_ops(
    analysis: Analysis,
    rank: int,
    windows: IntervalSet,
    leave_out: IntervalSet | None = None,
    limit: int = MAIN_OPS,
) -> dict[str, int]:
    """{op name: its ops' time inside ``windows``, less what ``leave_out`` covers there}, the
    ``limit`` largest; {} without host ops. ``leave_out`` is subtracted op by op, so it must
    lie inside ``windows`` (one-time work inside the windows)."""
    ops = analysis.trace.ops
    mine = analysis.rank_rows("ops", rank)
    rows = mine[analysis.outermost_cpu_ops[mine]]
    if not len(rows):
        rows = mine[analysis.op_parents[mine] < 0]
    if not len(rows):
        return {}
    start = ops["start_ns"].to_numpy()[rows]
    end = start + ops["dur_ns"].to_numpy()[rows]
    inside = windows.coverage(start, end)
    if leave_out is not None:
        inside = inside - leave_out.coverage(start, end)
    # Summed per distinct name over columns, then ranked as a groupby by name would rank them:
    # a text column per rank costs more than the sums.
    _, first, at = np.unique(codes(ops["name"])[rows], return_index=True, return_inverse=True)
    total = np.zeros(len(first), inside.dtype)
    np.add.at(total, at.reshape(-1), inside)
    names = strings(ops["name"], rows=rows[first]).astype(str)
    order = np.argsort(names, kind="stable")
    by_name = pd.Series(total[order], index=names[order])
    by_name = by_name[by_name > 0].sort_values(ascending=False).head(limit)
    return {str(k): int(v) for k, v in by_name.items()}


def windows_of(bounds: list[tuple[int, int]]) -> IntervalSet:
    """The windows [(start, end)] as an IntervalSet."""
    start = np.array([a for a, _ in bounds], np.int64)
    return IntervalSet(start, np.array([b for _, b in bounds], np.int64))
