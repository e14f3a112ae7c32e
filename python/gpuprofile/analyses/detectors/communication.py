"""Collective communication that the step waits on: NCCL/RCCL kernels, or gloo on the CPU.

Communication and the part of it compute hides are measured in ``comm_overlap``. Exposed
time is the gain: overlapping it with compute (DDP buckets, FSDP prefetch) or communicating
less (gradient accumulation, compression) gives back at most that much.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from gpuprofile.analyses.claims import NOTHING, Claim
from gpuprofile.analyses.comm_overlap import CommOverlap
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.hints import Hint, heaviest_events
from gpuprofile.analyses.names import matches
from gpuprofile.analyses.thresholds import worth_reporting
from gpuprofile.trace.meta import world_size
from gpuprofile.units import format_percent, format_time

# "ncclKernel_AllReduce_RING_LL_Sum_float(...)", "ncclDevKernel_AllGather_RING_LL(...)".
_COLLECTIVE = re.compile(r"^(?:nccl|rccl)\w*?Kernel_([A-Za-z]+)")

STRAGGLERS = (
    "Check for collectives on the critical path outside backward (loss/metric all-reduce, "
    "barriers) and for stragglers: a collective waits for the slowest rank."
)
FIX = (
    "Overlap communication with compute: DDP overlaps gradient all-reduce with the backward "
    "pass bucket by bucket; tune DistributedDataParallel(bucket_cap_mb=...) so the first "
    "buckets start early, and keep find_unused_parameters=False unless needed.",
    "With FSDP, prefetch the next all-gather: FullyShardedDataParallel(backward_prefetch="
    "BackwardPrefetch.BACKWARD_PRE, forward_prefetch=True), or fully_shard(...) with "
    "reshard_after_forward=False for the last layers.",
    "Communicate less often: accumulate gradients over several micro-batches inside "
    "`with model.no_sync():` and all-reduce once per optimizer step.",
    "Communicate fewer bytes: register a compression hook, e.g. "
    "model.register_comm_hook(None, default_hooks.bf16_compress_hook), or PowerSGD.",
    "Issue fewer, larger collectives: each small all-reduce pays the network's whole latency; "
    "flatten the tensors into one buffer (torch.cat of their flattened views), all-reduce it "
    "once and split it back.",
    STRAGGLERS,
)
P2P_FIX = (
    "SendRecv kernels are point-to-point transfers (pipeline parallelism): use more "
    "micro-batches per step or an interleaved schedule (torch.distributed.pipelining "
    "ScheduleInterleaved1F1B) so each stage computes while activations are in flight."
)
ALL_TO_ALL_FIX = (
    "These SendRecv kernels carry all_to_all exchanges (sharded embeddings, expert "
    "parallelism): overlap them with dense compute (pipeline the next batch's input "
    "distribution, as TorchRec's TrainPipelineSparseDist does, or launch the all_to_all on a "
    "side stream before the dense forward) and balance the shards so no rank sends more."
)
# An inference's collectives are tensor (or expert) parallelism's, inside the forward: no
# gradients to bucket or accumulate (analyses/workload.py says which phase ran).
SERVING_FIX = (
    "Use the engine's custom all-reduce for tensor parallelism (one-shot/two-shot kernels over "
    "NVLink or xGMI: vLLM and SGLang use theirs unless disable_custom_all_reduce / "
    "--disable-custom-all-reduce is set), or NCCL's NVLS (multimem) all-reduce on NVSwitch "
    "systems (NCCL_NVLS_ENABLE=1).",
    "Replay the decode step as a CUDA graph so collectives and kernels launch as one (vLLM: "
    "enforce_eager=False, with cudagraph_capture_sizes covering the batch sizes served).",
    "Use fewer tensor-parallel ranks per replica where the model fits (more data-parallel "
    "replicas): each layer's all-reduce then crosses fewer GPUs, and larger batches give "
    "compute that hides it.",
)
_ALL_TO_ALL = re.compile(r"all_?to_?all", re.IGNORECASE)
CODE = """\
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

model = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=25)
model.register_comm_hook(None, default_hooks.bf16_compress_hook)
for i, batch in enumerate(loader):
    sync = (i + 1) % accumulation_steps == 0
    with contextlib.nullcontext() if sync else model.no_sync():
        loss_fn(model(batch)).backward()
    if sync:
        optimizer.step()
        optimizer.zero_grad()
"""


def detect(analysis: Analysis) -> list[Hint]:
    trace = analysis.trace
    hints = []
    for rank in trace.ranks:
        found = analysis.comm_overlap[rank]
        if found is None:
            continue
        hint = (
            _gpu_hint(analysis, rank, found) if found.on_gpu else _cpu_hint(analysis, rank, found)
        )
        if hint is not None:
            hints.append(hint)
    return hints


def _figures(found: CommOverlap) -> tuple[pd.DataFrame, int, int, int]:
    return found.events, found.comm_ns, found.overlapped_ns, found.exposed_ns


def collective_name(kernel: str) -> str:
    match = _COLLECTIVE.match(kernel)
    return match.group(1) if match else kernel.split("(", 1)[0]


def waiting_claim(analysis: Analysis, rank: int) -> Claim:
    """The rank's time inside its collective kernels spent waiting for the last member to
    arrive (analyses/collectives.py: each kernel's start plus its wait, cut at its end), on
    the rank's own clock; nothing on a single rank."""
    matched = analysis.collectives if len(analysis.trace.ranks) > 1 else None
    if matched is None or matched.empty:
        return NOTHING
    mine = matched[
        (matched["rank"] == rank) & (matched["table"] == "kernels") & (matched["wait_ns"] > 0)
    ]
    if mine.empty:
        return NOTHING
    # The kernels by id (ids are the trace's, one table's own across its ranks).
    rows = analysis.id_index("kernels").get_indexer(pd.Index(mine["event_id"].to_numpy()))
    known = rows >= 0
    kernels = analysis.trace.kernels
    start = kernels["start_ns"].to_numpy(np.int64)[rows[known]]
    dur = kernels["dur_ns"].to_numpy(np.int64)[rows[known]]
    wait = np.minimum(mine["wait_ns"].to_numpy(np.int64)[known], dur)
    return Claim(start, start + wait)


def _gpu_hint(analysis: Analysis, rank: int, found: CommOverlap) -> Hint | None:
    comm, comm_ns, overlapped, exposed_all = _figures(found)
    comm_sum = int(comm["dur_ns"].sum())
    # Waiting for a late member is the straggler's time, not the transfer's: overlap cannot
    # hide it, so it is no part of this gain.
    transfer = found.exposed.minus(waiting_claim(analysis, rank))
    exposed = transfer.length_ns
    waited = exposed_all - exposed
    wall = analysis.wall_ns(rank)
    if not worth_reporting("communication", exposed, wall):
        return None
    window = analysis.gpu_time(rank)
    window_ns = window.window_ns if window is not None else wall
    # Overlap hides communication only behind compute: no more than the compute kernels' time
    # that does not already run beside a collective.
    apart = max(0, window.compute_ns - overlapped) if window is not None else exposed
    gain = min(exposed, apart)
    present = len(analysis.trace.ranks)
    missing = max(0, (world_size(analysis.trace.meta) or present) - present)
    sampled = missing > present  # most of the job's ranks are not in the trace
    by_collective = (
        comm.assign(collective=[collective_name(str(n)) for n in comm["name"]])
        .groupby("collective")["dur_ns"]
        .agg(["count", "sum"])
        .sort_values("sum", ascending=False)
    )
    top = ", ".join(
        f"{name} x{int(r['count'])} ({format_time(r['sum'])})"
        for name, r in by_collective.head(4).iterrows()
    )
    share = 100.0 * comm_ns / window_ns if window_ns else 0.0
    exposed_pct = 100.0 * exposed / comm_ns if comm_ns else 0.0
    return Hint(
        kind="communication",
        subject="GPU collectives",
        title=f"{format_time(exposed)} of collectives not hidden by compute",
        basis_ns=wall,
        gain_ns=int(gain),
        claim=transfer,
        gain_method=(
            "Exposed collective time: the union of NCCL/RCCL kernel intervals minus the part "
            "during which a compute kernel ran on the same GPU, and, in a job, minus the time "
            "each kernel waited for the last rank to arrive (the straggler's). Perfect overlap "
            "would hide all of it, but only behind compute: the gain is at most the compute "
            "kernels' time that does not already run beside a collective. An upper bound."
        ),
        confidence="low" if sampled else "medium",
        explanation=(
            f"{len(comm)} collective kernels ran for {format_time(comm_ns)} "
            f"({format_percent(share)} of the GPU window of {format_time(window_ns)}): {top}. "
            f"Compute kernels on other streams overlapped {format_time(overlapped)} of it; "
            + (
                f"of the {format_time(exposed_all)} that ran with no compute alongside, "
                f"{format_time(waited)} was this rank waiting for the last rank to arrive (see "
                f"the straggler finding; no overlap hides it), and {format_time(exposed)} "
                f"({format_percent(exposed_pct, 0)}) the collectives' own time."
                if waited > 0
                else f"{format_time(exposed)} ({format_percent(exposed_pct, 0)}) ran with no "
                "compute alongside, so the GPU waited on the network."
            )
            + (
                f" Overlap can hide at most the {format_time(apart)} of compute that runs apart "
                "from them, so that is the gain; fewer or smaller collectives cut the rest."
                if gain < exposed
                else ""
            )
            + (
                f" Only {present} of the job's {present + missing} ranks are in the trace: part "
                "of this time may be waiting for ranks it does not hold, which no overlap hides."
                if sampled
                else ""
            )
        ),
        numbers={
            "collective_kernels": len(comm),
            "comm_ns": int(comm_ns),
            "comm_kernel_sum_ns": int(comm_sum),
            "gpu_window_ns": int(window_ns),
            "comm_share_pct": round(share, 2),
            "overlapped_ns": int(overlapped),
            "exposed_ns": int(exposed),
            "waiting_for_ranks_ns": int(waited),
            "compute_apart_ns": int(apart),
            "top_collectives": top,
        },
        fix=_fixes(analysis, rank, by_collective.index),
        code=(
            ""
            if analysis.workload.phase == "inference" or list(by_collective.index) == ["SendRecv"]
            else CODE
        ),
        evidence=(heaviest_events(comm, "kernels", rank, "collective kernels, longest first"),),
        rank=rank,
    )


def _cpu_hint(analysis: Analysis, rank: int, found: CommOverlap) -> Hint | None:
    comm, comm_ns, overlapped, exposed = _figures(found)
    wall = analysis.wall_ns(rank)
    if not worth_reporting("communication", exposed, wall):
        return None
    counts = comm["name"].astype(str).value_counts()
    top = ", ".join(f"{name} x{count}" for name, count in counts.head(4).items())
    return Hint(
        kind="communication",
        subject="CPU collectives",
        title=f"{format_time(exposed)} of CPU collectives (gloo) not overlapped",
        basis_ns=wall,
        gain_ns=int(exposed),
        claim=found.exposed,
        gain_method=(
            "Exposed collective time on the CPU: the union of gloo:/c10d:: intervals minus "
            "the part during which an aten op (not a collective) ran on any thread. An upper "
            "bound on what overlap gives back."
        ),
        confidence="low",
        explanation=(
            f"{len(comm)} CPU collective events ({top}) covered {format_time(comm_ns)} of "
            f"the rank's {format_time(wall)}; aten ops ran alongside for "
            f"{format_time(overlapped)}, leaving {format_time(exposed)} in which the rank "
            "only communicated."
        ),
        numbers={
            "collective_events": len(comm),
            "comm_ns": int(comm_ns),
            "overlapped_ns": int(overlapped),
            "exposed_ns": int(exposed),
            "wall_ns": int(wall),
            "top_collectives": top,
        },
        fix=FIX,
        code=CODE,
        evidence=(heaviest_events(comm, "ops", rank, "CPU collectives, longest first"),),
        rank=rank,
    )


def _fixes(analysis: Analysis, rank: int, collectives: pd.Index) -> tuple[str, ...]:
    """NCCL runs all_to_all as SendRecv kernels too: say pipeline parallelism only when no
    all_to_all op launched them. Gradient advice (DDP buckets, no_sync, compression) only
    where a collective other than SendRecv ran: point-to-point traffic carries no gradients.
    An inference gets serving's fixes."""
    if analysis.workload.phase == "inference":
        return SERVING_FIX
    if "SendRecv" not in collectives:
        return FIX
    ops = analysis.rank_table("ops", rank)
    exchange = bool(matches(ops["name"], _ALL_TO_ALL).any()) if len(ops) else False
    first = ALL_TO_ALL_FIX if exchange else P2P_FIX
    if len(collectives) == 1:
        return (first, STRAGGLERS)
    return (first, *FIX)
