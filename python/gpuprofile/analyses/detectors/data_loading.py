"""Data loading stalls: the training loop waits for the DataLoader.

Loader activity is what analyses/idle.py calls data loading: the
``enumerate(DataLoader)#..._DataLoaderIter.__next__`` annotations every DataLoader iterator
records, and ``dataloader.py(N): __next__/__iter__`` Python frames.

With a GPU: the GPU idle gaps attributed to data loading (the loader ran for most of the gap).
Gain: that idle time: with enough workers and prefetching, the next batch is ready when the
step ends.

Without a GPU (a CPU capture, a notebook on a laptop) there is no GPU window: the detector
measures the loader's share of the rank's wall time instead (the union of its __next__ calls,
which run on the main thread and so stop everything else). Gain: that time, as an upper bound:
worker processes prepare batches while the main thread computes, but on a CPU they compete with
the computation for cores, so confidence is medium.

Fires when the gain is a large enough share of the rank's wall time (the table in
analyses/thresholds.py: more without a GPU, where the loop's own Python is also host time).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from gpuprofile.analyses import idle
from gpuprofile.analyses.claims import Claim, frame_claim
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.hints import MAX_EVIDENCE_EVENTS, Hint, heaviest_events
from gpuprofile.analyses.intervals import union_length
from gpuprofile.analyses.names import matches
from gpuprofile.analyses.patterns import LOADER_OP
from gpuprofile.analyses.thresholds import worth_reporting
from gpuprofile.trace.model import Trace
from gpuprofile.units import format_count, format_fraction, format_time

_MULTIPROCESS = "_MultiProcessingDataLoaderIter"

FIX_SINGLE = (
    "Load in worker processes: DataLoader(num_workers=N), N up to the free CPU cores "
    "(the trace shows _SingleProcessDataLoaderIter: every batch is built on the main thread).",
    "pin_memory=True and .to(device, non_blocking=True), so the copy to the GPU overlaps compute.",
    "prefetch_factor=4 (batches queued per worker) and persistent_workers=True (workers "
    "survive between epochs instead of restarting).",
    "Make __getitem__ cheap: decode and augment on the GPU or ahead of time, read from fast "
    "local storage.",
)
FIX_WORKERS = (
    "The loader already uses worker processes and still cannot keep up: raise num_workers "
    "and prefetch_factor, and set persistent_workers=True.",
    "Make __getitem__ cheaper (decode/augment on the GPU, pre-processed shards on local "
    "disk); check the workers are not starved of CPU cores.",
    "pin_memory=True and .to(device, non_blocking=True) so copies overlap compute.",
)
CODE = """\
import os

workers = max(1, min(8, len(os.sched_getaffinity(0)) - 1))  # a core left for the loop
loader = DataLoader(dataset, batch_size=64, shuffle=True,
                    num_workers=workers,      # build batches in parallel processes
                    pin_memory=True,          # page-locked batches: fast, async copies
                    prefetch_factor=4,        # batches queued ahead per worker
                    persistent_workers=True)  # keep workers between epochs
for x, y in loader:
    x = x.to("cuda", non_blocking=True)
    y = y.to("cuda", non_blocking=True)
"""


def detect(analysis: Analysis) -> list[Hint]:
    trace = analysis.trace
    hints = []
    for rank in trace.ranks:
        ops = analysis.rank_table("ops", rank)
        rows = ops[matches(ops["name"], LOADER_OP)]
        if rows.empty:
            continue
        breakdown = analysis.gpu_time(rank)
        if breakdown is None:
            hint = _cpu_hint(analysis, rank, rows)
        else:
            gaps = analysis.idle_gaps
            stalls = gaps[(gaps["rank"] == rank) & (gaps["cause"] == idle.DATA_LOADING)]
            hint = _gpu_hint(analysis, rank, rows, stalls, breakdown.window_ns)
        if hint is not None:
            hints.append(hint)
    return hints


def _gpu_hint(
    analysis: Analysis, rank: int, loader: pd.DataFrame, stalls: pd.DataFrame, window: int
) -> Hint | None:
    trace = analysis.trace
    gain = int(stalls["dur_ns"].sum())
    wall = analysis.wall_ns(rank)
    if not worth_reporting("data-loading", gain, wall):
        return None
    largest = stalls.nlargest(MAX_EVIDENCE_EVENTS, "dur_ns")
    windows = tuple(zip(largest["start_ns"].tolist(), largest["end_ns"].tolist(), strict=True))
    return _hint(
        trace,
        rank,
        loader,
        gain=gain,
        wall=wall,
        title=(
            f"GPU idle {format_fraction(gain / window, 0)} of the window waiting for the DataLoader"
        ),
        gain_method=(
            "GPU idle time while the DataLoader ran for most of the gap: with batches "
            "prefetched by workers the next step starts at once."
        ),
        what=(
            f"the GPU sat idle {format_time(gain)} ({format_fraction(gain / window)} of its "
            f"{format_time(window)} "
            f"window) in {len(stalls)} gaps while the DataLoader was fetching the next batch"
        ),
        windows=windows,
        confidence="high",
        claim=frame_claim(stalls),
    )


def _cpu_hint(analysis: Analysis, rank: int, loader: pd.DataFrame) -> Hint | None:
    trace = analysis.trace
    start = loader["start_ns"].to_numpy(np.int64)
    gain = union_length(start, start + loader["dur_ns"].to_numpy(np.int64))
    wall = analysis.wall_ns(rank)
    if not worth_reporting("data-loading/cpu", gain, wall):
        return None
    return _hint(
        trace,
        rank,
        loader,
        gain=gain,
        wall=wall,
        title=(
            f"DataLoader takes {format_fraction(gain / wall, 0)} of the run (no GPU in this trace)"
        ),
        gain_method=(
            "Time the main thread spent inside DataLoader __next__ (CPU trace, no GPU "
            "window); an upper bound: workers load while the main thread computes, but share "
            "its CPU cores."
        ),
        what=(
            f"the main thread spent {format_time(gain)} of the {format_time(wall)} run "
            f"({format_fraction(gain / wall)}) waiting for the DataLoader"
        ),
        windows=None,
        confidence="medium",
        claim=frame_claim(loader),
    )


def _hint(
    trace: Trace,
    rank: int,
    loader: pd.DataFrame,
    *,
    gain: int,
    wall: int,
    title: str,
    gain_method: str,
    what: str,
    windows: tuple[tuple[int, int], ...] | None,
    confidence: str,
    claim: Claim,
) -> Hint:
    """``windows``: where to look (the GPU's idle gaps), else the DataLoader calls' own."""
    names = loader["name"].astype(str)
    workers = bool(names.str.contains(_MULTIPROCESS).any())
    # One __next__ per batch: the annotation, else (no annotations) the Python frame.
    annotated = names.str.contains("DataLoader", regex=False) & names.str.endswith("__next__")
    calls = loader[annotated] if annotated.any() else loader[names.str.endswith("__next__")]
    per_call = calls["dur_ns"]
    calls_evidence = heaviest_events(loader, "ops", rank, "DataLoader calls")
    if windows is not None:
        calls_evidence = replace(calls_evidence, windows=windows)
    return Hint(
        kind="data-loading",
        subject="DataLoader",
        title=title,
        basis_ns=wall,
        gain_ns=gain,
        claim=claim,
        gain_method=gain_method,
        confidence=confidence,
        explanation=(
            f"Rank {rank}: {what}. {format_count(len(calls), 'call')} for a batch, "
            f"{format_time(int(per_call.mean()) if len(per_call) else 0)} each on average, longest "
            f"{format_time(int(per_call.max()) if len(per_call) else 0)}; "
            + ("worker processes are in use." if workers else "no worker processes.")
        ),
        numbers={
            "gain_ns": gain,
            "wall_ns": wall,
            "batches": len(calls),
            "mean_batch_ns": int(per_call.mean()) if len(per_call) else 0,
            "workers": "yes" if workers else "no",
        },
        fix=FIX_WORKERS if workers else FIX_SINGLE,
        code=CODE,
        evidence=(calls_evidence,),
        rank=rank,
    )
