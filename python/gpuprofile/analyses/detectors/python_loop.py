"""A Python loop inside a module's forward: one block of ops run once per head, per expert, per
chunk, back to back (analyses/code_patterns.py finds it among the call's own ops; the line it
ran from, where the trace has stacks, from Analysis.sources).

Each iteration pays every op's dispatch (and on a GPU its launches) again for a slice of the
work; one batched call over all iterations pays it once. Gain (a rule of thumb, low
confidence): the loop's time, its forward span and the backward engine ops of the grad_fns it
made, times (iterations - 1) / iterations, as if the batched call cost one iteration. That
holds while each op is dominated by its per-call cost (small heads, few tokens per expert); a
loop of large matmuls gives back less. Time another finding claims inside the loop is left out
first, so no time is claimed twice: the host syncs of mask routing (data-dependent-routing),
what fusing an elementwise chain removes (unfused-elementwise), the ops between the two
matmuls of hand-written attention over MIN_ATTENTION_KEYS keys or more (attention-unfused),
the gain the memory- and compute-bound findings claim on the loop's ops (Analysis.far_points),
and on a GPU rank the idle gaps the host's launching caused there (launch-overhead's gaps,
analyses/idle.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from gpuprofile.analyses import idle
from gpuprofile.analyses.code_patterns import Occurrence, groups, line_text, where
from gpuprofile.analyses.comm_overlap import overlap_ns
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.hints import Hint, heaviest_events
from gpuprofile.analyses.roofline import point_members
from gpuprofile.analyses.thresholds import worth_reporting
from gpuprofile.units import format_percent, format_time

BATCH_FIX = (
    "Batch over the loop: give the per-iteration tensors one more dimension and run each op "
    "once over all of them (torch.stack the items, or index them all at once), or map a "
    "per-item function over that dimension with torch.vmap."
)
HEADS_FIX = (
    "Batch over the heads: view the projections as [batch, tokens, heads, head_dim], "
    "transpose to [batch, heads, tokens, head_dim], and run one matmul (or one "
    "F.scaled_dot_product_attention) over every head."
)
EXPERTS_FIX = (
    "Batch over the experts: stack their weights into [experts, in, out] tensors and run "
    "them with torch.bmm (each token gathering its expert's weights), or grouped GEMMs over "
    "tokens sorted by expert.",
    "Route without a per-expert loop: sort tokens by expert (torch.argsort), count them "
    "(torch.bincount), gather (index_select), run the experts batched, and scatter back "
    "(index_add_).",
)
COMPILE_FIX = (
    "Or let the compiler take the loop: torch.compile(model) unrolls it when it traces the "
    "forward and fuses its ops into a few kernels, without Python's dispatch per op."
)
HEADS_CODE = """\
# one matmul over every head instead of a loop over them
q, k, v = (t.view(B, T, heads, D // heads).transpose(1, 2) for t in qkv(x).chunk(3, -1))
out = F.scaled_dot_product_attention(q, k, v)            # [B, heads, T, D // heads]
out = out.transpose(1, 2).reshape(B, T, D)
"""
EXPERTS_CODE = """\
# every expert at once: each token gathers its expert's weights, one bmm runs them all
idx = router(x).argmax(-1)                               # [N]
h = torch.bmm(x.unsqueeze(1), w_up[idx]).squeeze(1) + b_up[idx]
y = torch.bmm(F.gelu(h).unsqueeze(1), w_down[idx]).squeeze(1) + b_down[idx]
# or, with many tokens per expert: order = idx.argsort(); counts = idx.bincount(minlength=E)
# run each expert's contiguous slice of x[order] (grouped GEMM), then out.index_add_(0, order, y)
"""
GENERIC_CODE = """\
# run the loop body once over a stacked batch instead of once per item
batched = torch.vmap(body)(torch.stack(items))
# or compile the module: the loop is traced and its ops fused
model = torch.compile(model)
"""


def detect(analysis: Analysis) -> list[Hint]:
    patterns = analysis.code_patterns
    hints = []
    far: dict[int, _FarOps | None] = {}  # per rank, read once for all its loops
    for subject, found in groups(analysis.modules, patterns.loops):
        rank = found[0].rank
        for o in found:
            if o.rank not in far:
                far[o.rank] = _far_ops(analysis, o.rank)
        claims = [_claimed(analysis, o, far[o.rank]) for o in found]
        claimed = sum(claims)
        loop_ns = sum(o.time_ns for o in found)
        gain = sum(
            max(o.time_ns - c, 0) * (o.repeats - 1) // o.repeats
            for o, c in zip(found, claims, strict=True)
        )
        wall = analysis.wall_ns(rank)
        if worth_reporting("python-loop", gain, wall):
            hints.append(_hint(analysis, subject, found, loop_ns, claimed, gain, wall))
    return hints


def _claimed(analysis: Analysis, loop: Occurrence, far: _FarOps | None) -> int:
    """Time other findings claim inside the loop's window on its rank."""
    patterns = analysis.code_patterns

    def inside(o: Occurrence) -> bool:
        return o.rank == loop.rank and loop.start_ns <= o.start_ns and o.end_ns <= loop.end_ns

    claimed = sum(o.removable_ns for o in patterns.chains if inside(o))
    # The routing's syncs that ran inside the loop (a call may sync outside it too).
    for o in patterns.routings:
        if o.rank == loop.rank:
            start, end = (np.array([w[i] for w in o.windows], np.int64) for i in (0, 1))
            claimed += overlap_ns(start, end, *_window(loop))
    claimed += loop.attention_ns
    claimed += _far_point_claims(far, loop)
    if loop.on_gpu:
        gaps = analysis.idle_gaps
        mine = gaps[(gaps["rank"] == loop.rank) & (gaps["cause"] == idle.HOST_LAUNCH_BOUND)]
        start = mine["start_ns"].to_numpy(np.int64)
        claimed += overlap_ns(start, mine["end_ns"].to_numpy(np.int64), *_window(loop))
    return int(claimed)


def _window(loop: Occurrence) -> tuple[np.ndarray, np.ndarray]:
    return np.array([loop.start_ns], np.int64), np.array([loop.end_ns], np.int64)


@dataclass(frozen=True)
class _FarOps:
    """A rank's op-level far roofline points (what the memory- and compute-bound findings
    claim): each member op's start, its time in its point, and its point's position in
    ``share``, each point's gain per ns of its time."""

    start: np.ndarray
    time_ns: np.ndarray
    point: np.ndarray
    share: list[float]


def _far_ops(analysis: Analysis, rank: int) -> _FarOps | None:
    far = analysis.far_points
    far = far[(far["rank"] == rank) & (far["gain_ns"] > 0)]
    if far.empty:
        return None
    share = dict(zip(far["key"], (far["gain_ns"] / far["known_time_ns"].clip(lower=1)).tolist()))
    start = analysis.trace.ops["start_ns"].to_numpy(np.int64)
    starts: list[np.ndarray] = []
    times: list[np.ndarray] = []
    points: list[np.ndarray] = []
    shares: list[float] = []
    for key, found in point_members(analysis.roofline_members, set(share)).items():
        if found.table != "ops":
            continue
        rows = analysis.id_index("ops").get_indexer(pd.Index(found.ids))
        starts.append(start[rows[rows >= 0]])
        times.append(found.time_ns[rows >= 0])
        points.append(np.full(int((rows >= 0).sum()), len(shares)))
        shares.append(share[key])
    if not shares:
        return None
    return _FarOps(np.concatenate(starts), np.concatenate(times), np.concatenate(points), shares)


def _far_point_claims(far: _FarOps | None, loop: Occurrence) -> int:
    """What the memory- and compute-bound findings claim of the ops that ran in the loop's
    window: each member op its point's gain in proportion to its time."""
    if far is None:
        return 0
    inside = (far.start >= loop.start_ns) & (far.start < loop.end_ns)
    # Whole ns per point: float64 sums exact below 2**53, as the int sums they replace.
    time_ns = np.bincount(far.point[inside], far.time_ns[inside], minlength=len(far.share))
    claimed = 0.0
    for total, share in zip(time_ns.tolist(), far.share, strict=True):
        claimed += total * share
    return int(claimed)


def _backward_text(found: list[Occurrence]) -> str:
    back = sum(o.backward_ns for o in found)
    return f" ({format_time(back)} of it in their backward)" if back else ""


def _hint(
    analysis: Analysis,
    subject: str,
    found: list[Occurrence],
    loop_ns: int,
    claimed: int,
    gain: int,
    wall: int,
) -> Hint:
    rank = found[0].rank
    block = found[0].names
    iterations = sorted({o.repeats for o in found})
    counted = f"{iterations[0]}" if len(iterations) == 1 else f"{iterations[0]}-{iterations[-1]}"
    modules = where(analysis.modules, found)
    calls = f"{len(found)} calls" if len(found) > 1 else "1 call"
    routed = any("nn.Module" in n for n in block) and any("index" in n for n in block)
    fix, code = (
        ((HEADS_FIX, COMPILE_FIX), HEADS_CODE)
        if any("softmax" in n for n in block)
        else ((*EXPERTS_FIX, COMPILE_FIX), EXPERTS_CODE)
        if routed
        else ((BATCH_FIX, COMPILE_FIX), GENERIC_CODE)
    )
    claimed_text = (
        f" Of it, {format_time(claimed)} is claimed by other findings in the same window "
        "(mask routing's syncs, fusible elementwise chains, unfused attention, launch gaps) "
        "and left to them."
        if claimed
        else ""
    )
    rows = analysis.trace.ops.iloc[np.concatenate([o.rows for o in found])]
    # The loop's own ops: the module calls it makes (each expert) own their time elsewhere,
    # and the finding is the looping module's.
    rows = rows[~rows["id"].isin(analysis.modules.calls["op"])]
    return Hint(
        kind="python-loop",
        subject=subject,
        title=f"Python loop of {counted} iterations in {modules} ({calls})",
        basis_ns=wall,
        gain_ns=int(gain),
        gain_method=(
            "The loop's host time (its forward ops' span and the backward engine ops of "
            "the grad_fns they made) times (iterations - 1) / iterations, less the time other "
            "findings claim inside it: a rule of thumb that takes one batched call to cost "
            "about one iteration, as it does while per-op overhead dominates."
        ),
        confidence="low",
        explanation=(
            f"In {modules}, the same {len(block)} ops ({', '.join(block)}) ran {counted} times "
            f"back to back{line_text(found)}, in {calls}: a Python loop that dispatches every "
            "op once per iteration (per head, per expert) for a slice of the work. The loops "
            f"took {format_time(loop_ns)}{_backward_text(found)}, "
            f"{format_percent(100.0 * loop_ns / wall if wall else 0.0, 1)} of the rank's "
            f"wall time.{claimed_text}"
        ),
        numbers={
            "iterations": max(iterations),
            "ops_per_iteration": len(block),
            "calls": len(found),
            "loop_ns": int(loop_ns),
            "claimed_by_other_findings_ns": int(claimed),
        },
        fix=fix,
        code=code,
        evidence=(heaviest_events(rows, "ops", rank, "the loop's ops, heaviest first"),),
        rank=rank,
    )
