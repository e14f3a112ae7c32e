"""GPU work the trace did not launch: the backlog of work queued before recording began.

A profiler that starts while the GPU still works through kernels queued earlier (the warm-up's
last launches, asynchronous copies) records those kernels, memcpys and memsets, but not the
runtime calls that launched them. Kineto still gives each one its launch's correlation id (and
a flow end, whose start is missing), so they are told apart by that id.

The rule, per rank: a GPU event (kernel, memcpy, memset) is carry-over when

- its correlation id is known (> 0; Kineto writes 0 or nothing where it has none),
- no runtime call of the rank has that id (a CUDA graph's kernels all share the id of their
  ``cudaGraphLaunch``/``hipGraphLaunch``, so replays are matched, not counted), and
- the id is below the rank's first recorded runtime call's: correlation ids grow with each
  launch, so a missing launch with a lower id was made before recording began. A missing
  launch inside the recorded range (a trimmed or sampled trace) is not carry-over.

A rank whose trace records no runtime call with a correlation id (traces without launches or
flows, CPU-only traces, sources without correlation) has none: nothing to tell them apart by.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from gpuprofile.analyses.intervals import union_length
from gpuprofile.trace.model import Trace

GPU_TABLES = ("kernels", "memcpy", "memset")


@dataclass(frozen=True)
class CarryOver:
    """The carry-over of one rank: its GPU events by table (ids), their count, the union of
    their intervals (busy_ns) and where they lie (start_ns, end_ns: first start, last end)."""

    rank: int
    event_ids: dict[str, tuple[int, ...]]
    events: int
    busy_ns: int
    start_ns: int
    end_ns: int


def carry_over(trace: Trace) -> list[CarryOver]:
    """The carry-over of each rank that has any (module docstring for the rule).

    Parameters:
        trace: any trace.

    Returns:
        One CarryOver per rank with carry-over, in rank order; [] when none has.
    """
    found = []
    for rank in trace.ranks:
        result = _rank_carry_over(trace, rank)
        if result is not None:
            found.append(result)
    return found


def _rank_carry_over(trace: Trace, rank: int) -> CarryOver | None:
    runtime = trace.runtime
    launched = runtime["correlation"].to_numpy(np.int64)[runtime["rank"].to_numpy() == rank]
    launched = launched[launched > 0]
    if not len(launched):
        return None
    first_launch = int(launched.min())
    ids: dict[str, tuple[int, ...]] = {}
    starts, ends = [], []
    for name in GPU_TABLES:
        table: pd.DataFrame = trace.table(name)
        corr = table["correlation"].to_numpy(np.int64)
        # Below the first recorded launch's id no launch is in the trace: no lookup needed.
        mine = (table["rank"].to_numpy() == rank) & (corr > 0) & (corr < first_launch)
        if not mine.any():
            continue
        start = table["start_ns"].to_numpy(np.int64)[mine]
        starts.append(start)
        ends.append(start + table["dur_ns"].to_numpy(np.int64)[mine])
        ids[name] = tuple(int(i) for i in table["id"].to_numpy(np.int64)[mine])
    if not ids:
        return None
    start, end = np.concatenate(starts), np.concatenate(ends)
    return CarryOver(
        rank=rank,
        event_ids=ids,
        events=len(start),
        busy_ns=union_length(start, end),
        start_ns=int(start.min()),
        end_ns=int(end.max()),
    )
