"""Many small kernels: the GPU finishes each before the host has launched the next.

In eager PyTorch every kernel costs the host an op dispatch plus a launch call: cudaLaunchKernel
alone takes 2-5 us in the shared traces (median 2.5-4 us on A100/V100/H100 captures), and the
aten dispatch, Python and autograd around it add several more. A kernel shorter than
LAUNCH_LATENCY_NS (thresholds.py: 10 us, the upper end of the usual 5-10 us) therefore tends
to finish before its successor is queued, and the GPU sits idle between kernels.

Gain: what a CUDA graph (torch.compile mode="reduce-overhead", torch.cuda.graphs) gives back:
the GPU idle whose cause is the host launching (analyses/idle.py's host-launch-bound gaps: the
work that ends the gap was launched after the gap began, or host activity covers most of it).
A replay launches its kernels back to back from the GPU side, with about 1 us between
kernels (NVIDIA, "Getting Started with CUDA Graphs", 2019: a chain of 2.9 us kernels went
from 3.8 us to 3.4 us per kernel once captured), so each such gap counts less GRAPH_GAP_NS.
This is the classic eager LLM decode: kernels of any length, each waiting for its launch; the
small-kernel counts are context, not the condition. Gaps longer than MAX_LAUNCH_GAP_NS are host
work of their own (Python between steps: the gpu-idle detector's), and gaps during a
synchronizing runtime call are sync stalls: neither counts. Gaps before work that was queued
already (a graph replay, a dependency) are not host-bound and never count, so a trace that
replays graphs is not told to use them; where it also launches kernels one at a time, the fix
says to bring those into the graph. Fusion (torch.compile) gives more than this, since the
fused kernels also stop re-reading memory; this estimate does not claim it.

Frequent back-to-back sequences of small kernels on one stream (2 to 4 kernels, ranked by the
time they span) are named as fusion candidates.

A CPU-only capture has no kernels and no launches: the detector stays silent there (per-op
dispatch cost on the CPU shows in the op table, not as GPU idle time).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from gpuprofile.analyses import idle
from gpuprofile.analyses.claims import frame_claim
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.fixes_by_framework import GRAPHED, LAUNCH, Fix, pick
from gpuprofile.analyses.hints import MAX_EVIDENCE_EVENTS, Evidence, Hint
from gpuprofile.analyses.host_ops import main_ops
from gpuprofile.analyses.intervals import IntervalSet
from gpuprofile.analyses.kernel_names import clipped_name, parts_per_name
from gpuprofile.analyses.names import categorical, matches
from gpuprofile.analyses.names import codes as names_codes
from gpuprofile.analyses.thresholds import (
    LAUNCH_LATENCY_NS,
    MIN_KERNELS_FOR_GRAPHS,
    worth_reporting,
)
from gpuprofile.trace.model import NO_ID
from gpuprofile.units import format_percent, format_time

GRAPH_GAP_NS = 1_000
MAX_LAUNCH_GAP_NS = 100_000
NGRAM_LENGTHS = (2, 3, 4)
TOP_SEQUENCES = 3
LAUNCH_CALL = re.compile(
    r"^(cudaLaunchKernel|cudaLaunchKernelExC|cudaLaunchCooperativeKernel|cuLaunchKernel|"
    r"cuLaunchKernelEx|hipLaunchKernel|hipExtLaunchKernel|hipExtModuleLaunchKernel|"
    r"hipModuleLaunchKernel|hipLaunchCooperativeKernel)(?:_v\d+)?$"
)
# Replays of captured CUDA/HIP graphs: a rank that has them already uses graphs.
GRAPH_LAUNCH_CALL = re.compile(r"^(?:cuda|hip|cu)GraphLaunch")
# Calls that block the host until the GPU catches up: gaps under them are sync stalls.
SYNC_CALL = re.compile(r"Synchronize|^(?:cuda|hip)Memcpy(?!.*Async)|^cuMemcpy(?!.*Async)")

FIX = (
    "Capture the steady-state step in a CUDA graph: torch.compile(model, "
    'mode="reduce-overhead") does it for you (static shapes; mark dynamic ones), or '
    "torch.cuda.graphs / torch.cuda.make_graphed_callables by hand.",
    "Fuse chains of small elementwise kernels: torch.compile(model) generates one Triton "
    "kernel per chain (the repeated sequences the explanation names, where it names some).",
    "Use fused implementations: fused layer norms, F.scaled_dot_product_attention.",
    "Step the optimizer in one fused or multi-tensor launch: torch.optim.AdamW(..., "
    "fused=True) or foreach=True.",
    "Give each kernel more work: larger batches, or batch many small tensors into one "
    "(torch.cat, torch._foreach_*).",
)
GRAPHED_FIX = (
    "Part of the step already replays CUDA graphs; the gaps are in kernels launched one at a "
    "time outside them (sampling, cache updates, pre- and post-processing): bring those into "
    "the captured region (static buffers, no host syncs inside), or fuse them with "
    "torch.compile."
)
GRAPHED_CODE = """\
# inside the graphed region: no .item(), no Python branching on tensor values
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    static_out = step(static_in)  # the work now launched kernel by kernel, captured too
graph.replay()
"""
CODE = """\
model = torch.compile(model, mode="reduce-overhead")  # CUDA graphs + fusion
optimizer = torch.optim.AdamW(model.parameters(), fused=True)
"""


def detect(analysis: Analysis) -> list[Hint]:
    trace = analysis.trace
    hints = []
    for rank in trace.ranks:
        kernels = analysis.rank_table("kernels", rank)
        if len(kernels) < MIN_KERNELS_FOR_GRAPHS:
            continue
        hint = _hint(analysis, rank, kernels, analysis.idle_gaps)
        if hint is not None:
            hints.append(hint)
    return hints


def fusion_candidates(kernels: pd.DataFrame, limit: int = TOP_SEQUENCES) -> pd.DataFrame:
    """Repeated runs of 2-4 back-to-back small kernels on a stream, by their kernels' time
    (kernel_ns: the runs' kernels' durations summed, never the gaps between them, which a
    fused kernel would not have either).

    Back to back: no gap inside the run longer than MAX_LAUNCH_GAP_NS. A run contained in a
    longer one already listed is skipped.
    """
    # Short names: template variants of one kernel are one fusion candidate.
    labels, codes = _short_names(kernels["name"])
    # Per (device, stream), by start (ties in row order): runs never cross streams.
    order = np.lexsort(
        (
            kernels["start_ns"].to_numpy(),
            kernels["stream"].to_numpy(),
            kernels["device"].to_numpy(),
        )
    )
    codes = codes[order]
    stream = (
        pd.factorize(kernels["device"].to_numpy()[order])[0] * (len(kernels) + 1)
        + pd.factorize(kernels["stream"].to_numpy()[order])[0]
    )
    start = kernels["start_ns"].to_numpy(np.int64)[order]
    dur = kernels["dur_ns"].to_numpy(np.int64)[order]
    end = start + dur
    small = kernels["dur_ns"].to_numpy()[order] < LAUNCH_LATENCY_NS
    # joined[i]: kernel i+1 follows kernel i on its stream closely enough to be fused with it.
    joined = ((start[1:] - end[:-1]) <= MAX_LAUNCH_GAP_NS) & (stream[1:] == stream[:-1])
    # Per distinct (sequence, n): its count and its kernels' summed time.
    totals: dict[tuple[str, int], list[int]] = {}
    for n in NGRAM_LENGTHS:
        m = len(start) - n + 1
        if m <= 0:
            continue
        ok = small[:m].copy()
        for j in range(1, n):
            ok &= small[j : j + m] & joined[j - 1 : j - 1 + m]
        at = np.flatnonzero(ok)
        if not len(at):
            continue
        # Count and sum by the names' integer codes; spell out each distinct sequence once.
        key = np.zeros(len(at), dtype=np.int64)
        for j in range(n):
            key = pd.factorize(key * (len(labels) + 1) + codes[at + j])[0]
        distinct, first = np.unique(key, return_index=True)
        kernel_ns = np.zeros(len(distinct), dtype=np.int64)
        np.add.at(kernel_ns, key, sum(dur[at + j] for j in range(n)))
        count = np.bincount(key, minlength=len(distinct))
        for i, c, ns in zip(at[first].tolist(), count.tolist(), kernel_ns.tolist(), strict=True):
            sequence = " -> ".join(labels[codes[i + j]] for j in range(n))
            total = totals.setdefault((sequence, n), [0, 0])
            total[0] += c
            total[1] += ns
    columns = ["sequence", "n", "count", "kernel_ns"]
    # Groups in (sequence, n) order, numbered as a sorted groupby numbers them; then the
    # repeated ones by kernel time, then length, longest first (ties in group order).
    groups = sorted(totals)
    kept = [g for g, key in enumerate(groups) if totals[key][0] >= 2]
    kept.sort(key=lambda g: (-totals[groups[g]][1], -groups[g][1]))
    if not kept:
        return pd.DataFrame(columns=columns)
    picked: list[int] = []
    for g in kept:
        if len(picked) == limit:
            break
        if not any(groups[g][0] in groups[p][0] for p in picked):
            picked.append(g)
    return pd.DataFrame(
        {
            "sequence": pd.Series([groups[g][0] for g in picked], dtype="str"),
            "n": np.array([groups[g][1] for g in picked], np.int64),
            "count": np.array([totals[groups[g]][0] for g in picked], np.int64),
            "kernel_ns": np.array([totals[groups[g]][1] for g in picked], np.int64),
        }
    ).set_axis(pd.Index(picked, dtype=np.int64))


def _short_names(names: pd.Series) -> tuple[list[str], np.ndarray]:
    """The distinct short names, and per row the position of its own among them."""
    # A missing name reads as "nan", as str() spells it.
    names = categorical(names)
    short = np.array([clipped_name(p[0], 50) for p in parts_per_name(names).tolist()], object)
    codes, labels = pd.factorize(short)
    return [str(label) for label in labels], codes[names_codes(names)]


def host_bound_gaps(analysis: Analysis, rank: int, gaps: pd.DataFrame) -> pd.DataFrame:
    """The rank's idle gaps a CUDA graph would remove: those idle.py blames on the host
    launching (host-launch-bound), at most MAX_LAUNCH_GAP_NS long, none under a synchronizing
    call. Columns of analyses/idle.py's gaps, plus removable_ns (each gap less GRAPH_GAP_NS)."""
    mine = gaps[(gaps["rank"] == rank) & (gaps["cause"] == idle.HOST_LAUNCH_BOUND)]
    mine = mine[mine["dur_ns"].to_numpy() <= MAX_LAUNCH_GAP_NS]
    if mine.empty:
        return mine.assign(removable_ns=pd.Series(dtype=np.int64))
    start = mine["start_ns"].to_numpy(np.int64)
    length = mine["dur_ns"].to_numpy(np.int64)
    mine = mine[~_under_sync(analysis, rank, start, length)]
    return mine.assign(removable_ns=np.maximum(mine["dur_ns"].to_numpy(np.int64) - GRAPH_GAP_NS, 0))


def _hint(analysis: Analysis, rank: int, kernels: pd.DataFrame, gaps: pd.DataFrame) -> Hint | None:
    trace, kind = analysis.trace, analysis.framework
    counted = host_bound_gaps(analysis, rank, gaps)
    gain = int(counted["removable_ns"].sum())
    # The report's figure (idle_by_cause), and the parts of it a graph cannot remove.
    bound = gaps[(gaps["rank"] == rank) & (gaps["cause"] == idle.HOST_LAUNCH_BOUND)]
    bound_ns = int(bound["dur_ns"].sum())
    longer = bound[bound["dur_ns"].to_numpy() > MAX_LAUNCH_GAP_NS]
    under_sync_ns = bound_ns - int(longer["dur_ns"].sum()) - int(counted["dur_ns"].sum())
    wall = analysis.wall_ns(rank)
    if not worth_reporting("launch-overhead", gain, wall):
        return None
    # The host work that fills the longer gaps, by the ops the program called.
    gap_start = longer["start_ns"].to_numpy(np.int64)
    held = main_ops(analysis, rank, IntervalSet(gap_start, gap_start + longer["dur_ns"].to_numpy()))
    # Columns, not filtered tables: the kernels table is wide and long.
    kernel_ns = kernels["dur_ns"].to_numpy()
    is_small = kernel_ns < LAUNCH_LATENCY_NS
    small_count = int(is_small.sum())
    launches = _launch_calls(analysis, rank)
    mine = analysis.rank_rows("runtime", rank)
    graph_launches = int(matches(trace.runtime["name"], GRAPH_LAUNCH_CALL, rows=mine).sum())
    launch_dur = launches["dur_ns"].to_numpy()
    small_launch = np.isin(
        launches["correlation"].to_numpy(), kernels["correlation"].to_numpy()[is_small]
    )
    small_launches = int(small_launch.sum())
    launch_ns = int(launch_dur[small_launch].sum())
    median_launch = float(np.median(launch_dur)) if len(launches) else float("nan")
    small_ns = int(kernel_ns[is_small].sum())
    idle_ns = int(counted["dur_ns"].sum())
    share = 100.0 * small_count / len(kernels)
    sequences = fusion_candidates(kernels)
    numbers: dict[str, float | int | str] = {
        "kernels": len(kernels),
        "small_kernels": small_count,
        "small_kernel_ns": small_ns,
        "small_kernel_threshold_ns": LAUNCH_LATENCY_NS,
        "launch_calls": len(launches),
        "graph_launches": graph_launches,
        "launch_ns_for_small_kernels": launch_ns,
        "median_launch_ns": median_launch,
        "launch_gaps": len(counted),
        "launch_gap_ns": idle_ns,
        "host_launch_bound_ns": bound_ns,
        "longer_gaps": len(longer),
        "longer_gap_ns": int(longer["dur_ns"].sum()),
        "under_sync_ns": under_sync_ns,
    }
    described = []
    rows = zip(sequences["sequence"], sequences["count"], sequences["kernel_ns"])
    for i, (text, count, span) in enumerate(rows, start=1):
        numbers[f"fusion_candidate_{i}"] = f"{text} (x{int(count)}, {format_time(float(span))})"
        described.append(f"{text} x{int(count)}")
    launch_text = (
        f"The host spent {format_time(launch_ns)} in {small_launches} launch calls for "
        f"the {small_count} kernels shorter than {format_time(LAUNCH_LATENCY_NS)} (median launch "
        f"{format_time(median_launch)}) against {format_time(small_ns)} of their kernel time. "
        if small_launches
        else ""
    )
    sequence_text = (
        f" Most time-consuming repeated sequences (fusion candidates): {'; '.join(described)}."
        if described
        else ""
    )
    graph_text = (
        f" The rank already replays CUDA graphs ({graph_launches} graph launches): this idle "
        "is in work launched one kernel at a time outside them."
        if graph_launches
        else ""
    )
    return Hint(
        kind="launch-overhead",
        subject="kernel launches",
        title=(
            f"GPU idle {format_time(idle_ns)} in {len(counted)} gaps waiting for kernel launches"
        ),
        basis_ns=wall,
        gain_ns=gain,
        claim=frame_claim(counted),
        gain_method=(
            "Sum of the GPU idle gaps whose cause is the host launching (analyses/idle.py: "
            f"the next work was launched after the gap began), each of at most "
            f"{format_time(MAX_LAUNCH_GAP_NS)} and none under a synchronizing call, less the "
            f"~{format_time(GRAPH_GAP_NS)} a CUDA graph replay still leaves between kernels."
        ),
        confidence="medium",
        explanation=(
            f"The GPU sat idle in {len(counted)} gaps, {format_time(idle_ns)} in all, each "
            "ended by work the host launched only after the GPU had run dry: it could not "
            f"launch fast enough. {small_count} of {len(kernels)} kernels "
            f"({format_percent(share, 0)}) ran shorter than {format_time(LAUNCH_LATENCY_NS)}, "
            f"{format_time(small_ns)} in total. {launch_text}".rstrip()
            + f"{graph_text}{sequence_text} "
            + _accounting(bound_ns, gain, longer, under_sync_ns, len(counted), held)
        ),
        numbers=numbers,
        **(
            pick(kind, Fix((GRAPHED_FIX, *FIX[1:]), GRAPHED_CODE), GRAPHED)
            if graph_launches
            else pick(kind, Fix(FIX, CODE), LAUNCH)
        )._asdict(),
        evidence=_evidence(analysis, rank, counted),
        rank=rank,
    )


def _accounting(
    bound_ns: int,
    gain: int,
    longer: pd.DataFrame,
    under_sync_ns: int,
    counted: int,
    held: dict[str, int],
) -> str:
    """How the gain follows from the host-launch-bound idle the report gives (idle_by_cause);
    ``held``: the ops the program called that fill the longer gaps, with their time there."""
    parts = []
    if len(longer):
        longer_ns = int(longer["dur_ns"].sum())
        named = ", ".join(f"{name} {format_time(ns)}" for name, ns in held.items())
        parts.append(
            f"{format_time(longer_ns)} is in {len(longer)} gaps longer than "
            f"{format_time(MAX_LAUNCH_GAP_NS)} (host work of its own, not launch cost"
            + (f"; traced ops in them: {named}" if named else "")
            + ")"
        )
    if under_sync_ns > 0:
        parts.append(f"{format_time(under_sync_ns)} is under synchronizing calls (sync stalls)")
    parts.append(
        f"about {format_time(GRAPH_GAP_NS)} of each of the {counted} gaps stays between "
        "replayed kernels"
    )
    return (
        f"Of the {format_time(bound_ns)} of idle this report puts down to host launching, a "
        f"graph gives back about {format_time(gain)}: " + "; ".join(parts) + "."
    )


def _evidence(analysis: Analysis, rank: int, gaps: pd.DataFrame) -> tuple[Evidence, ...]:
    # nlargest's rows (the largest first, ties in row order) by argsort: it costs a frame.
    largest = np.argsort(-gaps["dur_ns"].to_numpy(np.int64), kind="stable")
    top = gaps.iloc[largest[:MAX_EVIDENCE_EVENTS]].sort_values("start_ns")
    kernels = analysis.rank_table("kernels", rank)
    by_start = np.argsort(kernels["start_ns"].to_numpy(np.int64), kind="stable")
    kstart = kernels["start_ns"].to_numpy(np.int64)[by_start]
    # The kernel that ends each gap starts where the gap ends (a copy may end it instead).
    at = np.minimum(np.searchsorted(kstart, top["end_ns"].to_numpy(np.int64)), len(kstart) - 1)
    ends_gap = kstart[at] == top["end_ns"].to_numpy(np.int64) if len(kstart) else at < 0
    ids = tuple(int(i) for i in kernels["id"].to_numpy()[by_start][at[ends_gap]])
    windows = tuple(
        (int(s), int(e)) for s, e in zip(top["start_ns"].tolist(), top["end_ns"].tolist())
    )
    evidence = [
        Evidence("kernels", rank, ids, windows, "kernels after the longest launch gaps (gaps)")
    ]
    calls = top["runtime_id"].to_numpy(np.int64)
    runtime = analysis.trace.runtime
    # The calls' rows by id, in table order (as a filter on the ids keeps them).
    rows = analysis.id_index("runtime").get_indexer(pd.Index(calls[calls != NO_ID]))
    launches = runtime.iloc[np.unique(rows[rows >= 0])[:MAX_EVIDENCE_EVENTS]]
    if len(launches):
        start = launches["start_ns"].to_numpy(np.int64)
        evidence.append(
            Evidence(
                "runtime",
                rank,
                tuple(int(i) for i in launches["id"]),
                tuple(zip(start.tolist(), (start + launches["dur_ns"].to_numpy()).tolist())),
                "their launch calls",
            )
        )
    return tuple(evidence)


def _launch_calls(analysis: Analysis, rank: int) -> pd.DataFrame:
    runtime = analysis.rank_table("runtime", rank)
    return runtime[matches(runtime["name"], LAUNCH_CALL, anchored=True)]


def _under_sync(
    analysis: Analysis, rank: int, gap_start: np.ndarray, gap_len: np.ndarray
) -> np.ndarray:
    """Per gap, whether a synchronizing runtime call of the rank overlaps it."""
    runtime = analysis.rank_table("runtime", rank)
    calls = runtime[matches(runtime["name"], SYNC_CALL)]
    if calls.empty:
        return np.zeros(len(gap_start), dtype=bool)
    start = calls["start_ns"].to_numpy(np.int64)
    order = np.argsort(start, kind="stable")
    start = start[order]
    end = np.maximum.accumulate(start + calls["dur_ns"].to_numpy(np.int64)[order])
    # The last call starting before the gap ends overlaps it iff the calls reach past its start.
    last = np.searchsorted(start, gap_start + gap_len, side="left") - 1
    return np.asarray((last >= 0) & (end[np.maximum(last, 0)] > gap_start))
