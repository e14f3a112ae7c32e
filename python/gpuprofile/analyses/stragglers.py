"""Stragglers: the ranks the others wait for, and why they are late.

In a collective every rank waits for the last to arrive, so the rank that waits longest is
usually not the one at fault. A rank's **wait caused** is the sum, over the collective
instances and send/receive pairs where it arrived last, of the other ranks' waits there
(``collectives.match_collectives``); ranks are listed largest first, with how often they
arrived last.

Why a straggler is late, in this order of evidence: its compute that takes longer than on the
median of the other ranks (per kernel or op name, from ``bubbles.compute_events``: the name
with the largest excess), its data loading (ops whose name says DataLoader) and its GPU idle
time waiting for the host (``idle`` causes host-launch-bound and data-loading) beyond the
median rank's. The largest excess is the cause.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from gpuprofile.analyses.idle import DATA_LOADING, HOST_LAUNCH_BOUND
from gpuprofile.analyses.kernel_names import short_kernel_name
from gpuprofile.analyses.names import matches
from gpuprofile.analyses.patterns import LOADER_OP
from gpuprofile.trace.model import Trace
from gpuprofile.units import format_time

# How many stragglers get a cause (each costs a comparison of all names).
EXPLAINED = 3


@dataclass(frozen=True)
class Straggler:
    rank: int
    wait_caused_ns: int
    arrived_last: int  # instances where it arrived last (of those with a wait)
    cause: str  # why, in a sentence; "" when nothing stands out
    excess_ns: int  # the time the cause takes beyond the median rank
    cause_name: str  # the kernel or op name, or "data loading", "host launches"
    # The job time it costs: per instance it arrived last, its arrival minus the one before
    # it (had it arrived with the others, each instance would have ended that much earlier).
    delay_ns: int


def stragglers(
    trace: Trace,
    collectives: pd.DataFrame,
    idle_gaps: pd.DataFrame,
    compute: pd.DataFrame,
    labels: Mapping[str, str],
) -> list[Straggler]:
    """Ranks that made others wait, most wait caused first.

    Parameters:
        trace: the aligned trace.
        collectives: ``Analysis.collectives`` (collectives.match_collectives).
        idle_gaps: ``Analysis.idle_gaps`` (GPU idle gaps with their causes).
        compute: ``bubbles.compute_events(trace, classes)``.
        labels: the kernels' short names (``Analysis.kernel_labels``).

    Returns:
        One Straggler per rank that caused any wait, largest wait caused first.
    """
    if collectives.empty:
        return []
    waits = collectives.groupby("instance")["wait_ns"].sum()
    last = collectives[collectives["last"].to_numpy()]
    caused_by = last.assign(caused=waits.reindex(last["instance"]).to_numpy())
    caused_by = caused_by[caused_by["caused"] > 0]
    if caused_by.empty:
        return []
    caused_by = caused_by.assign(
        delay=_delays(collectives).reindex(caused_by["instance"]).to_numpy()
    )
    per_rank = caused_by.groupby("rank").agg(
        wait_caused_ns=("caused", "sum"), arrived_last=("caused", "size"), delay_ns=("delay", "sum")
    )
    per_rank = per_rank.sort_values("wait_caused_ns", ascending=False, kind="stable")
    # Every rank's totals once: each explained straggler is weighed against the same ones.
    totals = _rank_totals(trace, compute, idle_gaps) if len(trace.ranks) > 1 else None
    out = []
    rows = zip(per_rank.index.tolist(), per_rank.to_dict("records"), strict=True)
    for i, (rank, row) in enumerate(rows):
        why = ("", 0, "")
        if i < EXPLAINED and totals is not None:
            why = _cause(trace, int(rank), totals, labels)
        out.append(
            Straggler(
                rank=int(rank),
                wait_caused_ns=int(row["wait_caused_ns"]),
                arrived_last=int(row["arrived_last"]),
                cause=why[0],
                excess_ns=why[1],
                cause_name=why[2],
                delay_ns=int(row["delay_ns"]),
            )
        )
    return out


def _delays(collectives: pd.DataFrame) -> pd.Series:
    """Per instance: the last arrival minus the one before it (0 where one rank arrived)."""
    ordered = collectives.sort_values(["instance", "arrival_ns"], kind="stable")
    top2 = ordered.groupby("instance")["arrival_ns"].nlargest(2)
    last = top2.groupby(level=0).max()
    before = top2.groupby(level=0).min()
    return (last - before).astype(np.int64)


@dataclass(frozen=True)
class _RankTotals:
    """Per rank: compute time per kernel name (a name x rank table), data loading time, and
    GPU idle time per idle cause."""

    compute: pd.DataFrame
    loading: dict[int, int]
    idle: dict[str, pd.Series]


def _rank_totals(trace: Trace, compute: pd.DataFrame, idle_gaps: pd.DataFrame) -> _RankTotals:
    durations = compute.assign(dur=compute["end_ns"] - compute["start_ns"])
    totals = durations.pivot_table(
        index="name", columns="rank", values="dur", aggfunc="sum", fill_value=0
    ).reindex(columns=trace.ranks, fill_value=0)
    idle = {
        cause: idle_gaps[idle_gaps["cause"] == cause].groupby("rank")["dur_ns"].sum()
        for cause in (HOST_LAUNCH_BOUND, DATA_LOADING)
    }
    return _RankTotals(totals, _per_rank_loading(trace), idle)


def _cause(
    trace: Trace, rank: int, rank_totals: _RankTotals, labels: Mapping[str, str]
) -> tuple[str, int, str]:
    """(sentence, excess ns, name) of what takes longer on ``rank`` than on the median rank."""
    others = [r for r in trace.ranks if r != rank]
    candidates: list[tuple[int, str, str]] = []
    totals = rank_totals.compute
    if rank in totals.columns and len(totals):
        excess = totals[rank] - totals[others].median(axis=1)
        name = str(excess.idxmax())
        if excess[name] > 0:
            candidates.append(
                (
                    int(excess[name]),
                    name,
                    f"{labels.get(name) or short_kernel_name(name)} takes "
                    f"{format_time(excess[name])} longer than on the median rank",
                )
            )
    loading = rank_totals.loading
    extra = loading.get(rank, 0) - float(np.median([loading.get(r, 0) for r in others]))
    if extra > 0:
        candidates.append(
            (int(extra), "data loading", f"data loading takes {format_time(extra)} longer there")
        )
    for cause, label in ((HOST_LAUNCH_BOUND, "host launches"), (DATA_LOADING, "data loading")):
        gaps = rank_totals.idle[cause]
        extra = gaps.get(rank, 0) - float(np.median([gaps.get(r, 0) for r in others]))
        if extra > 0:
            candidates.append(
                (int(extra), label, f"its GPU waits {format_time(extra)} longer for {label}")
            )
    if not candidates:
        return "", 0, ""
    excess_ns, name, sentence = max(candidates)
    return sentence, excess_ns, name


def _per_rank_loading(trace: Trace) -> dict[int, int]:
    ops = trace.ops
    loading = ops[matches(ops["name"], LOADER_OP)]
    totals = loading.groupby("rank")["dur_ns"].sum()
    return dict(zip(totals.index.tolist(), totals.tolist(), strict=True))
