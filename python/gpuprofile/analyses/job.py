"""The job view of a multi-rank trace: which ranks, how their clocks were aligned, the
collectives and their bandwidth, stragglers, bubbles per step and the pipeline.

Bus bandwidth follows nccl-tests (PERFORMANCE.md there): an instance's algorithm bandwidth is
its message bytes over its transfer time, the shortest time any member spent in it (the last
to arrive does not wait, so its time is the transfer); bus bandwidth is that times 2(n-1)/n for
all-reduce, (n-1)/n for all-gather, reduce-scatter and all-to-all, 1 for broadcast, reduce and
point-to-point, n being the group's size.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from gpuprofile.analyses.bubbles import Pipeline, Step, bubbles, compute_events, pipeline
from gpuprofile.analyses.kernel_kind import KernelClasses
from gpuprofile.analyses.stragglers import Straggler, stragglers
from gpuprofile.trace.meta import world_size
from gpuprofile.trace.model import NO_ID, Trace


@dataclass(frozen=True)
class CollectiveSummary:
    group: str
    name: str
    count: int  # matched instances
    bytes: int | None  # median message bytes of an instance; None unknown
    mean_wait_ns: dict[int, int]  # per rank
    alg_bytes_per_s: float | None
    bus_bytes_per_s: float | None
    link_roof_bytes_per_s: float | None  # the device's peer link (NVLink), one direction


@dataclass(frozen=True)
class Job:
    world_size: int | None  # as the traces declare (distributedInfo); None when none does
    ranks_present: tuple[int, ...]
    missing_ranks: tuple[int, ...]  # below world_size (else below the highest rank) and absent
    steps: tuple[Step, ...]
    stragglers: tuple[Straggler, ...]
    pipeline: Pipeline | None
    collectives: tuple[CollectiveSummary, ...]


def job(
    trace: Trace,
    collectives: pd.DataFrame,
    idle_gaps: pd.DataFrame,
    classes: KernelClasses,
    labels: Mapping[str, str],
    link_roof_bytes_per_s: float | None = None,
) -> Job:
    """The job view of an aligned multi-rank trace.

    Parameters:
        trace: the trace, clocks aligned.
        collectives: ``Analysis.collectives`` (collectives.match_collectives).
        idle_gaps: ``Analysis.idle_gaps``.
        classes: ``Analysis.kernel_classes``.
        labels: ``Analysis.kernel_labels`` (the kernels' short names).
        link_roof_bytes_per_s: the roof of bus bandwidth (Hardware.peer_link_bytes_per_s).
    """
    present = tuple(trace.ranks)
    world = world_size(trace.meta)
    expected = range(world) if world is not None else range(max(present, default=-1) + 1)
    # What each rank computed, found once for the bubbles and the stragglers.
    compute = compute_events(trace, classes)
    steps = bubbles(trace, collectives, compute)
    return Job(
        world_size=world,
        ranks_present=present,
        missing_ranks=tuple(r for r in expected if r not in present),
        steps=tuple(steps),
        stragglers=tuple(stragglers(trace, collectives, idle_gaps, compute, labels)),
        pipeline=pipeline(steps, collectives),
        collectives=tuple(summarize(collectives, link_roof_bytes_per_s)),
    )


_BUS_FACTOR = {
    "allreduce": lambda n: 2 * (n - 1) / n,
    "allgather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
}


def bus_factor(name: str, n: int) -> float:
    """nccl-tests' factor from algorithm to bus bandwidth for a collective of n ranks."""
    factor = _BUS_FACTOR.get(name)
    return factor(n) if factor is not None and n > 0 else 1.0


def summarize(
    collectives: pd.DataFrame, link_roof_bytes_per_s: float | None = None
) -> list[CollectiveSummary]:
    """Per (group, collective): instances, bytes, each rank's mean wait and the bandwidths;
    the heaviest (most wait) first."""
    out = []
    for (group, name), rows in collectives.groupby(["group", "name"], sort=True):
        instances = rows.groupby("instance")
        count = instances.ngroups
        sizes = rows.loc[rows["bytes"] != NO_ID].groupby("instance")["bytes"].max()
        ends = rows["end_ns"].to_numpy()
        spent = pd.Series(np.where(ends != NO_ID, ends - rows["arrival_ns"].to_numpy(), np.nan))
        transfer = spent.groupby(rows["instance"].to_numpy()).min()
        members = instances["rank"].size()
        group_size = rows.groupby("instance")["group_size"].max()
        n = group_size.where(group_size > 0, members)
        known = sizes.index.intersection(transfer.dropna().index)
        known = known[transfer.reindex(known).to_numpy() > 0]
        alg = bus = None
        if len(known):
            seconds = transfer.reindex(known).to_numpy() / 1e9
            alg = float(sizes.reindex(known).sum() / seconds.sum())
            factors = np.array([bus_factor(str(name), int(k)) for k in n.reindex(known)])
            bus = float((sizes.reindex(known).to_numpy() * factors).sum() / seconds.sum())
        out.append(
            CollectiveSummary(
                group=str(group),
                name=str(name),
                count=int(count),
                bytes=int(sizes.median()) if len(sizes) else None,
                mean_wait_ns=_mean_waits(rows),
                alg_bytes_per_s=alg,
                bus_bytes_per_s=bus,
                link_roof_bytes_per_s=link_roof_bytes_per_s,
            )
        )
    return sorted(out, key=lambda c: -sum(c.mean_wait_ns.values()) * c.count)


def _mean_waits(rows: pd.DataFrame) -> dict[int, int]:
    means = rows.groupby("rank")["wait_ns"].mean()
    return {int(r): round(w) for r, w in zip(means.index.tolist(), means.tolist(), strict=True)}
