"""Where a rank's GPU time goes: busy, idle, compute and non-compute within its GPU window.

The window runs from the first GPU activity (kernel, memcpy or memset) to the last one's end;
in a --steps capture, within each recorded window, summed (analyses/windows.py).
Busy is the union of those intervals; compute is the union of compute kernels alone. These
are HTA's temporal-breakdown definitions: the figures equal HTA 0.5's (run with
include_last_profiler_step=True and HTA_DISABLE_NS_ROUNDING=1) except where HTA also counts
cuda_sync waits, CPU ops that carry a "stream" argument (Triton launchers), or drops GPU events
that have no CPU launch in the trace; tests/traces/test_hta_breakdown.py shows each case.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from gpuprofile.analyses.intervals import union_length
from gpuprofile.analyses.kernel_kind import COMPUTE
from gpuprofile.analyses.lookups import Lookups
from gpuprofile.analyses.windows import recorded_span


@dataclass(frozen=True)
class GpuTime:
    rank: int
    start_ns: int
    window_ns: int
    busy_ns: int
    idle_ns: int
    compute_ns: int
    non_compute_ns: int

    @property
    def busy_pct(self) -> float:
        return 100.0 * self.busy_ns / self.window_ns if self.window_ns else 0.0


def gpu_activity(facts: Lookups, rank: int) -> pd.DataFrame:
    """Kernels, memcpys and memsets of one rank as (start_ns, end_ns), in that table order
    (``Analysis.gpu_activity``)."""
    starts, ends = [], []
    for name in ("kernels", "memcpy", "memset"):
        table, rows = facts.trace.table(name), facts.rank_rows(name, rank)
        start = table["start_ns"].to_numpy()[rows]
        starts.append(start)
        ends.append(start + table["dur_ns"].to_numpy()[rows])
    return pd.DataFrame({"start_ns": np.concatenate(starts), "end_ns": np.concatenate(ends)})


def gpu_time(facts: Lookups, rank: int) -> GpuTime | None:
    """The GPU breakdown of one rank, or None when the rank has no GPU activity
    (``Analysis.gpu_time``)."""
    trace, activity = facts.trace, facts.gpu_activity(rank)
    if activity.empty:
        return None
    start = activity["start_ns"].to_numpy(np.int64)
    end = activity["end_ns"].to_numpy(np.int64)
    window = recorded_span(trace, start, end)
    busy = union_length(start, end)
    # The same rows in the same order as gpu_activity's: kernels by their class; copies and
    # sets are never compute.
    kinds = facts.kernel_classes.kinds_of(trace.kernels["name"])[facts.rank_rows("kernels", rank)]
    others = len(facts.rank_rows("memcpy", rank)) + len(facts.rank_rows("memset", rank))
    compute_rows = np.concatenate([kinds == COMPUTE, np.zeros(others, dtype=bool)])
    compute = union_length(start[compute_rows], end[compute_rows])
    return GpuTime(
        rank=rank,
        start_ns=int(start.min()),
        window_ns=window,
        busy_ns=busy,
        idle_ns=window - busy,
        compute_ns=compute,
        non_compute_ns=busy - compute,
    )
