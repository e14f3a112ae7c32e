"""Attention that materializes its L x S score matrix: hand-written, or SDPA on its math path.

Unfused attention is found on each CPU thread as an outermost matmul-family op with inputs
[.., L, d] x [.., d, S], followed by a softmax over [.., L, S], followed by a matmul whose first
input is [.., L, S]. The score matrix is written to memory and read back by every op between
the two matmuls (scaling, masking, softmax, dropout); its size grows as L x S. A fused kernel
(flash or memory-efficient attention) keeps it on chip.

SDPA's math path is aten::_scaled_dot_product_attention_math, or an
aten::scaled_dot_product_attention whose children include no fused kernel (flash, efficient,
cudnn, overrideable, flash_attention_for_cpu). On a CPU build of torch 2.13 SDPA picks
aten::_scaled_dot_product_flash_attention_for_cpu for fp32, bf16 and fp16 inputs, with and
without is_causal, so the math path on a CPU trace is a real fallback too and is flagged there
as well.

Gain (a lower bound): the time of what a fused kernel removes. For unfused attention, the ops
on the thread between the two matmuls; for the math path, the op minus its matmuls. Time is
the kernels those ops launched on a GPU rank, the ops' own durations on a CPU-only rank.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from gpuprofile.analyses import recorded
from gpuprofile.analyses.claims import op_ids_claim
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.hints import MAX_EVIDENCE_EVENTS, Evidence, Hint
from gpuprofile.analyses.lookups import has_ancestor
from gpuprofile.analyses.names import categorical, per_category, strings
from gpuprofile.analyses.names import codes as name_codes
from gpuprofile.analyses.thresholds import MIN_ATTENTION_KEYS, worth_reporting
from gpuprofile.trace.codes import sums_by_key
from gpuprofile.trace.precisions import INPUT_TYPES
from gpuprofile.units import format_bytes, format_time

MATMULS = frozenset(("aten::matmul", "aten::bmm", "aten::baddbmm"))
# What the attention applied to its scores, from the trace's evidence: the fix snippet keeps
# the user's math (is_causal=True only for a causal mask, attn_mask for another, none if none).
NO_MASK, MASKED, CAUSAL = "none", "masked", "causal"
# Ops that apply a mask to the scores (an input shaped [.., L, S] besides the scores).
MASK_OPS = frozenset(
    ("aten::masked_fill", "aten::masked_fill_", "aten::where", "aten::add", "aten::add_")
)
# Ops that build a causal (triangular) mask; torch.triu/tril, as HF and nanoGPT models do.
TRIANGLE_OPS = frozenset(("aten::triu", "aten::tril", "aten::triu_", "aten::tril_"))
SOFTMAXES = frozenset(("aten::softmax", "aten::_softmax", "aten::_safe_softmax"))
FUSED_MARKERS = ("flash", "efficient", "cudnn", "overrideable", "fused")

FIX = (
    "Replace the hand-written q @ k.transpose(-2, -1) -> softmax -> @ v with "
    "torch.nn.functional.scaled_dot_product_attention (the call below keeps your mask: "
    "is_causal=True only where your code masked causally): it dispatches to flash or "
    "memory-efficient attention, which never writes the L x S scores to memory.",
    "Pin the fused backends to see why one is refused: `with torch.nn.attention.sdpa_kernel("
    "[SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]):` raises with the reason "
    "instead of falling back.",
    'Hugging Face models: load with attn_implementation="sdpa" (or "flash_attention_2").',
)
MATH_FIX = (
    "SDPA fell back to its math path. Flash attention needs fp16/bf16 inputs (run under "
    'torch.autocast("cuda", dtype=torch.bfloat16)), a head dim that is a multiple of 8 and '
    "at most 256, and no explicit float mask (use is_causal=True instead of a causal mask).",
    "Memory-efficient attention accepts an attn_mask and fp32; make q, k, v contiguous in the "
    "last dimension and keep the mask broadcastable rather than materialized per head.",
    "Force the fused backends to get the reason as an error: `with torch.nn.attention."
    "sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]):`.",
)
CODE_HEAD = """\
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]):
    # scale: 1/sqrt(head dim) unless you pass scale=; dropout_p: your attention dropout
"""
# Per mask found, the call that computes what the user's code computed, and why.
SDPA_CALLS = {
    CAUSAL: (
        "F.scaled_dot_product_attention(q, k, v, is_causal=True)",
        "your code masked the scores with a triangular (causal) mask",
    ),
    MASKED: (
        "F.scaled_dot_product_attention(q, k, v, attn_mask=mask)",
        "the mask your code applied: a bool mask keeps True (pass ~mask for a "
        "masked_fill mask), a float mask is added to the scores",
    ),
    NO_MASK: (
        "F.scaled_dot_product_attention(q, k, v)",
        "no mask: your code applied none",
    ),
}


def sdpa_code(masks: list[str]) -> str:
    """The code sketch for attention computations with these masks: one SDPA call per kind of
    mask met, so the snippet never changes the user's math (no is_causal=True for attention
    that had no causal mask)."""
    lines = [CODE_HEAD]
    for mask in (CAUSAL, MASKED, NO_MASK):
        count = masks.count(mask)
        if count:
            call, why = SDPA_CALLS[mask]
            where = f" ({count} of {len(masks)})" if len(set(masks)) > 1 else ""
            lines.append(f"    # {why}{where}\n    out = {call}\n")
    return "".join(lines)


@dataclass(frozen=True)
class Occurrence:
    """One attention computation that materialized its scores."""

    rank: int
    math: bool  # SDPA math path rather than hand-written
    op_ids: tuple[int, ...]  # the ops to show (matmul, softmax, matmul, or the SDPA op)
    start_ns: int
    end_ns: int
    queries: int  # L
    keys: int  # S
    batch: int  # product of the leading dimensions (batch x heads)
    score_bytes: int
    removable_ns: int  # time a fused kernel would not spend
    removable_ids: tuple[int, ...] = ()  # the ops of that time (the finding's claim)
    mask: str = NO_MASK  # what the code applied to its scores: NO_MASK, MASKED or CAUSAL


def detect(analysis: Analysis) -> list[Hint]:
    trace = analysis.trace
    found = occurrences(analysis, analysis.recorded_inputs)
    hints = []
    for rank in trace.ranks:
        for math in (False, True):
            mine = [o for o in found if o.rank == rank and o.math == math]
            gain = sum(o.removable_ns for o in mine)
            if mine and worth_reporting("attention-unfused", gain, analysis.wall_ns(rank)):
                hints.append(_hint(analysis, rank, math, mine))
    return hints


def occurrences(analysis: Analysis, inputs: recorded.RecordedInputs) -> list[Occurrence]:
    trace = analysis.trace
    ops = trace.ops
    cpu = (ops["category"] == "cpu_op").to_numpy()
    if not cpu.any():
        return []
    # Only threads with a softmax or an SDPA call can hold either pattern: skip the rest early.
    relevant = cpu & _matches_name(ops["name"], "relevant")
    thread = analysis.cpu_op_tree.op_thread
    rows = np.flatnonzero(cpu & np.isin(thread, thread[relevant]))
    if not len(rows):
        return []
    # Per thread by (rank, pid, tid), each by start then longest first; ties in trace order.
    start = ops["start_ns"].to_numpy()
    dur = ops["dur_ns"].to_numpy()
    rank, pid, tid = (ops[c].to_numpy()[rows] for c in ("rank", "pid", "tid"))
    rows = rows[np.lexsort((-dur[rows], start[rows], tid, pid, rank))]
    bounds = np.flatnonzero(np.r_[True, np.diff(thread[rows]) != 0, True])
    kernels = trace.kernels
    op_ids, launched_ns = sums_by_key(kernels["op_id"].to_numpy(), kernels["dur_ns"].to_numpy())
    kernel_ns = pd.Series(launched_ns.astype(np.int64), index=op_ids)  # per launching op
    gpu_ranks = set(trace.kernels["rank"].unique().tolist())
    out: list[Occurrence] = []
    position = np.full(len(ops), -1, dtype=np.int64)  # of a row within its thread's rows
    for lo, hi in itertools.pairwise(bounds):
        position[rows[lo:hi]] = np.arange(hi - lo)
        thread_ops = _Thread(analysis, inputs, rows[lo:hi], position)
        position[rows[lo:hi]] = -1
        rank_of = int(ops["rank"].to_numpy()[rows[lo]])
        timing = kernel_ns if rank_of in gpu_ranks else None
        out.extend(thread_ops.unfused(rank_of, timing))
        out.extend(thread_ops.math_sdpa(rank_of, timing))
    return out


# Name tests done once per distinct op name (analyses/names.py).
_NAME_TESTS = {
    "relevant": lambda n: n in SOFTMAXES or "scaled_dot_product" in n,
    "matmul": lambda n: n in MATMULS,
    "softmax": lambda n: n in SOFTMAXES,
    "triangle": lambda n: n in TRIANGLE_OPS,
    "sdpa": lambda n: "scaled_dot_product" in n,
    "sdpa_math_candidate": lambda n: (
        n.endswith("::scaled_dot_product_attention") or "_scaled_dot_product_attention_math" in n
    ),
}


def _matches_name(names: pd.Series, test: str) -> np.ndarray:
    key = f"attention.{test}"
    names = categorical(names)
    return np.asarray(per_category(names, key, _NAME_TESTS[test], bool, False)[name_codes(names)])


class _Thread:
    """The aten ops of one thread, ordered by start, with the lookups the patterns need."""

    def __init__(
        self,
        analysis: Analysis,
        inputs: recorded.RecordedInputs,
        rows: np.ndarray,
        position: np.ndarray,
    ) -> None:
        ops = analysis.trace.ops
        self.ids = ops["id"].to_numpy()[rows]
        self.names = strings(ops["name"], rows=rows)
        self.start = ops["start_ns"].to_numpy(np.int64)[rows]
        self.end = self.start + ops["dur_ns"].to_numpy(np.int64)[rows]
        self.dims, self.types, self.concrete = (
            inputs.rows_of(column, rows) for column in recorded.INPUT_COLUMNS
        )
        # Parents by position among rows (position: of each of them in rows, -1 for other
        # rows); a parent elsewhere (not a cpu_op of the thread) is none.
        parent = analysis.op_parents[rows]
        self.parent = np.where(parent >= 0, position[np.maximum(parent, 0)], -1)
        self.is_matmul = _matches_name(ops["name"], "matmul")[rows]
        self.is_softmax = _matches_name(ops["name"], "softmax")[rows]
        self.outer_matmul = self.is_matmul & ~has_ancestor(self.is_matmul, self.parent)
        self.outer_softmax = self.is_softmax & ~has_ancestor(self.is_softmax, self.parent)
        self.in_sdpa = has_ancestor(_matches_name(ops["name"], "sdpa")[rows], self.parent)
        self.sdpa_candidates = np.flatnonzero(
            _matches_name(ops["name"], "sdpa_math_candidate")[rows]
        )
        # The first triangle (triu/tril) the thread built; the largest int64 when none.
        triangles = self.start[_matches_name(ops["name"], "triangle")[rows]]
        self.first_triangle = int(triangles.min()) if len(triangles) else np.iinfo(np.int64).max
        self._kernel_ns: np.ndarray | None = None

    def inside(self, start: int, end: int) -> np.ndarray:
        """Positions of ops that start at or after start and end by end."""
        lo, hi = np.searchsorted(self.start, [start, end], side="left")
        positions = np.arange(lo, hi)
        return np.asarray(positions[self.end[positions] <= end])

    def time_of(self, positions: np.ndarray, kernel_ns: pd.Series | None) -> int:
        """GPU time of the kernels these ops launched, or (CPU rank) their outermost durations."""
        if not len(positions):
            return 0
        if kernel_ns is not None:
            if self._kernel_ns is None:  # once per thread, not once per call
                self._kernel_ns = kernel_ns.reindex(self.ids).fillna(0).to_numpy()
            return int(self._kernel_ns[positions].sum())
        chosen = np.zeros(len(self.ids), dtype=bool)
        chosen[positions] = True
        parents = self.parent[positions]
        outermost = positions[~((parents >= 0) & chosen[np.maximum(parents, 0)])]
        return int((self.end[outermost] - self.start[outermost]).sum())

    def unfused(self, rank: int, kernel_ns: pd.Series | None) -> list[Occurrence]:
        out: list[Occurrence] = []
        matmuls = np.flatnonzero(self.outer_matmul)
        if not len(matmuls):
            return out
        for s in np.flatnonzero(self.outer_softmax & ~self.in_sdpa):
            scores = _tensor_dims(self.dims[s], 0)
            if scores is None or len(scores) < 3 or scores[-1] < MIN_ATTENTION_KEYS:
                continue
            queries, keys = scores[-2], scores[-1]
            before = matmuls[self.end[matmuls] <= self.start[s]]
            after = matmuls[self.start[matmuls] >= self.end[s]]
            if not len(before) or not len(after):
                continue
            first, second = int(before[-1]), int(after[0])
            if not (
                _produces(self.names[first], self.dims[first], queries, keys)
                and _consumes(self.names[second], self.dims[second], queries, keys)
            ):
                continue
            between = self.inside(int(self.end[first]), int(self.start[second]))
            occurrence = self._occurrence(
                rank,
                False,
                (first, int(s), second),
                scores,
                self.types[s],
                self.time_of(between, kernel_ns),
                between,
            )
            mask = self.mask_between(between, queries, keys, int(self.start[second]))
            out.append(replace(occurrence, mask=mask))
        return out

    def math_sdpa(self, rank: int, kernel_ns: pd.Series | None) -> list[Occurrence]:
        out: list[Occurrence] = []
        # Only SDPA ops are candidates: look at their children alone, not at every op's.
        parents = self.parent
        for p in self.sdpa_candidates.tolist():
            name = self.names[p]
            children = np.flatnonzero(parents == p)
            # An SDPA with a fused child is fine; one with a _math child is flagged at the child.
            inline_math = (
                name.endswith("::scaled_dot_product_attention")
                and len(children) > 0
                and not any(_is_fused_or_math(self.names[c]) for c in children)
            )
            if not (inline_math or "_scaled_dot_product_attention_math" in name):
                continue
            q, k = _tensor_dims(self.dims[p], 0), _tensor_dims(self.dims[p], 1)
            if q is None or k is None or len(q) < 2 or len(k) < 2 or k[-2] < MIN_ATTENTION_KEYS:
                continue
            inner = self.inside(int(self.start[p]), int(self.end[p]))
            inner = inner[inner != p]
            matmul_parts = [
                self.inside(int(self.start[m]), int(self.end[m]))
                for m in inner
                if self.outer_matmul[m]
            ]
            rest = np.setdiff1d(inner, np.concatenate(matmul_parts)) if matmul_parts else inner
            scores = [*q[:-2], q[-2], k[-2]]
            removable = self.time_of(rest, kernel_ns)
            occurrence = self._occurrence(rank, True, (p,), scores, self.types[p], removable, rest)
            out.append(replace(occurrence, mask=self.sdpa_mask(p, inner)))
        return out

    def mask_between(self, between: np.ndarray, queries: int, keys: int, before: int) -> str:
        """What hand-written attention did to its scores between the matmuls: CAUSAL when a
        mask op took a square [.., L, L] mask and the thread built a triangle (triu/tril)
        before the second matmul, or a triangle was built right there; MASKED for another
        mask; NO_MASK when no op applied one."""
        names = [self.names[p] for p in between.tolist()]
        if any(n in TRIANGLE_OPS for n in names):
            return CAUSAL
        mask_ops = [p for n, p in zip(names, between.tolist()) if n in MASK_OPS]
        # The scores end in [L, S]; a mask beside them ends in S (padding: [B, 1, 1, S]) or
        # in [L, S] (a full mask, causal when square and built as a triangle).
        if not any(_inputs_ending(self.dims[p], [keys]) >= 2 for p in mask_ops):
            return NO_MASK
        square = queries == keys and any(
            _inputs_ending(self.dims[p], [queries, keys]) >= 2 for p in mask_ops
        )
        return CAUSAL if square and self.first_triangle < before else MASKED

    def sdpa_mask(self, position: int, inner: np.ndarray) -> str:
        """An SDPA call's own arguments: is_causal (the 6th, in Concrete Inputs), attn_mask
        (the 4th input's dims), or a triangle built inside it (the math path's causal mask)."""
        concrete = self.concrete[position] or []
        if len(concrete) > 5 and str(concrete[5]) == "True":
            return CAUSAL
        if any(self.names[p] in TRIANGLE_OPS for p in inner.tolist()):
            return CAUSAL
        return MASKED if _tensor_dims(self.dims[position], 3) is not None else NO_MASK

    def _occurrence(
        self,
        rank: int,
        math: bool,
        positions: tuple[int, ...],
        scores: list[int],
        types: list[object] | None,
        removable: int,
        removable_positions: np.ndarray,
    ) -> Occurrence:
        batch = int(np.prod(scores[:-2])) if len(scores) > 2 else 1
        # A score dtype the table does not size is taken for fp32.
        element = INPUT_TYPES.get(_first_type(types), ("fp32", 4))[1]
        return Occurrence(
            rank=rank,
            math=math,
            op_ids=tuple(int(self.ids[p]) for p in positions),
            start_ns=int(self.start[positions[0]]),
            end_ns=int(self.end[positions[-1]]),
            queries=int(scores[-2]),
            keys=int(scores[-1]),
            batch=batch,
            score_bytes=batch * int(scores[-2]) * int(scores[-1]) * element,
            removable_ns=removable,
            removable_ids=tuple(int(i) for i in self.ids[removable_positions]),
        )


def _hint(analysis: Analysis, rank: int, math: bool, found: list[Occurrence]) -> Hint:
    gain = sum(o.removable_ns for o in found)
    wall = analysis.wall_ns(rank)
    biggest = max(found, key=lambda o: o.score_bytes)
    lengths = sorted({(o.queries, o.keys) for o in found}, reverse=True)
    length_text = ", ".join(f"{q}x{k}" if q != k else f"L={q}" for q, k in lengths[:4])
    scores = (
        f"{biggest.batch}x{biggest.queries}x{biggest.keys} scores = "
        f"{format_bytes(biggest.score_bytes)}"
    )
    what = (
        "scaled_dot_product_attention ran its math path"
        if math
        else "attention computed as matmul -> softmax -> matmul"
    )
    removed = (
        "the math path's non-matmul ops (scaling, masking, softmax, dropout)"
        if math
        else "the ops between the two matmuls (scaling, masking, softmax, dropout)"
    )
    heaviest = sorted(found, key=lambda o: o.removable_ns, reverse=True)
    ids = tuple(i for o in heaviest for i in o.op_ids)[:MAX_EVIDENCE_EVENTS]
    windows = tuple((o.start_ns, o.end_ns) for o in heaviest[:MAX_EVIDENCE_EVENTS])
    device = "GPU kernel" if len(analysis.rank_rows("kernels", rank)) else "CPU"
    return Hint(
        kind="attention-unfused",
        subject="SDPA math path" if math else "hand-written attention",
        title=(
            f"SDPA math path at {length_text} (x{len(found)})"
            if math
            else f"Unfused attention at {length_text} (x{len(found)})"
        ),
        basis_ns=wall,
        gain_ns=int(gain),
        claim=op_ids_claim(analysis, rank, (i for o in found for i in o.removable_ids)),
        gain_method=(
            f"{device} time of {removed}: a fused attention kernel keeps the score matrix on "
            "chip, so they disappear. The matmuls' own savings are not counted: a lower bound."
        ),
        confidence="medium",
        explanation=(
            f"{'Once' if len(found) == 1 else f'{len(found)} times'}, {what} over a "
            "materialized score matrix (sequence lengths "
            f"{length_text}; the largest holds {scores}). Its memory and time grow as L^2: "
            f"at twice the length it needs four times the bytes. {removed.capitalize()} took "
            f"{format_time(gain)} of {device} time."
        ),
        numbers={
            "occurrences": len(found),
            "max_queries": max(o.queries for o in found),
            "max_keys": max(o.keys for o in found),
            "max_score_bytes": max(o.score_bytes for o in found),
            "total_score_bytes": sum(o.score_bytes for o in found),
            "removable_ns": int(gain),
            "causal_masked": sum(o.mask == CAUSAL for o in found),
            "other_masked": sum(o.mask == MASKED for o in found),
            "unmasked": sum(o.mask == NO_MASK for o in found),
        },
        fix=MATH_FIX + FIX[1:] if math else FIX,
        code=sdpa_code([o.mask for o in found]),
        evidence=(Evidence("ops", rank, ids, windows, "attention ops, costliest first"),),
        rank=rank,
    )


def _inputs_ending(dims: list[object] | None, tail: list[int]) -> int:
    """How many tensor inputs (of two dims or more) end in these dims."""
    return sum(
        1 for d in dims or [] if isinstance(d, list) and len(d) >= 2 and d[-len(tail) :] == tail
    )


def _tensor_dims(dims: list[object] | None, index: int) -> list[int] | None:
    """The dims of the index-th input, when it is a tensor with recorded dims."""
    if dims is None or len(dims) <= index:
        return None
    tensor = recorded.tensor_shape(dims[index])
    return list(tensor) if tensor else None


def _matmul_operands(name: str, dims: list[object] | None) -> tuple[list[int], list[int]] | None:
    first = 1 if name == "aten::baddbmm" else 0
    a, b = _tensor_dims(dims, first), _tensor_dims(dims, first + 1)
    if a is None or b is None or len(a) < 2 or len(b) < 2:
        return None
    return a, b


def _produces(name: str, dims: list[object] | None, queries: int, keys: int) -> bool:
    """[.., L, d] x [.., d, S] -> [.., L, S]."""
    operands = _matmul_operands(name, dims)
    if operands is None:
        return False
    a, b = operands
    return a[-2] == queries and b[-1] == keys and a[-1] == b[-2]


def _consumes(name: str, dims: list[object] | None, queries: int, keys: int) -> bool:
    """[.., L, S] x [.., S, d]."""
    operands = _matmul_operands(name, dims)
    if operands is None:
        return False
    a, b = operands
    return a[-2] == queries and a[-1] == keys and b[-2] == keys


def _is_fused_or_math(name: str) -> bool:
    lowered = name.lower()
    return any(m in lowered for m in FUSED_MARKERS) or "attention_math" in lowered


def _first_type(types: list[object] | None) -> str:
    return types[0] if types and isinstance(types[0], str) else ""
