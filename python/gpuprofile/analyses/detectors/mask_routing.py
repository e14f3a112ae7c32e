"""Data-dependent routing: boolean masks turned into indices inside a module's forward, call
after call (``mask = idx == e; if mask.any(): out[mask] = expert(x[mask])``).

``mask.any()`` in an ``if`` reads a value on the host (``aten::is_nonzero`` -> ``aten::item``),
and indexing by a boolean mask (``aten::index`` / ``aten::index_put_`` run ``aten::nonzero``
inside, as does ``aten::masked_select``) needs the number of True elements on the host to size
its output. On a GPU each of them waits for every kernel queued before it: the launch queue
drains, the GPU idles until the host has launched again. The pattern shows in the op names on
any capture (analyses/code_patterns.py): on a CPU-only trace the finding says what the code
will do on a GPU, never that a GPU stalled.

Gain (low confidence): the host time of the sync ops, the outermost nonzero / is_nonzero /
item / masked_select, which scatter/gather routing does without. On a GPU rank the idle gaps
whose cause is a synchronization (analyses/idle.py) inside those ops are the sync-stall
finding's and are left out here; what remains is host time spent waiting. On a CPU-only rank
it is the ops' own CPU time, small: the finding is reported for the pattern, whatever its time.
"""

from __future__ import annotations

import numpy as np

from gpuprofile.analyses import idle
from gpuprofile.analyses.code_patterns import Occurrence, groups, line_text, where
from gpuprofile.analyses.comm_overlap import overlap_ns
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.hints import Hint, heaviest_events
from gpuprofile.analyses.thresholds import worth_reporting
from gpuprofile.units import format_time

FIX = (
    "Route without host syncs: compute each token's expert on the device and gather/scatter "
    "by index, never by a boolean mask: order = idx.argsort() and x.index_select(0, order) "
    "group the tokens by expert, torch.bincount(idx, minlength=E) counts them, "
    "out.index_add_(0, order, y) puts the results back.",
    "Drop `if mask.any():` around the expert call: an expert given zero rows computes "
    "nothing, and the test alone stalls the GPU once per expert.",
    "Where a mask must stay, keep its shape static: torch.where(mask, a, b) or "
    "x * mask.unsqueeze(-1) instead of x[mask]; x.nonzero() only once per step, outside the "
    "loop, if indices are needed.",
)
CODE = """\
idx = router(x).argmax(-1)                       # [N] expert of each token, on the device
order = idx.argsort()                            # tokens grouped by expert, no host sync
counts = torch.bincount(idx, minlength=len(experts))
y = torch.empty_like(x)
# run the experts batched (torch.bmm over stacked weights, or a grouped GEMM) on x[order]
y_sorted = batched_experts(x.index_select(0, order), counts)
y.index_copy_(0, order, y_sorted)                # or out.index_add_ for top-k > 1
"""


def detect(analysis: Analysis) -> list[Hint]:
    hints = []
    for subject, found in groups(analysis.modules, analysis.code_patterns.routings):
        rank = found[0].rank
        on_gpu = found[0].on_gpu
        claimed = sum(_stall_ns(analysis, o) for o in found) if on_gpu else 0
        sync_ns = sum(o.time_ns for o in found)
        gain = max(sync_ns - claimed, 0)
        wall = analysis.wall_ns(rank)
        entry = "data-dependent-routing" if on_gpu else "data-dependent-routing/cpu"
        if worth_reporting(entry, gain, wall):
            hints.append(_hint(analysis, subject, found, sync_ns, claimed, gain, wall))
    return hints


def _stall_ns(analysis: Analysis, found: Occurrence) -> int:
    """GPU idle of cause synchronization inside the occurrence's sync ops (sync-stall's)."""
    gaps = analysis.idle_gaps
    mine = gaps[(gaps["rank"] == found.rank) & (gaps["cause"] == idle.SYNCHRONIZATION)]
    start = mine["start_ns"].to_numpy(np.int64)
    lo, hi = (np.array([w[i] for w in found.windows], np.int64) for i in (0, 1))
    return overlap_ns(start, mine["end_ns"].to_numpy(np.int64), lo, hi)


def _hint(
    analysis: Analysis,
    subject: str,
    found: list[Occurrence],
    sync_ns: int,
    claimed: int,
    gain: int,
    wall: int,
) -> Hint:
    rank = found[0].rank
    on_gpu = found[0].on_gpu
    modules = where(analysis.modules, found)
    per_call = max(len(o.rows) for o in found)
    kinds = sorted(set(found[0].names))
    if on_gpu:
        title = f"Mask routing in {modules}: {per_call} host syncs per call"
        consequence = (
            f"Each waits for the GPU to finish all queued work; together the sync ops held "
            f"the host {format_time(sync_ns)}."
        )
        method = (
            "Host time of the sync ops (nonzero, is_nonzero, item, masked_select) that "
            "gather/scatter routing does without, less the GPU idle inside them that the "
            "sync-stall finding claims: the host's wait is measured, what the GPU gets back is "
            "not."
        )
    else:
        title = (
            f"Mask routing in {modules}: {per_call} ops per call that force a host sync "
            "on a GPU (CPU trace)"
        )
        consequence = (
            "This trace ran on the CPU, where they cost "
            f"{format_time(sync_ns)} of CPU time; on a GPU each would wait for all queued "
            "kernels and leave the GPU idle until the host launches again."
        )
        method = (
            "CPU time of the sync ops (nonzero, is_nonzero, item, masked_select) that "
            "gather/scatter routing does without; the stall they cause on a GPU is not in this "
            "trace."
        )
    rows = analysis.trace.ops.iloc[np.concatenate([o.rows for o in found])]
    return Hint(
        kind="data-dependent-routing",
        subject=subject,
        title=title,
        basis_ns=wall,
        gain_ns=int(gain),
        gain_method=method,
        confidence="low",
        explanation=(
            f"In {len(found)} call{'s' if len(found) > 1 else ''} of {modules}{line_text(found)}, "
            f"{per_call} ops read a data-dependent value on the host ({', '.join(kinds)}): "
            "`if mask.any()` and indexing by a boolean mask (x[mask], out[mask] = ...) need "
            f"the mask's contents before the next op can be launched. {consequence}"
        ),
        numbers={
            "calls": len(found),
            "syncs_per_call": per_call,
            "sync_ns": int(sync_ns),
            "claimed_by_sync_stall_ns": int(claimed),
        },
        fix=FIX,
        code=CODE,
        evidence=(heaviest_events(rows, "ops", rank, "ops that sync on the mask"),),
        rank=rank,
    )
