"""CPU-GPU synchronization stalls: .item(), .cpu(), synchronous copies, explicit synchronize.

A sync makes the host wait until the GPU has drained its queue, so when the host resumes the
GPU has nothing queued and idles while the host prepares the next launch. analyses/idle.py
attributes those gaps to synchronization (sync activity covering most of the gap, or a sync
that was waiting when the gap began and waited at least half as long as the gap lasted: a sync
costs at most min(gap, wait) of idle). Gain: that idle time; removing or deferring the sync
lets the host run ahead and keep the queue full. The time the host spends inside sync calls is
reported but not counted: while the host waits the GPU is still busy, so the wall clock does
not get it back.

Sources are grouped by the aten op that synchronized (aten::item, aten::to, aten::nonzero...)
and, when the trace has Python stacks (with_stack=True), by the innermost Python frame outside
torch that enclosed it ("train.py(42): step"; the number is the line Kineto records for the
frame). Fires per rank when the gain is a large enough share of the rank's wall time
(analyses/thresholds.py).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from gpuprofile.analyses import idle
from gpuprofile.analyses.claims import frame_claim, rows_claim
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.fixes_by_framework import AUTOTUNE_TEXT, SYNC, Fix, pick, pick_text
from gpuprofile.analyses.framework import Framework
from gpuprofile.analyses.hints import MAX_EVIDENCE_EVENTS, Evidence, Hint
from gpuprofile.analyses.lookups import innermost_with
from gpuprofile.analyses.names import strings
from gpuprofile.analyses.steps import is_step
from gpuprofile.analyses.thresholds import worth_reporting
from gpuprofile.trace.model import NO_ID
from gpuprofile.units import format_fraction, format_time

TOP_SOURCES = 5
# Frames that are not the user's code: the line to show is the caller outside them.
_NOT_USER_FRAME = re.compile(r"^(torch/|<built-in|nn\.Module: |<string>|threading\.py)")
_FRAME = re.compile(r"\(\d+\): ")

FIX = (
    "Remove host reads of GPU values from the hot loop (.item(), .cpu(), .tolist(), "
    "print(tensor), `if tensor:`); accumulate on the GPU and read every N steps.",
    "Avoid ops whose output shape depends on the data (nonzero, masked_select, boolean "
    "indexing, torch.unique): each waits for the GPU.",
    "When the host does need a value, copy it into pinned memory with non_blocking=True, "
    "record a CUDA event, and read it a step later.",
    "Replace torch.cuda.synchronize() used for timing with torch.cuda.Event(enable_timing=True).",
    'To find hidden syncs: torch.cuda.set_sync_debug_mode("warn") reports each one.',
)
# cuDNN/MIOpen benchmark mode times candidate algorithms with event syncs.
_AUTOTUNING = re.compile(r"cudnn|miopen", re.IGNORECASE)
AUTOTUNE = (
    "These syncs come from convolution autotuning (torch.backends.cudnn.benchmark=True times "
    "algorithms on the first call per input shape): a one-time cost; keep input shapes fixed "
    "and profile after warm-up steps."
)
# Syncs the loop makes to time itself (see _hint): the fix for them, in place of FIX's.
DIRECT = " called directly"
_WHOLE_SYNC = re.compile(r"(?:Device|Ctx)Synchronize$")
_DIRECT_WHOLE_SYNC = re.compile(r"(?:Device|Ctx)Synchronize called directly$")
TIMING = (
    "These syncs time the loop (a benchmark harness): time iterations with CUDA events "
    "(torch.cuda.Event(enable_timing=True), read after the loop), or leave the sync out of "
    "the profiled window; the model's own code does not wait here."
)
CODE = """\
torch.cuda.set_sync_debug_mode("warn")   # reports every synchronizing call
total = torch.zeros((), device="cuda")
for step, batch in enumerate(loader):
    loss = train_step(batch)
    total += loss.detach()                # instead of loss.item() each step
    if step % 100 == 99:
        print(total.item() / 100)         # one sync per 100 steps
        total.zero_()
"""


def detect(analysis: Analysis) -> list[Hint]:
    trace = analysis.trace
    gaps = analysis.idle_gaps
    calls = analysis.blocking_calls
    calls = calls[calls["cause"] == idle.SYNCHRONIZATION]
    hints = []
    for rank in trace.ranks:
        stalls = gaps[(gaps["rank"] == rank) & (gaps["cause"] == idle.SYNCHRONIZATION)]
        gain = int(stalls["dur_ns"].sum())
        wall = analysis.wall_ns(rank)
        if not worth_reporting("sync-stall", gain, wall):
            continue
        hints.append(
            _hint(
                analysis, rank, stalls, calls[calls["rank"] == rank], gain, wall, analysis.framework
            )
        )
    return hints


def _hint(
    analysis: Analysis,
    rank: int,
    stalls: pd.DataFrame,
    calls: pd.DataFrame,
    gain: int,
    wall: int,
    kind: Framework,
) -> Hint:
    trace = analysis.trace
    breakdown = analysis.gpu_time(rank)
    window = breakdown.window_ns if breakdown is not None else wall
    chosen = pick(kind, Fix(FIX, CODE), SYNC)
    sources = _sources(analysis, stalls)
    top = sources.iloc[0]
    top_op, top_where = str(top["op"]), str(top["where"])
    names = strings(trace.runtime["name"])
    call_names = pd.Series(names[calls["runtime"].to_numpy()]).value_counts()
    call_text = ", ".join(f"{name} x{count}" for name, count in call_names.items()) or "none"
    call_ns = int((calls["end_ns"] - calls["start_ns"]).sum())
    source_text = "; ".join(
        f"{where} ({gaps} gaps, {format_time(int(ns))})"
        for where, gaps, ns in sources.head(TOP_SOURCES)[["where", "gaps", "idle_ns"]].itertuples(
            index=False
        )
    )
    heaviest = calls.assign(dur=calls["end_ns"] - calls["start_ns"]).nlargest(
        MAX_EVIDENCE_EVENTS, "dur"
    )
    runtime_ids = trace.runtime["id"].to_numpy()[heaviest["runtime"].to_numpy()]
    largest = stalls.nlargest(MAX_EVIDENCE_EVENTS, "dur_ns")
    windows = tuple(zip(largest["start_ns"].tolist(), largest["end_ns"].tolist(), strict=True))
    op_ids = [i for i in dict.fromkeys(largest["op_id"].tolist()) if i != NO_ID]
    evidence = [Evidence(table="kernels", rank=rank, windows=windows, label="GPU idle after syncs")]
    if op_ids:
        evidence.append(
            Evidence(table="ops", rank=rank, event_ids=tuple(op_ids), label="synchronizing ops")
        )
    if len(runtime_ids):
        evidence.append(
            Evidence(
                table="runtime",
                rank=rank,
                event_ids=tuple(int(i) for i in runtime_ids),
                label="synchronizing runtime calls",
            )
        )
    # A device or stream synchronize called directly, at most once a step and a final one:
    # the loop timing itself (a benchmark harness), not the model reading a value.
    steps = int(is_step(analysis.rank_table("ops", rank)["name"]).sum())
    device_syncs = call_names[call_names.index.str.contains(_WHOLE_SYNC)]
    direct = sources[sources["op"].str.contains(_DIRECT_WHOLE_SYNC)]
    timing = (
        0 < int(device_syncs.sum()) <= max(2, steps + 1)
        and int(direct["idle_ns"].sum()) * 2 >= gain
    )
    fix = (
        (TIMING, *(f for f in chosen.fix if "synchronize()" not in f))
        if timing
        else (pick_text(kind, AUTOTUNE, AUTOTUNE_TEXT), *chosen.fix)
        if _AUTOTUNING.search(top_op)
        else chosen.fix
    )
    # Idle inside the calls whose next work was queued already (analyses/idle.py's rule 0): the
    # GPU waited on another stream or a collective, and the sync only waited for that too.
    gaps = analysis.idle_gaps
    queued = gaps[
        (gaps["rank"] == rank) & (gaps["cause"] == idle.OTHER) & (gaps["runtime_id"] != NO_ID)
    ]
    inside = frame_claim(queued)
    held = rows_claim(
        calls["start_ns"].to_numpy(), (calls["end_ns"] - calls["start_ns"]).to_numpy()
    )
    queued_ns = inside.overlap_ns(held)
    queued_text = (
        f" While the host waited in them, the GPU also sat idle {format_time(queued_ns)} with "
        "its next work already queued behind another stream or a collective: that wait is the "
        "dependency's, which the sync only waited out too; without the sync the host could "
        "queue independent work there."
        if queued_ns >= gain
        else ""
    )
    timing_text = (
        f" Most of it follows {'/'.join(device_syncs.index)} called directly, "
        f"{int(device_syncs.sum())} in {max(steps, 1)} step{'s' if steps > 1 else ''}: the "
        "loop timing itself, not the model reading a value."
        if timing
        else ""
    )
    return Hint(
        kind="sync-stall",
        subject="synchronizing calls",
        title=(
            f"Syncs leave the GPU idle {format_fraction(gain / window, 0)} of the window, "
            f"most in {top_op}"
        ),
        basis_ns=wall,
        gain_ns=gain,
        claim=frame_claim(stalls),
        gain_method=(
            "GPU idle attributed to synchronization (sync activity covering most of the gap, "
            "or a sync that was waiting when the gap began and waited at least half as long): "
            "without it the host runs ahead and keeps the queue full. Host time inside sync "
            "calls is not counted: the GPU works meanwhile."
        ),
        confidence="low" if timing else "high" if len(calls) else "medium",
        explanation=(
            f"Rank {rank}: the GPU sat idle {format_time(gain)} "
            f"({format_fraction(gain / window)} of its {format_time(window)} window) in "
            f"{len(stalls)} gaps after the host synchronized. "
            f"Synchronizing calls: {call_text}, {format_time(call_ns)} of host time in all. "
            f"Where: {source_text}.{timing_text}{queued_text}"
        ),
        numbers={
            "idle_ns": gain,
            "window_ns": window,
            "gaps": len(stalls),
            "sync_calls": len(calls),
            "sync_call_ns": call_ns,
            "top_op": top_op,
            "top_where": top_where,
            "queued_idle_in_sync_ns": queued_ns,
        },
        fix=fix,
        code=chosen.code,
        evidence=tuple(evidence),
        rank=rank,
    )


def _sources(analysis: Analysis, stalls: pd.DataFrame) -> pd.DataFrame:
    """Idle per (op name, Python frame), largest first: op, where, gaps, idle_ns."""
    trace = analysis.trace
    ops = trace.ops
    position = analysis.id_index("ops").get_indexer(pd.Index(stalls["op_id"]))
    names = strings(ops["name"])
    op = np.where(position >= 0, names[np.maximum(position, 0)] if len(names) else "", "")
    # A sync with no op around it: torch.cuda.synchronize() and the like call the runtime
    # directly; name the call.
    runtime = trace.runtime
    call = analysis.id_index("runtime").get_indexer(pd.Index(stalls["runtime_id"]))
    call_names = strings(runtime["name"])
    bare = np.where(call >= 0, call_names[np.maximum(call, 0)] if len(call_names) else "", "")
    op = np.where(op == "", np.char.add(bare.astype(str), DIRECT), op)
    frames = user_frames(analysis, np.unique(position[position >= 0]).tolist())
    frame = [frames.get(p) if p >= 0 else None for p in position.tolist()]
    where = [f"{o} in {f}" if f else str(o) for o, f in zip(op, frame, strict=True)]
    table = pd.DataFrame({"op": op, "where": where, "idle_ns": stalls["dur_ns"].to_numpy()})
    grouped = table.groupby(["where", "op"], sort=False).agg(
        gaps=("idle_ns", "size"), idle_ns=("idle_ns", "sum")
    )
    return grouped.reset_index().sort_values(
        ["idle_ns", "where"], ascending=[False, True], kind="stable"
    )


def user_frames(analysis: Analysis, positions: list[int]) -> dict[int, str | None]:
    """Per op row: the innermost Python frame outside torch that encloses it, if any."""
    trace = analysis.trace
    ops = trace.ops
    is_frame = (ops["category"] == "python_function").to_numpy()
    names = ops["name"].astype("category")
    user = np.array(
        [
            bool(_FRAME.search(c)) and not _NOT_USER_FRAME.match(c)
            for c in map(str, names.cat.categories)
        ]
        + [False]
    )[names.cat.codes.to_numpy()]
    found = innermost_with(is_frame & user, analysis.op_parents, np.asarray(positions, np.int64))
    return {
        p: str(names.iloc[at]) if at >= 0 else None
        for p, at in zip(positions, found.tolist(), strict=True)
    }
