"""The times analyses/code_patterns.py weighs its patterns by: the kernel time under each op,
the backward engine ops of a stretch of forward, and the time an op's bytes take at the
achievable share of DRAM bandwidth."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from gpuprofile.trace.model import NO_ID

if TYPE_CHECKING:
    from gpuprofile.analyses.lookups import Lookups
    from gpuprofile.analyses.modules import Modules


class Backward:
    """The backward engine ops of forward work: autograd's sequence counter rises op by op on a
    forward thread, so the ops of a stretch of forward hold a range of numbers, and the engine
    ops of the grad_fns they made carry numbers in that range (analyses/modules.py)."""

    def __init__(self, analysis: Lookups, modules: Modules, time: np.ndarray) -> None:
        ops = analysis.trace.ops
        self.start = ops["start_ns"].to_numpy(np.int64)
        self.end = self.start + ops["dur_ns"].to_numpy(np.int64)
        self.sequence = ops["sequence"].to_numpy()
        self.rank = ops["rank"].to_numpy()
        engine_rows = analysis.id_index("ops").get_indexer(
            pd.Index(modules.engines["op"].to_numpy())
        )
        engine_rows = engine_rows[engine_rows >= 0]
        self.engine_rows = engine_rows[np.argsort(self.sequence[engine_rows], kind="stable")]
        self.engine_seq = self.sequence[self.engine_rows]
        self.time = time
        numbered = np.flatnonzero((self.sequence != NO_ID) & (self.sequence >= 0))
        self.numbered = numbered[np.argsort(self.start[numbered], kind="stable")]

    def times(
        self, rank: int, rows: np.ndarray, on_gpu: bool, roof_ns: np.ndarray | None = None
    ) -> np.ndarray:
        """The time (kernels' on a GPU rank, else the host's; at most roof_ns) of each engine
        op of the rank whose number the forward ops in [first row's start, last row's end)
        hold."""
        if not len(self.engine_rows) or not len(rows):
            return np.zeros(0, np.int64)
        lo, hi = np.searchsorted(
            self.start[self.numbered], [self.start[rows].min(), self.end[rows].max()]
        )
        inside = self.numbered[lo:hi]
        inside = inside[self.rank[inside] == rank]
        if not len(inside):
            return np.zeros(0, np.int64)
        first, last = self.sequence[inside].min(), self.sequence[inside].max()
        a = np.searchsorted(self.engine_seq, first, side="left")
        b = np.searchsorted(self.engine_seq, last, side="right")
        engines = self.engine_rows[a:b]
        engines = engines[self.rank[engines] == rank]
        time = self.time[engines] if on_gpu else self.end[engines] - self.start[engines]
        return np.asarray(time if roof_ns is None else np.minimum(time, roof_ns[engines]))


def achievable_ns(
    analysis: Lookups, op_costs: pd.DataFrame, dram_bytes_per_s: float, share: float
) -> np.ndarray:
    """Per ops row, the time its bytes (op_costs, one row per ops row) take at ``share`` of
    the DRAM bandwidth; an op without bytes of its own takes the sum of its children's (an
    engine op's backward ops); inf where nothing inside it has bytes."""
    ops = analysis.trace.ops
    # op_costs has one row per ops row, in row order (flops.op_costs).
    nbytes = op_costs["bytes"].to_numpy(np.float64)
    known = np.isfinite(nbytes) & (nbytes > 0)
    roof = np.where(known, nbytes / (dram_bytes_per_s * share) * 1e9, 0.0)
    has = known.copy()
    parent = analysis.op_parents
    depth = ops["depth"].to_numpy()
    # Deepest first, each level adds its known times into parents without bytes of their own.
    for level in range(int(depth.max(initial=0)), 0, -1):
        rows = np.flatnonzero((depth == level) & has & (parent >= 0))
        up = parent[rows]
        rows, up = rows[~known[up]], up[~known[up]]
        np.add.at(roof, up, roof[rows])
        has[up] = True
    return np.where(has, roof, np.inf)


def subtree_kernel_ns(analysis: Lookups, parent: np.ndarray) -> np.ndarray:
    """Per ops row, the time of the kernels it and the ops inside it launched."""
    kernels = analysis.trace.kernels
    total = np.zeros(len(parent), np.int64)
    if kernels.empty:
        return total
    at = analysis.id_index("ops").get_indexer(pd.Index(kernels["op_id"].to_numpy()))
    dur = kernels["dur_ns"].to_numpy(np.int64)
    keep = at >= 0
    at, dur = at[keep], dur[keep]
    while len(at):
        np.add.at(total, at, dur)
        at = parent[at]
        keep = at >= 0
        at, dur = at[keep], dur[keep]
    return total
