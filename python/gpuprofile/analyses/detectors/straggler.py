"""A straggler: the rank the others wait for in collectives (analyses/stragglers.py).

Fires for the rank that causes the most wait when the delay it adds to the job (per collective
it arrives last at, its arrival minus the one before) is a large enough share of the job's wall
time (the table in analyses/thresholds.py). Gain: that delay, the job time the collectives
would end sooner had it arrived with the others.

With most of the job's ranks missing from the trace (a sample of 2 of 128), the last of the
ranks present may itself wait on ranks the trace does not hold: the finding says so, names
the others as missing, and its confidence is low.
"""

from __future__ import annotations

import pandas as pd

from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.hints import MAX_EVIDENCE_EVENTS, Evidence, Hint
from gpuprofile.analyses.thresholds import worth_reporting
from gpuprofile.units import format_count, format_time

FIX = (
    "Find what the straggler does that the others do not: compare its timeline with another "
    "rank's (click both rank groups) around the collectives it arrives last at.",
    "Balance the work: uneven shards (embedding tables, sequence lengths, experts) make one "
    "rank compute longer before every collective; rebalance them or pad to equal sizes.",
    "Check the host: a rank whose CPU is shared (data loading, logging, checkpointing on rank "
    "0) launches late; move that work to other ranks or off the step.",
    "Check the hardware: a GPU throttling (clocks, temperature) or a slower link shows as one "
    "rank always late; run nvidia-smi -q -d PERFORMANCE on its node.",
)


def detect(analysis: Analysis) -> list[Hint]:
    job = analysis.job
    if job is None or not job.stragglers:
        return []
    worst = job.stragglers[0]
    trace = analysis.trace
    wall = max(analysis.wall_ns(rank) for rank in trace.ranks)
    if not worth_reporting("straggler", worst.delay_ns, wall):
        return []
    others = ", ".join(
        f"rank {s.rank} ({format_time(s.wait_caused_ns)})" for s in job.stragglers[1:4]
    )
    collectives = analysis.collectives
    late = collectives[collectives["last"].to_numpy() & (collectives["rank"] == worst.rank)]
    present, missing = len(job.ranks_present), len(job.missing_ranks)
    sampled = missing > present  # most of the job is not in the trace
    caveat = (
        f" Only {present} of the job's {present + missing} ranks are in the trace: it arrived "
        "last among these, and may itself have waited for ranks the trace does not hold, so "
        "trace every rank (or more of them) before acting on it."
        if sampled
        else ""
    )
    return [
        Hint(
            kind="straggler",
            subject=f"rank {worst.rank}",
            title=(
                f"Rank {worst.rank} is the straggler"
                + (f" of the {present} ranks traced" if sampled else "")
                + f": it holds the job up {format_time(worst.delay_ns)}"
            ),
            basis_ns=wall,
            gain_ns=worst.delay_ns,
            gain_method=(
                "Per collective the rank arrived last at, its arrival minus the previous "
                "arrival: how much sooner each would have ended had it arrived with the others."
            ),
            confidence="low" if sampled else "medium",
            explanation=(
                f"Rank {worst.rank} arrived last at "
                f"{format_count(worst.arrived_last, 'collective')}, "
                f"{format_time(worst.delay_ns)} in all after the rank before it: the time the "
                "job would gain had it arrived with the others. Summed over every rank that "
                f"waited for it, the others waited {format_time(worst.wait_caused_ns)} (ranks "
                "wait side by side, so that sum is no time the job loses)"
                + (f". Why: {worst.cause}" if worst.cause else "")
                + (f". Next: {others}." if others else ".")
                + caveat
            ),
            numbers={
                "rank": worst.rank,
                "wait_caused_ns": worst.wait_caused_ns,
                "arrived_last": worst.arrived_last,
                "delay_ns": worst.delay_ns,
                "cause": worst.cause,
            },
            fix=FIX,
            evidence=_evidence(late, worst.rank),
            rank=None,
        )
    ]


def _evidence(late: pd.DataFrame, rank: int) -> tuple[Evidence, ...]:
    out = []
    for table, rows in late.groupby("table"):
        rows = rows.nlargest(MAX_EVIDENCE_EVENTS, "arrival_ns").sort_values("arrival_ns")
        out.append(
            Evidence(
                table=str(table),
                rank=rank,
                event_ids=tuple(int(i) for i in rows["event_id"]),
                label="collectives it arrived last at",
            )
        )
    return tuple(out)
