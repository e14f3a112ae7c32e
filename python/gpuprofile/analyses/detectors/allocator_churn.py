"""Allocator churn: device memory allocated and freed through the driver in steady state.

PyTorch's caching allocator calls cudaMalloc (hipMalloc) only when its cache cannot serve a
request, and cudaFree only to give memory back (an allocation that failed and is retried
after emptying the cache, torch.cuda.empty_cache(), or a library managing its own
workspace). After warm-up neither should happen: cudaMalloc costs 10 us to milliseconds and
cudaFree synchronizes the whole device. Steady state begins after the last op whose name says
warm-up (record_function("warmup")), else at the second ProfilerStep when the trace has two
or more, else after the first WARMUP_SHARE of the rank's span; but when every step makes as
many allocator calls as the first (within a factor of two), none of them is warm-up: they are
counted from the first step, and the fix says the cache is not kept, not "warm up".

Setup and teardown are left out whatever the steps say: calls that start before the rank's
first GPU work (unless every step allocates alike) or after its last end.

Signs, per rank: steady-state allocator calls, reserved memory that still grows in steady state
(the memory table's total_reserved; each step up is a new segment), and fragmentation (reserved
at least FRAGMENTATION_RATIO times the peak allocated, and at least MIN_WASTE_BYTES more; both
in analyses/thresholds.py). Gain: the union of the steady-state allocator calls' durations, the
host time they block (a cudaFree also drains the GPU, which the gpu-idle hint measures); growth
and fragmentation alone give back no time (gain 0), they cost memory.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from gpuprofile.analyses.claims import frame_claim
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.fixes import ALLOCATOR_CODE, ALLOCATOR_FIX
from gpuprofile.analyses.fixes_by_framework import ALLOCATOR, Fix, pick
from gpuprofile.analyses.hints import Evidence, Hint, heaviest_events
from gpuprofile.analyses.intervals import union_length
from gpuprofile.analyses.names import matches
from gpuprofile.analyses.patterns import ALLOC_CALL
from gpuprofile.analyses.steps import count_in_steps, is_step, step_spans
from gpuprofile.analyses.summary import span_ns
from gpuprofile.analyses.thresholds import (
    FRAGMENTATION_RATIO,
    MIN_STEADY_ALLOCATOR_CALLS,
    MIN_WASTE_BYTES,
)
from gpuprofile.units import format_bytes, format_time

WARMUP_SHARE = 0.10
# Said first, instead of warming up, when every step allocates through the driver alike.
EVERY_STEP = (
    "Every step calls the driver's allocator, the first as often as the rest: the caching "
    "allocator is not keeping memory between steps. Look for torch.cuda.empty_cache() in the "
    "loop, PYTORCH_NO_CUDA_MEMORY_CACHING=1 in the environment, or a library that allocates "
    "its own workspace on each call (the calls' launching ops name it)."
)
_WARMUP = re.compile(r"warm[-_ ]?up", re.IGNORECASE)


def detect(analysis: Analysis) -> list[Hint]:
    trace = analysis.trace
    hints = []
    for rank in trace.ranks:
        hint = _hint(analysis, rank)
        if hint is not None:
            hints.append(hint)
    return hints


def steady_start(analysis: Analysis, rank: int) -> int:
    """Start of the steady state: after the last op named warm-up when there is one, else
    the second ProfilerStep, else after WARMUP_SHARE of the rank's span."""
    ops = analysis.rank_table("ops", rank)
    warmup = matches(ops["name"], _WARMUP)
    if warmup.any():
        return int((ops["start_ns"] + ops["dur_ns"]).to_numpy()[warmup].max())
    steps = np.sort(ops["start_ns"].to_numpy()[is_step(ops["name"])])
    if len(steps) >= 2:
        return int(steps[1])
    start, end = span_ns(analysis, rank)
    return start + int(WARMUP_SHARE * (end - start))


def _range(counts: list[int]) -> str:
    low, high = min(counts), max(counts)
    return str(low) if low == high else f"{low} to {high}"


def _hint(analysis: Analysis, rank: int) -> Hint | None:
    kind = analysis.framework
    steady = steady_start(analysis, rank)
    runtime = analysis.rank_table("runtime", rank)
    mine = matches(runtime["name"], ALLOC_CALL)
    spans = step_spans(analysis.rank_table("ops", rank), span_ns(analysis, rank)[0])
    per_step = count_in_steps(spans, runtime["start_ns"].to_numpy()[mine]).tolist()
    # The same churn in every step, the first too: none of it is warm-up, so it is counted
    # from the first step, and warming up is no fix.
    repeating = (
        len(per_step) >= 2
        and min(per_step) >= MIN_STEADY_ALLOCATOR_CALLS
        and min(per_step) * 2 >= max(per_step)
    )
    if repeating:
        steady = min(steady, int(spans[0][0]))
    # Setup and teardown are no steady state: calls before the GPU's first work (buffers
    # allocated up front) or after its last (freed at exit) happen once per run.
    start_ns = runtime["start_ns"].to_numpy()
    rows = mine & (start_ns >= steady)
    gpu = analysis.gpu_time(rank)
    if gpu is not None:
        if not repeating:
            rows &= start_ns >= gpu.start_ns
        rows &= start_ns < gpu.start_ns + gpu.window_ns
    calls = runtime[rows]
    memory = analysis.rank_table("memory", rank)
    growth, fragmentation = _memory_signs(memory, rank, steady)
    churn = len(calls) >= MIN_STEADY_ALLOCATOR_CALLS
    if not churn and growth == 0 and fragmentation is None:
        return None
    start = calls["start_ns"].to_numpy(np.int64)
    gain = union_length(start, start + calls["dur_ns"].to_numpy(np.int64)) if churn else 0
    wall = analysis.wall_ns(rank)
    per_name = calls.groupby("name", observed=True)["dur_ns"].agg(["count", "sum"])
    per_name = per_name.sort_values("sum", ascending=False)
    call_text = ", ".join(
        f"{name} x{int(r['count'])} ({format_time(int(r['sum']))})"
        for name, r in per_name.iterrows()
    )
    found = []
    if churn:
        found.append(
            f"{len(calls)} allocator calls in {len(per_step)} steps, "
            f"{_range(per_step)} in each, the first too: {call_text}"
            if repeating
            else f"{len(calls)} allocator calls after warm-up: {call_text}"
        )
    if growth:
        found.append(f"reserved memory grew by {format_bytes(growth)} after warm-up")
    if fragmentation is not None:
        reserved, allocated = fragmentation
        found.append(
            f"{format_bytes(reserved)} reserved for a peak of {format_bytes(allocated)} "
            f"allocated ({format_bytes(reserved - allocated)} cached but unused: "
            "fragmentation or an earlier peak)"
        )
    evidence = []
    if len(calls):
        evidence.append(heaviest_events(calls, "runtime", rank, "allocator calls in steady state"))
    if growth or fragmentation is not None:
        memory = memory[memory["time_ns"] >= steady]
        if len(memory):
            window = (int(memory["time_ns"].min()), int(memory["time_ns"].max()))
            evidence.append(
                Evidence(table="memory", rank=rank, windows=(window,), label="steady state")
            )
    what = "allocator calls" if churn else "reserved memory growth" if growth else "fragmentation"
    return Hint(
        kind="allocator-churn",
        subject="allocator calls after warm-up",
        title=(
            f"{len(calls)} {'/'.join(map(str, per_name.index[:2]))} calls "
            + (f"({_range(per_step)} in every step)" if repeating else "after warm-up")
            + f" cost {format_time(gain)}"
            if churn
            else f"Device memory: {what} after warm-up"
        ),
        basis_ns=wall,
        gain_ns=gain,
        claim=frame_claim(calls),
        gain_method=(
            "Union of the durations of allocator calls after warm-up: the host time they "
            "block, which keeping buffers cached removes. Growth and fragmentation alone "
            "count 0: they cost memory, not time."
        ),
        confidence="high" if churn else "low",
        explanation=f"Rank {rank}, from {format_time(steady)} on (steady state): "
        + "; ".join(found)
        + ".",
        numbers={
            "steady_start_ns": steady,
            "calls": len(calls),
            "call_ns": gain,
            "reserved_growth_bytes": growth,
            "reserved_bytes": fragmentation[0] if fragmentation else 0,
            "peak_allocated_bytes": fragmentation[1] if fragmentation else 0,
        },
        **pick(
            kind,
            Fix((EVERY_STEP, *ALLOCATOR_FIX[1:]) if repeating else ALLOCATOR_FIX, ALLOCATOR_CODE),
            ALLOCATOR,
        )._asdict(),
        evidence=tuple(evidence),
        rank=rank,
    )


def _memory_signs(
    memory: pd.DataFrame, rank: int, steady: int
) -> tuple[int, tuple[int, int] | None]:
    """Reserved growth in steady state (bytes) and (reserved, peak allocated) if fragmented.

    Device memory only (device >= 0), and only rows that carry the totals (old traces
    write -1).
    """
    rows = memory[
        (memory["rank"] == rank)
        & (memory["device"] >= 0)
        & (memory["total_reserved"] >= 0)
        & (memory["total_allocated"] >= 0)
    ]
    growth = 0
    fragmented = None
    for _, device in rows.groupby("device", sort=True):
        device = device.sort_values("time_ns", kind="stable")
        before = device[device["time_ns"] < steady]["total_reserved"]
        after = device[device["time_ns"] >= steady]["total_reserved"]
        if len(after):
            base = int(before.iloc[-1]) if len(before) else int(after.iloc[0])
            growth += max(0, int(after.max()) - base)
        reserved = int(device["total_reserved"].max())
        allocated = int(device["total_allocated"].max())
        if reserved >= FRAGMENTATION_RATIO * allocated and reserved - allocated >= MIN_WASTE_BYTES:
            fragmented = (reserved, allocated)
    return growth, fragmented
