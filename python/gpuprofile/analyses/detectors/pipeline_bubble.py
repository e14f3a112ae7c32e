"""Pipeline bubbles beyond the schedule's own (analyses/bubbles.py).

A pipeline of p stages and m microbatches idles (p-1)/(m+p-1) of each step by design (GPipe,
1F1B). Fires when the stages' measured mean bubble fraction exceeds that by enough (the table
in analyses/thresholds.py). Gain: the excess share of the steps' windows.
"""

from __future__ import annotations

from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.hints import Hint
from gpuprofile.analyses.thresholds import worth_reporting
from gpuprofile.units import format_fraction, format_time

FIX = (
    "Balance the stages: the bottleneck stage computes longest; move layers from it to its "
    "neighbours until the stages' step times agree.",
    "Use more microbatches per step (the schedule's own bubble is (p-1)/(m+p-1)) or an "
    "interleaved schedule (torch.distributed.pipelining.ScheduleInterleaved1F1B, Megatron's "
    "virtual pipeline stages).",
    "Overlap the sends and receives with compute (batch_isend_irecv, async P2P).",
)


def detect(analysis: Analysis) -> list[Hint]:
    job = analysis.job
    if job is None or job.pipeline is None:
        return []
    pipe = job.pipeline
    excess = pipe.bubble_fraction - pipe.theoretical_bubble_fraction
    if not worth_reporting("pipeline-bubble", excess, 1.0):
        return []
    windows = sum(step.end_ns - step.start_ns for step in job.steps)
    gain = int(excess * windows)
    return [
        Hint(
            kind="pipeline-bubble",
            subject="pipeline schedule",
            title=(
                f"Pipeline stages idle {format_fraction(pipe.bubble_fraction)} of each step, "
                f"{format_fraction(excess)} beyond the schedule's own bubble"
            ),
            basis_ns=windows,
            gain_ns=gain,
            gain_method=(
                "The stages' mean bubble fraction minus (p-1)/(m+p-1), times the steps' windows."
            ),
            confidence="medium",
            explanation=(
                f"{pipe.stages} stages (ranks {', '.join(map(str, pipe.stage_ranks))}) with "
                f"{pipe.microbatches} microbatches per step: the schedule idles "
                f"{format_fraction(pipe.theoretical_bubble_fraction)} by design, the stages "
                f"idled {format_fraction(pipe.bubble_fraction)} ({format_time(gain)} beyond "
                f"it over the steps). Rank {pipe.bottleneck_rank} computes longest: the "
                "bottleneck stage."
            ),
            numbers={
                "stages": pipe.stages,
                "microbatches": pipe.microbatches,
                "theoretical_bubble_fraction": pipe.theoretical_bubble_fraction,
                "bubble_fraction": pipe.bubble_fraction,
                "bottleneck_rank": pipe.bottleneck_rank,
            },
            fix=FIX,
        )
    ]
