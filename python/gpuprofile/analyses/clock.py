"""Ranks' clocks aligned: the trace clocks first, then refined from collectives' ends.

Every rank's times start from its trace's own clock: Kineto's ``baseTimeNanoseconds`` plus its
``ts`` (or absolute ``ts`` where a trace has no base). Hosts' clocks disagree by microseconds
to milliseconds, more than many waits. A synchronizing collective (all-reduce, all-gather,
reduce-scatter, all-to-all, barrier) ends at nearly the same instant on every member, so each
rank's offset against a reference rank (the lowest) is the median, over the instances both
hold, of the difference of their ends, negated. The refinement is kept only where it brings
the ends closer than the trace clocks did.

Ranks recorded on one host (every trace names the same ``host_name``) share its clock: their
trace clocks are kept as they are, since a collective's end on a busy host varies by more
than that clock does.

The residual is the median, over those instances, of the spread of their ends (latest end
minus earliest) after alignment: how far the aligned clocks can still be trusted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from gpuprofile.analyses.collectives import SYNCHRONIZING
from gpuprofile.trace.merge import shifted_ranks
from gpuprofile.trace.model import NO_ID, Trace

TRACE_CLOCKS = "trace clocks"
COLLECTIVE_ENDS = "collective ends"
ONE_HOST = "one host's clock"


@dataclass(frozen=True)
class Alignment:
    """How the ranks' clocks were aligned.

    Attributes:
        method: "collective ends" (refined from matched collectives), "trace clocks"
            (each rank's baseTimeNanoseconds or absolute ts, as recorded) or "one host's
            clock" (every rank recorded on one host: its clock, exact).
        residual_ns: median spread of synchronizing collectives' ends after alignment; None
            where no collective was matched.
        offsets_ns: per rank, ns added to its trace clock by the refinement.
        collectives: synchronizing instances the refinement used.
    """

    method: str
    residual_ns: int | None
    offsets_ns: dict[int, int]
    collectives: int


def align_clocks(trace: Trace, matched: pd.DataFrame) -> tuple[Trace, Alignment]:
    """The trace with its ranks' clocks aligned, and how.

    Parameters:
        trace: a trace of one or more ranks, on its ranks' own clocks.
        matched: its collectives, ``collectives.match_collectives`` (``Analysis.collectives``).

    Returns:
        (the aligned trace, a new Trace unless nothing moved; the ``Alignment``).
    """
    ends = _synchronizing_ends(trace, matched)
    before = _residual(ends)
    if _one_host(trace):
        return trace, Alignment(ONE_HOST, before, {}, len(ends))
    if len(trace.ranks) < 2 or ends.empty:
        return trace, Alignment(TRACE_CLOCKS, before, {}, len(ends))
    reference = int(ends.columns.min())
    offsets = {}
    for rank in ends.columns:
        diff = (ends[rank] - ends[reference]).dropna()
        if len(diff):
            offsets[int(rank)] = -round(float(np.median(diff.to_numpy())))
    after = _residual(ends + pd.Series(offsets, dtype=np.float64))
    if before is None or after is None or after >= before or not any(offsets.values()):
        return trace, Alignment(TRACE_CLOCKS, before, {}, len(ends))
    aligned = shifted_ranks(trace, offsets)
    return aligned, Alignment(COLLECTIVE_ENDS, after, offsets, len(ends))


def _synchronizing_ends(trace: Trace, matched: pd.DataFrame) -> pd.DataFrame:
    """Instances (rows) x ranks (columns): the end of each synchronizing collective whose end
    is known, NaN where a rank lacks it."""
    if len(trace.ranks) < 2:
        return pd.DataFrame()
    rows = matched[matched["name"].isin(SYNCHRONIZING) & (matched["end_ns"] != NO_ID)]
    if rows.empty:
        return pd.DataFrame()
    table = rows.pivot_table(index="instance", columns="rank", values="end_ns", aggfunc="first")
    return table[table.notna().sum(axis=1) >= 2].astype(np.float64)


def _residual(ends: pd.DataFrame) -> int | None:
    if ends.empty:
        return None
    spread = (ends.max(axis=1) - ends.min(axis=1)).to_numpy()
    return round(float(np.median(spread)))


def _one_host(trace: Trace) -> bool:
    hosts = {facts.host_name for facts in trace.meta.ranks.values()}
    return len(hosts) == 1 and None not in hosts
