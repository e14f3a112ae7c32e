"""The report's job view: ``distributed`` at the top, and each rank's ``distributed``."""

from __future__ import annotations

from typing import Any

from gpuprofile.analyses.bubbles import mean_bubble
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.roofline import OVER_ROOF


def job_report(analysis: Analysis) -> dict[str, Any] | None:
    """``Report.distributed`` (report/schema.py ``Job``), as plain JSON; None for one rank."""
    job = analysis.job
    if job is None:
        return None
    alignment = analysis.alignment
    pipe = job.pipeline
    return {
        "world_size": job.world_size,
        "ranks_present": list(job.ranks_present),
        "missing_ranks": list(job.missing_ranks),
        "clock": {
            "method": alignment.method,
            "residual_ns": alignment.residual_ns,
            "collectives": alignment.collectives,
        },
        "stragglers": [
            {
                "rank": s.rank,
                "wait_caused_ns": s.wait_caused_ns,
                "arrived_last": s.arrived_last,
                "cause": s.cause,
            }
            for s in job.stragglers
        ],
        "pipeline": None
        if pipe is None
        else {
            "stages": pipe.stages,
            "stage_ranks": list(pipe.stage_ranks),
            "microbatches": pipe.microbatches,
            "theoretical_bubble_fraction": pipe.theoretical_bubble_fraction,
            "bubble_fraction": pipe.bubble_fraction,
            # Measured beyond the schedule's own: what balancing the stages can give back.
            "excess_bubble_fraction": pipe.bubble_fraction - pipe.theoretical_bubble_fraction,
            "bottleneck_rank": pipe.bottleneck_rank,
        },
        "collectives": [
            {
                "group": c.group,
                "name": c.name,
                "count": c.count,
                "bytes": c.bytes,
                "mean_wait_ns": {str(r): w for r, w in c.mean_wait_ns.items()},
                "alg_bytes_per_s": c.alg_bytes_per_s,
                "bus_bytes_per_s": c.bus_bytes_per_s,
                # The device's NVLink, one direction (null: not known), and bus / that.
                "link_roof_bytes_per_s": c.link_roof_bytes_per_s,
                "pct_of_link_roof": _pct_of_link(c.bus_bytes_per_s, c.link_roof_bytes_per_s),
            }
            for c in job.collectives
        ],
        "steps": [
            {
                "step": s.step,
                "start_ns": s.start_ns,
                "end_ns": s.end_ns,
                "ranks": [
                    {
                        "rank": r.rank,
                        "compute_ns": r.compute_ns,
                        "wait_ns": r.wait_ns,
                        "bubble_fraction": r.bubble_fraction,
                    }
                    for r in s.ranks
                ],
            }
            for s in job.steps
        ],
    }


def rank_job_report(analysis: Analysis, rank: int) -> dict[str, Any] | None:
    """``Report.ranks[i].distributed`` (``RankJob``), as plain JSON; None for one rank."""
    job = analysis.job
    if job is None:
        return None
    collectives = analysis.collectives
    overlap = analysis.comm_overlap[rank]
    facts = analysis.trace.meta.ranks.get(rank)
    return {
        "clock_offset_ns": facts.clock_offset_ns if facts is not None else 0,
        "bubble_fraction": mean_bubble(list(job.steps), rank),
        "wait_ns": int(collectives.loc[collectives["rank"] == rank, "wait_ns"].sum()),
        "exposed_comm_ns": overlap.exposed_ns if overlap is not None else 0,
        "comm_compute_overlap": overlap.overlap if overlap is not None else None,
    }


def _pct_of_link(bus: float | None, roof: float | None) -> float | None:
    """Bus bandwidth as a percent of the link's, None where unknown or past OVER_ROOF times
    the link (below zero, or a byte count no link carries in that time: the counts are wrong)."""
    if bus is None or not roof:
        return None
    pct = 100 * bus / roof
    return pct if 0 <= pct <= OVER_ROOF * 100 else None
