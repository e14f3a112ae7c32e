"""Each recorded step's GPU span, from the trace's GPU-side step markers.

Kineto projects each ``ProfilerStep#N`` range onto the GPU timeline (a ``gpu_user_annotation``
from the step's first GPU work to its last, on the lane of a device and stream). A step's
window is that marker's span; its busy time is the union of the rank's kernels, memcpys and
memsets clipped to the window (all devices and streams of the rank, as the whole-window
figures count them); idle is the rest. This is TraceLens's default GPU timeline. Work
outside every marker (the carry-over of analyses/carry_over.py, the gaps between steps) is
in the whole-window figures only. Markers shorter than half the GPU work their host step
launched are not the steps (some traces write microsecond markers for millisecond steps): the
rank then has no GPU steps, and step times come from the host's ranges.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuprofile.analyses.intervals import IntervalSet
from gpuprofile.analyses.lookups import Lookups
from gpuprofile.analyses.steps import is_step
from gpuprofile.trace.model import NO_ID


@dataclass(frozen=True)
class GpuStep:
    name: str
    start_ns: int
    window_ns: int
    busy_ns: int
    idle_ns: int


def gpu_steps(facts: Lookups, rank: int) -> list[GpuStep]:
    """The GPU span of each step marker of one rank.

    Parameters:
        facts: any trace and its lookups (an Analysis).
        rank: the rank.

    Returns:
        One GpuStep per ``ProfilerStep#N`` marker on the GPU timeline, in time order (ties by
        name); [] when the rank has none.
    """
    marks = facts.trace.gpu_annotations
    marks = marks[marks["rank"].to_numpy() == rank]
    marks = marks[is_step(marks["name"])]
    if marks.empty:
        return []
    start = marks["start_ns"].to_numpy(np.int64)
    end = start + marks["dur_ns"].to_numpy(np.int64)
    activity = facts.gpu_activity(rank)
    busy = IntervalSet(
        activity["start_ns"].to_numpy(np.int64), activity["end_ns"].to_numpy(np.int64)
    ).coverage(start, end)
    steps = [
        GpuStep(str(n), int(s), int(e - s), int(b), int(e - s - b))
        for n, s, e, b in zip(marks["name"].astype(str), start, end, busy, strict=True)
    ]
    if not _markers_hold_their_work(facts, rank, steps):
        return []
    return sorted(steps, key=lambda step: (step.start_ns, step.name))


def _markers_hold_their_work(facts: Lookups, rank: int, steps: list[GpuStep]) -> bool:
    """Whether each marker spans at least half of the GPU work its host step launched (its
    kernels whose launching op starts inside the host's ``ProfilerStep#N``). Some traces
    write markers of microseconds for steps of milliseconds (ROCm, torch 2.x): steps read from
    them would be the markers' length, not the steps'."""
    ops = facts.rank_table("ops", rank)
    host = ops[is_step(ops["name"])]
    kernels = facts.rank_table("kernels", rank)
    launched = kernels[kernels["op_id"].to_numpy() != NO_ID]
    if host.empty or launched.empty:
        return True
    op_start = ops.set_index("id")["start_ns"]
    at = op_start.reindex(launched["op_id"].to_numpy()).to_numpy(np.float64)
    kernel_start = launched["start_ns"].to_numpy(np.int64)
    kernel_end = kernel_start + launched["dur_ns"].to_numpy(np.int64)
    spans = dict(
        zip(host["name"].astype(str), zip(host["start_ns"], host["start_ns"] + host["dur_ns"]))
    )
    for step in steps:
        if step.name not in spans:
            continue
        a, b = spans[step.name]
        inside = (at >= a) & (at < b)
        if not inside.any():
            continue
        work = int(kernel_end[inside].max() - kernel_start[inside].min())
        if step.window_ns * 2 < work:
            return False
    return True
