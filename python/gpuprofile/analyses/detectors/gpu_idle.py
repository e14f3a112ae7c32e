"""GPU idle time and what the host was doing meanwhile (analyses/idle.py attributes each gap).

Fires per rank when the GPU is idle for a large enough share of its window (first to last GPU
activity; analyses/thresholds.py). Gain: the idle time of the causes that a change on the host
fills (sync stalls, data loading, host-device copies, launch-bound stretches). It is an upper
bound: a fix can at most make those gaps disappear. Collective waits (the communication
detector's business: they depend on the other ranks) and gaps no host activity explains are
reported but not counted. The fix shown is the one for the cause with the most idle time; when
that is host-launch-bound and the host spent most of it inside cudaMalloc/cudaFree, the fix is
the allocator's.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from gpuprofile.analyses import idle
from gpuprofile.analyses.claims import frame_claim
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.fixes import ALLOCATOR_CODE, ALLOCATOR_FIX
from gpuprofile.analyses.fixes_by_framework import (
    ALLOCATOR,
    IDLE_COLLECTIVE,
    IDLE_COPY,
    IDLE_LAUNCH,
    IDLE_OTHER,
    IDLE_QUEUED,
    IDLE_SYNC,
    Fix,
    pick,
)
from gpuprofile.analyses.hints import MAX_EVIDENCE_EVENTS, Evidence, Hint
from gpuprofile.analyses.intervals import IntervalSet
from gpuprofile.analyses.kernel_kind import COMMUNICATION
from gpuprofile.analyses.names import matches, strings
from gpuprofile.analyses.patterns import ALLOC_CALL
from gpuprofile.analyses.thresholds import worth_reporting
from gpuprofile.trace.model import NO_ID
from gpuprofile.units import format_fraction, format_time

MOST_ALLOCATOR = 0.5  # launch-bound idle spent in cudaMalloc/cudaFree: the allocator's fix
TOP_GAPS = 10
ADDRESSABLE = (
    idle.SYNCHRONIZATION,
    idle.DATA_LOADING,
    idle.HOST_DEVICE_COPY,
    idle.HOST_LAUNCH_BOUND,
)
MOSTLY = {
    idle.SYNCHRONIZATION: "mostly waiting on synchronization",
    idle.DATA_LOADING: "mostly waiting for the DataLoader",
    idle.HOST_DEVICE_COPY: "mostly waiting for host-device copies",
    idle.COLLECTIVE_WAIT: "mostly waiting on collectives",
    idle.HOST_LAUNCH_BOUND: "mostly waiting for the host to launch work",
    idle.OTHER: "mostly outside traced host activity",
}
QUEUED = "mostly with work queued behind a dependency"
IN_ALLOCATOR = "mostly with the host in the driver's allocator (cudaMalloc/cudaFree)"
# The allocator-churn finding judges whether those calls are warm-up or every step's and says
# what to change; this one points there and keeps the fixes that hold either way.
ALLOCATOR_POINTER = (
    "The host spent this idle inside the driver's allocator: the allocator-churn finding "
    "counts those calls per step and says what keeps them out of the loop."
)
QUEUED_ONE = "mostly with launched work starting late on its one stream"
QUEUED_OUTSIDE = "mostly waiting on an event recorded before the trace began"
OUTSIDE_FIX = (
    "The wait is on work the trace does not hold (an event recorded before it began: a "
    "previous step's, another stream's or an overlap scheduler's): read the window without "
    "that gap, and profile a span that holds both the recording and the wait (start the "
    "profiler a step earlier) to see what the GPU waited for."
)
_STREAM_WAIT = re.compile(r"^(cuda|hip)StreamWaitEvent$|^cuStreamWaitEvent")
_EVENT_RECORD = re.compile(r"^(cuda|hip)EventRecord|^cuEventRecord")
FIXES: dict[str, tuple[tuple[str, ...], str]] = {
    idle.SYNCHRONIZATION: (
        (
            "Remove host reads of GPU values from the hot loop: .item(), .cpu(), .tolist(), "
            "print(tensor), Python if on a tensor; keep running sums on the GPU and read them "
            "every N steps.",
            "Avoid ops with data-dependent output shapes (nonzero, masked_select, boolean "
            "indexing, unique): each waits for the GPU.",
            "Replace torch.cuda.synchronize() used for timing with CUDA events.",
        ),
        """\
total = torch.zeros((), device="cuda")
for step, batch in enumerate(loader):
    loss = train_step(batch)
    total += loss.detach()          # no .item() per step
    if step % 100 == 0:
        print(total.item() / 100)   # one sync every 100 steps
        total.zero_()
""",
    ),
    idle.DATA_LOADING: (
        (
            "Load batches in worker processes: DataLoader(num_workers=4 or more).",
            "pin_memory=True and .to(device, non_blocking=True) so copies overlap compute.",
            "prefetch_factor=4 and persistent_workers=True to keep batches queued across epochs.",
        ),
        """\
loader = DataLoader(dataset, batch_size=64, num_workers=8, pin_memory=True,
                    prefetch_factor=4, persistent_workers=True)
for x, y in loader:
    x, y = x.to("cuda", non_blocking=True), y.to("cuda", non_blocking=True)
""",
    ),
    idle.HOST_DEVICE_COPY: (
        (
            "Copy from pinned memory without blocking: tensor.pin_memory() (or DataLoader "
            "pin_memory=True) and .to(device, non_blocking=True).",
            "Issue copies on a side stream one step ahead so they overlap compute.",
        ),
        """\
x = x.pin_memory().to("cuda", non_blocking=True)
""",
    ),
    idle.COLLECTIVE_WAIT: (
        (
            "Balance work across ranks so none waits on a straggler.",
            "Overlap communication with compute (DDP bucket_cap_mb, FSDP prefetching).",
        ),
        "",
    ),
    idle.HOST_LAUNCH_BOUND: (
        (
            'Launch less often: torch.compile(model, mode="reduce-overhead") captures the '
            "step in a CUDA graph and fuses small kernels.",
            "Give each kernel more work (larger batches).",
            "Step the optimizer in one fused or multi-tensor launch: torch.optim.AdamW(..., "
            "fused=True) or foreach=True.",
        ),
        """\
model = torch.compile(model, mode="reduce-overhead")
""",
    ),
    idle.OTHER: (
        (
            "Profile with with_stack=True to see the Python code that runs while the GPU "
            "waits (I/O, logging, checkpointing, Python between steps).",
        ),
        "",
    ),
}


OTHER_FRAMEWORKS: dict[str, dict[str, Fix]] = {
    idle.SYNCHRONIZATION: IDLE_SYNC,
    idle.DATA_LOADING: IDLE_OTHER,  # DataLoader stalls: PyTorch only; profile the host else
    idle.HOST_DEVICE_COPY: IDLE_COPY,
    idle.COLLECTIVE_WAIT: IDLE_COLLECTIVE,
    idle.HOST_LAUNCH_BOUND: IDLE_LAUNCH,
    idle.OTHER: IDLE_OTHER,
}


QUEUED_FIX = (
    "The next kernel was launched but started late: look at what it waited for in the "
    "timeline (the launch is the evidence's runtime call): an event from another stream "
    "(wait_stream, record_stream), a collective whose peers were late (stragglers), a CUDA "
    "graph's internal dependencies.",
    "Profile with with_stack=True and all ranks to see the other side of the dependency.",
)
# One stream and no collectives: nothing outside the queue to wait for.
ONE_QUEUE_FIX = (
    "The next kernel was launched but started late on the rank's only stream, with no "
    "collective to wait for: look at what sat in the queue before it in the timeline (a "
    "cudaStreamWaitEvent on an event recorded by the host, a host callback, a pageable copy "
    "staged through host memory), or at a clock offset between host and GPU timestamps.",
)


def detect(analysis: Analysis) -> list[Hint]:
    gaps = analysis.idle_gaps
    hints = []
    for rank in analysis.trace.ranks:
        rank_gaps = gaps[gaps["rank"] == rank]
        hint = _hint(analysis, rank, rank_gaps) if len(rank_gaps) else None
        if hint is not None:
            hints.append(hint)
    return hints


def _hint(analysis: Analysis, rank: int, gaps: pd.DataFrame) -> Hint | None:
    breakdown = analysis.gpu_time(rank)
    if breakdown is None or not worth_reporting("gpu-idle", breakdown.idle_ns, breakdown.window_ns):
        return None
    by_cause = gaps.groupby("cause", observed=True)["dur_ns"].sum()
    by_cause = by_cause[by_cause > 0].sort_values(ascending=False, kind="stable")
    dominant = str(by_cause.index[0])
    gain = int(sum(int(by_cause.get(c, 0)) for c in ADDRESSABLE))
    share = breakdown.idle_ns / breakdown.window_ns
    largest = gaps.nlargest(TOP_GAPS, "dur_ns")
    mostly, steps, code, notes, extra = _diagnosis(analysis, rank, gaps, by_cause)
    parts = ", ".join(
        f"{cause} {format_time(int(ns))} ({format_fraction(ns / breakdown.idle_ns, 0)})"
        for cause, ns in by_cause.items()
    )
    dominant_share = by_cause.iloc[0] / breakdown.idle_ns
    return Hint(
        kind="gpu-idle",
        subject="GPU idle time",
        title=f"GPU idle {format_fraction(share, 0)} of the window, {mostly}",
        basis_ns=analysis.wall_ns(rank),
        gain_ns=gain,
        claim=frame_claim(gaps[gaps["cause"].isin(ADDRESSABLE).to_numpy()]),
        gain_method=(
            "Sum of the idle gaps whose cause a host-side change removes (synchronization, "
            "data loading, host-device copies, launch-bound); an upper bound, since a fix "
            "can at most fill those gaps. Collective waits and unexplained gaps not counted."
        ),
        confidence=(
            "low" if dominant == idle.OTHER else "high" if dominant_share >= 0.5 else "medium"
        ),
        explanation=(
            f"Rank {rank}: the GPU was idle {format_time(breakdown.idle_ns)} of its "
            f"{format_time(breakdown.window_ns)} window ({format_fraction(share)}) in "
            f"{len(gaps)} gaps; the largest lasted "
            f"{format_time(int(largest['dur_ns'].iloc[0]))}. By what the host was doing "
            f"meanwhile: {parts}.{notes}"
        ),
        numbers={
            "window_ns": breakdown.window_ns,
            "idle_ns": breakdown.idle_ns,
            "idle_pct": round(100 * share, 1),
            "gaps": len(gaps),
            "largest_gap_ns": int(largest["dur_ns"].iloc[0]),
            "dominant_cause": dominant,
            **extra,
            **{f"{cause}_ns": int(ns) for cause, ns in by_cause.items()},
        },
        fix=steps,
        code=code,
        evidence=_evidence(rank, largest),
        rank=rank,
    )


def _diagnosis(
    analysis: Analysis, rank: int, gaps: pd.DataFrame, by_cause: pd.Series
) -> tuple[str, tuple[str, ...], str, str, dict[str, int]]:
    """Title phrase, fix steps, code and extra sentences for the dominant cause."""
    kind = analysis.framework
    dominant = str(by_cause.index[0])
    mostly = MOSTLY[dominant]
    steps, code = pick(kind, Fix(*FIXES[dominant]), OTHER_FRAMEWORKS[dominant])
    notes = ""
    launch_bound = gaps[gaps["cause"] == idle.HOST_LAUNCH_BOUND]
    in_allocator = _allocator_ns(analysis, rank, launch_bound)
    if in_allocator:
        notes += (
            f" Of the host-launch-bound time, {format_time(in_allocator)} was spent in allocator "
            f"calls "
            "(cudaMalloc/cudaFree): see the allocator-churn hint."
        )
        if dominant == idle.HOST_LAUNCH_BOUND and in_allocator >= MOST_ALLOCATOR * int(
            launch_bound["dur_ns"].sum()
        ):
            steps, code = pick(kind, Fix(ALLOCATOR_FIX, ALLOCATOR_CODE), ALLOCATOR)
            if steps == ALLOCATOR_FIX:  # PyTorch's: its warm-up sentence is the other's call
                steps = (ALLOCATOR_POINTER, *ALLOCATOR_FIX[1:])
            mostly = IN_ALLOCATOR
    other = gaps[gaps["cause"] == idle.OTHER]
    queued = int(other.loc[other["runtime_id"] != NO_ID, "dur_ns"].sum())
    one_queue = _one_queue(analysis, rank)
    if queued:
        waited_on = (
            "something queued ahead of it on the rank's only stream"
            if one_queue
            else "a dependency (another stream's event, a collective, a graph)"
        )
        notes += (
            f" In {format_time(queued)} of the other gaps the next GPU work had already been "
            f"launched and waited on {waited_on}, not on the host."
        )
        outside = _wait_from_before(analysis, rank, other)
        if outside:
            notes += outside
        if dominant == idle.OTHER and queued >= 0.5 * int(by_cause.iloc[0]):
            if outside:
                steps, code = (OUTSIDE_FIX,), ""
                mostly = QUEUED_OUTSIDE
            elif one_queue:  # no other queue or peer, whatever framework wrote it
                steps, code = ONE_QUEUE_FIX, ""
                mostly = QUEUED_ONE
            else:
                steps, code = pick(kind, Fix(QUEUED_FIX, ""), IDLE_QUEUED)
                mostly = QUEUED
    return mostly, steps, code, notes, {"allocator_ns": in_allocator, "queued_other_ns": queued}


def _wait_from_before(analysis: Analysis, rank: int, other: pd.DataFrame) -> str:
    """A sentence when the largest queued gap's work waited behind a stream-wait on an event
    no event-record call in the trace had recorded before it: the event was recorded before
    the trace began, so what the GPU waited for is not in it; "" otherwise."""
    queued = other[other["runtime_id"] != NO_ID]
    if not len(queued):
        return ""
    # The first largest (as nlargest keeps it), read from columns: a frame per rank costs more.
    largest = int(np.argmax(queued["dur_ns"].to_numpy()))
    gap_ns = int(queued["dur_ns"].to_numpy()[largest])
    runtime = analysis.rank_table("runtime", rank)
    at = np.flatnonzero(runtime["id"].to_numpy() == queued["runtime_id"].to_numpy()[largest])
    if not len(at):
        return ""
    start, tid = runtime["start_ns"].to_numpy(), runtime["tid"].to_numpy()
    launched_at, thread = int(start[at[0]]), tid[at[0]]
    before = start <= launched_at
    waits = np.flatnonzero(before & matches(runtime["name"], _STREAM_WAIT) & (tid == thread))
    if not len(waits):
        return ""
    latest = int(np.argmax(start[waits]))  # the first of the latest waits
    wait = waits[latest : latest + 1]
    wait_ns, wait_name = int(start[wait][0]), strings(runtime["name"], rows=wait)[0]
    records = before & matches(runtime["name"], _EVENT_RECORD)
    if (start[records] < wait_ns).any():
        return ""
    return (
        f" The largest gap ({format_time(gap_ns)}) waited behind {wait_name} "
        f"(at {format_time(wait_ns)}, on the thread that launched the waiting "
        "work), on an event no event-record call in the trace had recorded: it was recorded "
        "before the trace began, so what the GPU waited for is not in this trace."
    )


def _one_queue(analysis: Analysis, rank: int) -> bool:
    """The rank's GPU work ran on one stream and it ran no collective: no other queue or peer
    it could have waited for."""
    streams: set[int] = set()
    for table in ("kernels", "memcpy", "memset"):
        streams |= set(analysis.rank_table(table, rank)["stream"].unique().tolist())
    kernels = analysis.rank_table("kernels", rank)
    collectives = analysis.kernel_classes.kinds_of(kernels["name"]) == COMMUNICATION
    return len(streams) <= 1 and not collectives.any()


def _evidence(rank: int, largest: pd.DataFrame) -> tuple[Evidence, ...]:
    windows = tuple(zip(largest["start_ns"].tolist(), largest["end_ns"].tolist(), strict=True))
    op_ids = [i for i in dict.fromkeys(largest["op_id"].tolist()) if i != NO_ID]
    evidence = [Evidence(table="kernels", rank=rank, windows=windows, label="largest idle gaps")]
    if op_ids:
        evidence.append(
            Evidence(
                table="ops",
                rank=rank,
                event_ids=tuple(op_ids[:MAX_EVIDENCE_EVENTS]),
                windows=windows,
                label="host ops during the largest gaps",
            )
        )
    return tuple(evidence)


def _allocator_ns(analysis: Analysis, rank: int, gaps: pd.DataFrame) -> int:
    """How much of these gaps the host spent inside allocator calls."""
    runtime = analysis.rank_table("runtime", rank)
    rows = runtime[allocator_churn_calls(runtime)]
    if rows.empty or gaps.empty:
        return 0
    start = rows["start_ns"].to_numpy(np.int64)
    calls = IntervalSet(start, start + rows["dur_ns"].to_numpy(np.int64))
    covered = calls.coverage(gaps["start_ns"].to_numpy(np.int64), gaps["end_ns"].to_numpy(np.int64))
    return int(covered.sum())


def allocator_churn_calls(runtime: pd.DataFrame) -> np.ndarray:
    return matches(runtime["name"], ALLOC_CALL)
