"""Each recorded step's GPU span, from the trace's GPU-side step markers.

Kineto projects each ``ProfilerStep#N`` range onto the GPU timeline (a ``gpu_user_annotation``
from the step's first GPU work to its last, on the lane of a device and stream). A step's
window is that marker's span; its busy time is the union of the rank's kernels, memcpys and
memsets clipped to the window (all devices and streams of the rank, as the whole-window
figures count them); idle is the rest. This is TraceLens's default GPU timeline. Work
outside every marker (the carry-over of analyses/carry_over.py, the gaps between steps) is
in the whole-window figures only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuprofile.analyses.intervals import IntervalSet
from gpuprofile.analyses.lookups import Lookups
from gpuprofile.analyses.steps import is_step


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
    return sorted(steps, key=lambda step: (step.start_ns, step.name))
