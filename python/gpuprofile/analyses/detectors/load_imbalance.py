"""Load imbalance: one rank computes longer than the others in each step, and they wait.

Per recorded step (analyses/bubbles.py): the busiest rank's compute minus the median rank's.
Fires when, summed over steps, that is a large enough share of the steps' windows (the table in
analyses/thresholds.py). Gain: that sum: with the work spread evenly every rank would finish
with the median one.
"""

from __future__ import annotations

import numpy as np

from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.hints import Hint
from gpuprofile.analyses.thresholds import worth_reporting
from gpuprofile.units import format_count, format_time

FIX = (
    "Give every rank the same work: shard embedding tables, experts or sequences by cost, "
    "not by count (e.g. TorchRec's planner, token-balanced batching, an expert-load loss).",
    "For pipeline parallelism, rebalance the layers between stages so the slowest stage "
    "computes no longer than the others.",
    "If one rank does extra work each step (metrics, logging, checkpoint writes on rank 0), "
    "move it off the step or spread it.",
)


def detect(analysis: Analysis) -> list[Hint]:
    job = analysis.job
    if job is None or not job.steps:
        return []
    excess = 0
    windows = 0
    busiest: dict[int, int] = {}
    for step in job.steps:
        compute = np.array([r.compute_ns for r in step.ranks], np.int64)
        top = int(np.argmax(compute))
        excess += int(compute[top] - np.median(compute))
        windows += step.end_ns - step.start_ns
        rank = step.ranks[top].rank
        busiest[rank] = busiest.get(rank, 0) + 1
    if windows <= 0 or not worth_reporting("load-imbalance", excess, windows):
        return []
    rank = max(busiest, key=lambda r: busiest[r])
    steps = len(job.steps)
    return [
        Hint(
            kind="load-imbalance",
            subject="compute per step",
            title=(
                f"Ranks compute unevenly: the busiest computes {format_time(excess / steps)} "
                "more per step than the median rank"
            ),
            basis_ns=windows,
            gain_ns=excess,
            gain_method=(
                "Per step, the busiest rank's compute minus the median rank's, summed over "
                "steps: the others wait that long for it."
            ),
            confidence="medium",
            explanation=(
                f"Over {format_count(steps, 'step')}, rank {rank} was the busiest in "
                f"{format_count(busiest[rank], 'step')}; the busiest rank computed "
                f"{format_time(excess)} more than the median rank in all."
            ),
            numbers={"excess_ns": excess, "busiest_rank": rank, "steps": steps},
            fix=FIX,
        )
    ]
