"""Patterns of hand-written model code inside nn.Module calls (issue 25): Python loops, boolean
mask routing, and chains of elementwise ops that a library op or a compiler would fuse.

Each module call (Analysis.modules.calls) is read as the sequence of its *items*: the cpu_ops
and module calls whose nearest enclosing cpu_op or module call is the call itself, in start
order (the ops its forward's own lines ran; torch's python_function frames between them are
looked through). A nested module call is one item, named by its class, so the per-expert
calls of a loop over experts read alike.

- A loop: a run of items that repeats one block of ops MIN_LOOP_ITERATIONS times or more back
  to back (and, where the trace has stacks, from the same lines). A block of module calls
  alone is a stack of layers (nn.Sequential, a loop over ``self.layers``), each fed the
  previous one's output, which no batching removes, and a block of views alone
  (``x[:, 0], x[:, 1], ...``: slices, reshapes) moves no data: a loop needs an op of the
  call's own code that does work in its block.
- Mask routing: items that force a host sync (they are or hold ``aten::nonzero``,
  ``aten::is_nonzero`` / ``aten::item`` / ``aten::_local_scalar_dense`` or
  ``aten::masked_select``), MIN_ROUTING_SYNCS or more in one call, at least one of them
  indexing by a mask (boolean ``x[mask]`` and ``out[mask] = ...`` run ``aten::nonzero``
  inside ``aten::index`` / ``aten::index_put_``). A loop of ``.item()`` calls alone is the
  sync-stall detector's.
- Elementwise chains: MIN_CHAIN_OPS or more consecutive items that are elementwise ops or
  row reductions (``x.pow(2).mean(-1)``), with at least one that marks a norm or an
  activation (rsqrt, sqrt, pow, mean, var, sigmoid, tanh, erf, exp, reciprocal).

Time: the host time of the ops, or on a rank with kernels, the time of the kernels an op and
the ops inside it launched. The three detectors that report these (python_loop,
mask_routing, elementwise_chain) read them here, so the loop's finding can leave out the time
the other two claim inside it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from gpuprofile.analyses import recorded
from gpuprofile.analyses.frames import SourceLine
from gpuprofile.analyses.lookups import innermost_everywhere, innermost_with
from gpuprofile.analyses.names import category_texts, codes, one_of, strings
from gpuprofile.analyses.pattern_times import Backward, subtree_kernel_ns
from gpuprofile.analyses.thresholds import (
    MIN_ATTENTION_KEYS,
    MIN_CHAIN_OPS,
    MIN_LOOP_ITERATIONS,
    MIN_ROUTING_SYNCS,
)

if TYPE_CHECKING:
    from gpuprofile.analyses.frames import Sources
    from gpuprofile.analyses.lookups import Lookups
    from gpuprofile.analyses.modules import Modules

ELEMENTWISE = frozenset(
    f"aten::{name}{suffix}"
    for name in (
        "add",
        "sub",
        "mul",
        "div",
        "pow",
        "rsqrt",
        "sqrt",
        "exp",
        "log",
        "neg",
        "reciprocal",
        "square",
        "abs",
        "clamp",
        "clamp_min",
        "clamp_max",
        "maximum",
        "minimum",
        "sigmoid",
        "tanh",
        "erf",
        "mean",
        "var",
        "sum",
        "amax",
        "rsub",
        "where",
    )
    for suffix in ("", "_")
)
# A chain holds one of these, or it is arithmetic (a residual add, a scaling) with nothing to
# fuse into a library op.
MARKERS = frozenset(
    f"aten::{name}{suffix}"
    for name in (
        "pow",
        "rsqrt",
        "sqrt",
        "mean",
        "var",
        "sigmoid",
        "tanh",
        "erf",
        "exp",
        "reciprocal",
    )
    for suffix in ("", "_")
)
SYNC_LEAVES = frozenset(
    ("aten::nonzero", "aten::is_nonzero", "aten::item", "aten::_local_scalar_dense",
     "aten::masked_select")
)  # fmt: skip
# The most items one iteration of a loop is looked for with: a per-head or per-expert body runs
# a few dozen ops, and the search costs this many passes over a call's items.
MAX_LOOP_PERIOD = 64
# Hand-written attention as the attention-unfused finding reads it (detectors/attention.py).
MATMULS = frozenset(("aten::matmul", "aten::bmm", "aten::baddbmm"))
SOFTMAXES = frozenset(("aten::softmax", "aten::_softmax", "aten::_safe_softmax"))
# Ops that make a view of a tensor (or split one into views): no work to batch.
VIEWS = frozenset(
    f"aten::{name}"
    for name in (
        "slice", "select", "view", "reshape", "transpose", "permute", "expand", "unsqueeze",
        "squeeze", "as_strided", "t", "chunk", "split", "unbind", "narrow", "flatten",
        "_unsafe_view", "alias", "detach", "contiguous",
    )
)  # fmt: skip
MASK_INDEXING = frozenset(
    ("aten::index", "aten::index_put_", "aten::masked_select", "aten::nonzero")
)


@dataclass(frozen=True)
class Occurrence:
    """One pattern in one module call."""

    rank: int
    module: int  # index into Analysis.modules.paths
    call: int  # the call's ops row
    rows: np.ndarray  # the ops rows of the pattern (its items), in start order
    start_ns: int
    end_ns: int
    names: tuple[str, ...]  # the loop's block, the chain's ops, the routing's sync items
    repeats: int  # a loop's iterations; 1 otherwise
    time_ns: int  # host span and backward host time (loop), sync time (routing), ops' (chain)
    removable_ns: int  # what the fix removes, before other findings' claims
    on_gpu: bool
    line: SourceLine | None = None
    backward_ns: int = 0  # of time_ns: the backward engine ops of the grad_fns it made
    # A routing's host syncs: the [start, end) of each outermost sync op, in ns.
    windows: tuple[tuple[int, int], ...] = ()
    # A loop's: the time of its ops between the two matmuls around each softmax of at least
    # MIN_ATTENTION_KEYS keys, which the attention-unfused finding claims.
    attention_ns: int = 0


@dataclass(frozen=True)
class CodePatterns:
    loops: tuple[Occurrence, ...]
    routings: tuple[Occurrence, ...]
    chains: tuple[Occurrence, ...]


def code_patterns(
    analysis: Lookups, modules: Modules, sources: Sources, roof_ns: np.ndarray | None = None
) -> CodePatterns:
    """Every loop, mask routing and elementwise chain in the trace's module calls
    (Analysis.code_patterns; modules and sources: Analysis.modules and .sources; roof_ns: per
    ops row, the time its bytes take at the achievable share of DRAM bandwidth, where the
    roofs are known: a chain's ops count up to it, the memory-bound finding beyond it)."""
    if modules.calls.empty:
        return CodePatterns((), (), ())
    facts = _Facts(analysis, modules, sources, roof_ns)
    rows = np.flatnonzero(facts.item & (facts.owner >= 0))
    rows = rows[np.lexsort((facts.start[rows], facts.owner[rows]))]
    bounds = np.flatnonzero(np.r_[True, facts.owner[rows][1:] != facts.owner[rows][:-1], True])
    loops: list[Occurrence] = []
    routings: list[Occurrence] = []
    chains: list[Occurrence] = []
    runs = _chains(facts.fusible[rows], facts.marker[rows], bounds)
    calls = _InOrder(facts, rows)
    looping = _may_loop(calls.loop_key, bounds)
    for k, (lo, hi) in enumerate(zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)):
        syncs = calls.syncs_before[hi] - calls.syncs_before[lo]
        # Most calls hold a few items and no pattern: their reading is skipped, not done.
        if looping[k] or syncs >= MIN_ROUTING_SYNCS or lo in runs:
            facts.read_call(calls, lo, hi, runs.get(lo, []), loops, routings, chains)
    return CodePatterns(tuple(loops), tuple(routings), tuple(chains))


class _Facts:
    """The per-row arrays the patterns are read from, computed once per trace."""

    def __init__(
        self, analysis: Lookups, modules: Modules, sources: Sources, roof_ns: np.ndarray | None
    ) -> None:
        ops = analysis.trace.ops
        parent = analysis.op_parents
        call_rows = analysis.id_index("ops").get_indexer(pd.Index(modules.calls["op"].to_numpy()))
        self.is_call = np.zeros(len(ops), bool)
        self.is_call[call_rows] = True
        self.module_of_call = np.full(len(ops), -1, np.int64)
        self.module_of_call[call_rows] = modules.calls["module"].to_numpy()
        self.item = self.is_call | (ops["category"] == "cpu_op").to_numpy()
        nearest = innermost_everywhere(self.item, parent, ops["depth"].to_numpy())
        up = np.where(parent >= 0, nearest[np.maximum(parent, 0)], -1)
        self.owner = np.where((up >= 0) & self.is_call[np.maximum(up, 0)], up, -1)
        self.names = strings(ops["name"])
        # Once per distinct name, for every row: per call, np.isin on object arrays costs more.
        self.is_view = one_of(ops["name"], VIEWS)
        self.labels = self.names.copy()
        types = np.array([*modules.types, ""], object)
        self.labels[call_rows] = [
            f"nn.Module ({t or '?'})" for t in types[self.module_of_call[call_rows]]
        ]
        self.start = ops["start_ns"].to_numpy(np.int64)
        self.end = self.start + ops["dur_ns"].to_numpy(np.int64)
        self.rank = ops["rank"].to_numpy()
        self.input_dims = ops["input_dims"].to_numpy()
        self.kernel_ns = subtree_kernel_ns(analysis, parent)
        self.gpu_ranks = set(analysis.trace.kernels["rank"].unique().tolist())
        self.syncing, self.leaves, self.holders = _syncing_items(
            one_of(ops["name"], SYNC_LEAVES), parent, up, self.owner, self.end - self.start
        )
        self.source = sources.op_source
        # Per row, a code for what a loop compares (its label and its line: a loop's
        # iterations run the same lines, where ops written out one after another do not), and
        # what a chain is made of: worked out once, not per call.
        label_code = _label_codes(ops["name"], call_rows, self.labels[call_rows])
        self.loop_key = label_code * (len(sources.lines) + 1) + (self.source + 1)
        self.fusible = one_of(ops["name"], ELEMENTWISE)
        self.marker = one_of(ops["name"], MARKERS)
        self.lines = sources.lines
        host = self.end - self.start
        self.roof_ns = roof_ns if roof_ns is not None else np.full(len(ops), np.inf)
        self.backward = Backward(analysis, modules, self.kernel_ns if self.gpu_ranks else host)

    def read_call(
        self,
        calls: _InOrder,
        lo: int,
        hi: int,
        chain_runs: list[np.ndarray],
        loops: list[Occurrence],
        routings: list[Occurrence],
        chains: list[Occurrence],
    ) -> None:
        """The patterns among one call's items (calls.rows[lo:hi], in start order; chain_runs:
        the positions among them of each elementwise chain, _chains')."""
        mine = calls.rows[lo:hi]
        call = int(self.owner[mine[0]])
        rank = int(self.rank[call])
        on_gpu = rank in self.gpu_ranks
        own_time = (calls.kernel_ns if on_gpu else calls.host_ns)[lo:hi]
        sequence = calls.labels[lo:hi]
        for first, period, repeats in tandem_repeats(calls.loop_key[lo:hi], calls.idle[lo:hi]):
            at = mine[first : first + period * repeats]
            # Host time on any rank: the loop costs its dispatches, forward and backward.
            back = int(self.backward.times(rank, at, on_gpu=False).sum())
            span = int(self.end[at].max() - self.start[at].min()) + back
            block = tuple(sequence[first : first + period])
            removable = span * (repeats - 1) // repeats
            found = self.occurrence(call, at, block, repeats, span, removable)
            attention = self.attention_ns(at, own_time[first : first + period * repeats])
            loops.append(replace(found, backward_ns=back, attention_ns=attention))
        syncs = calls.syncs_before[hi] - calls.syncs_before[lo]
        at = mine[calls.syncing[lo:hi]] if syncs >= MIN_ROUTING_SYNCS else mine[:0]
        if len(at) >= MIN_ROUTING_SYNCS and any(self.names[i] in MASK_INDEXING for i in at):
            sync_ns = int(self.syncing[at].sum())
            shown = tuple(str(self.names[i]) for i in at)
            leaves = self.leaves[np.isin(self.holders, at)]
            windows = tuple(
                zip(self.start[leaves].tolist(), self.end[leaves].tolist(), strict=True)
            )
            found = self.occurrence(call, at, shown, 1, sync_ns, sync_ns)
            routings.append(replace(found, windows=windows))
        for positions in chain_runs:
            at = mine[positions]
            # Forward and backward: the fused op runs one kernel each way.
            times = own_time[positions]
            backs = self.backward.times(rank, at, on_gpu)
            # What fusion removes counts each op up to its roof time: the memory-bound finding
            # claims the rest (thresholds.ACHIEVABLE_ROOF_SHARE).
            kept = np.minimum(times, self.roof_ns[at])
            kept_back = self.backward.times(rank, at, on_gpu, self.roof_ns)
            removable = kept.sum() - kept.max()
            removable += kept_back.sum() - kept_back.max() if len(kept_back) else 0
            shown = tuple(str(n) for n in self.names[at])
            total = int(times.sum() + backs.sum())
            found = self.occurrence(call, at, shown, 1, total, int(removable))
            chains.append(replace(found, backward_ns=int(backs.sum())))

    def attention_ns(self, rows: np.ndarray, time: np.ndarray) -> int:
        """The time (per row: time) of the rows between the matmuls around each softmax whose
        scores have MIN_ATTENTION_KEYS keys or more: hand-written attention, whose scaling,
        masking and softmax the attention-unfused finding claims."""
        names = self.names[rows]
        matmul = np.isin(names, list(MATMULS))
        total = 0
        for s in np.flatnonzero(np.isin(names, list(SOFTMAXES))).tolist():
            before, after = np.flatnonzero(matmul[:s]), s + np.flatnonzero(matmul[s:])
            dims = recorded.decoded_list(self.input_dims[rows[s]]) or [None]
            scores = recorded.tensor_shape(dims[0])
            if len(before) and len(after) and scores and scores[-1] >= MIN_ATTENTION_KEYS:
                total += int(time[before[-1] + 1 : after[0]].sum())
        return total

    def occurrence(
        self,
        call: int,
        rows: np.ndarray,
        names: tuple[str, ...],
        repeats: int,
        time_ns: int,
        removable_ns: int,
    ) -> Occurrence:
        rank = int(self.rank[call])
        return Occurrence(
            rank=rank,
            module=int(self.module_of_call[call]),
            call=call,
            rows=rows,
            start_ns=int(self.start[rows].min()),
            end_ns=int(self.end[rows].max()),
            names=names,
            repeats=repeats,
            time_ns=time_ns,
            removable_ns=removable_ns,
            on_gpu=rank in self.gpu_ranks,
            line=_line(self.source[rows], self.lines),
        )


class _InOrder:
    """_Facts' per-row arrays at the module calls' items, in code_patterns' order (by call,
    then start): each call reads a slice of these, not a gather of its own rows (thousands of
    calls, a few items each)."""

    def __init__(self, facts: _Facts, rows: np.ndarray) -> None:
        self.rows = rows
        self.kernel_ns = facts.kernel_ns[rows]
        self.host_ns = facts.end[rows] - facts.start[rows]
        self.labels: list[str] = facts.labels[rows].tolist()
        self.loop_key = facts.loop_key[rows]
        self.idle = facts.is_call[rows] | facts.is_view[rows]
        self.syncing = facts.syncing[rows] > 0
        self.syncs_before: list[int] = np.r_[0, np.cumsum(self.syncing)].tolist()


def _label_codes(names: pd.Series, call_rows: np.ndarray, call_labels: np.ndarray) -> np.ndarray:
    """Per row, a number for its label (equal where two labels are equal): its name's text,
    numbered once per distinct name, or a call's label at call_rows, numbered among the same
    texts. Hashing each row's text instead took 10-20 ms on 160,000 ops."""
    texts = [*category_texts(names).tolist(), None]  # code -1, a missing name, reads None
    number: dict[str | None, int] = {}
    per_text = np.fromiter((number.setdefault(t, len(number)) for t in texts), np.int64, len(texts))
    label_code: np.ndarray = per_text[codes(names)]
    label_code[call_rows] = [number.setdefault(t, len(number)) for t in call_labels.tolist()]
    return label_code


def _may_loop(codes: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Per call (its items codes[bounds[k]:bounds[k + 1]]), whether tandem_repeats could find a
    loop in it: whether some period p has codes[i] == codes[i + p] for 3p items in a row
    within the call, as MIN_LOOP_ITERATIONS repeats of a block need. For all calls at once: a
    few array passes, not thousands of small searches (most calls hold a few items)."""
    calls = len(bounds) - 1
    call = np.repeat(np.arange(calls), np.diff(bounds))
    # First, cheaply: each code of a loop recurs MIN_LOOP_ITERATIONS times in its call.
    order = np.lexsort((codes, call))
    ordered_call, ordered = call[order], codes[order]
    first = np.flatnonzero(
        np.r_[True, (ordered_call[1:] != ordered_call[:-1]) | (ordered[1:] != ordered[:-1])]
    )
    recurring = np.diff(np.r_[first, len(ordered)]) >= MIN_LOOP_ITERATIONS
    out = np.zeros(calls, bool)
    candidates = np.unique(ordered_call[first[recurring]])
    # Then every period at once (_equal_runs, as _best_repeat), a bounded block of items at a time.
    for group in _blocks(candidates, np.diff(bounds)[candidates], _BLOCK_ITEMS):
        items = np.concatenate([np.arange(bounds[k], bounds[k + 1]) for k in group.tolist()])
        out[group[_repeating(codes[items], call[items])]] = True
    return out


# Items _repeating compares at once: its arrays hold MAX_LOOP_PERIOD bytes per item.
_BLOCK_ITEMS = 1 << 15


def _blocks(calls: np.ndarray, sizes: np.ndarray, most: int) -> list[np.ndarray]:
    """calls in runs of consecutive ones, a run ending where the running total of sizes
    crosses a multiple of most: about most items each, a larger call alone."""
    if not len(calls):
        return []
    block = np.cumsum(sizes) // most
    return np.split(calls, np.flatnonzero(np.diff(block)) + 1)


def _repeating(codes: np.ndarray, call: np.ndarray) -> np.ndarray:
    """The distinct calls (call: per item, ascending) in which some period p up to
    MAX_LOOP_PERIOD has 3p items in a row equal to the item p after them, in order."""
    periods, starts, ends = _equal_runs(codes, min(len(codes), MAX_LOOP_PERIOD), call)
    found = np.unique(call[starts[ends - starts >= (MIN_LOOP_ITERATIONS - 1) * periods]])
    return np.searchsorted(np.unique(call), found)


def _equal_runs(
    codes: np.ndarray, top: int, call: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For every period p of 1..top at once, each run of items i with codes[i] == codes[i + p]
    (and, given call, call[i] == call[i + p]), as (p, its first i, its end), by period then
    start. codes are 0 or more: the sentinels past the end equal nothing."""
    n = len(codes)
    windows = np.lib.stride_tricks.sliding_window_view(np.r_[codes, -1 - np.arange(top)], top + 1)
    same = windows[:n, 1:] == windows[:n, :1]
    if call is not None:
        calls = np.lib.stride_tricks.sliding_window_view(np.r_[call, np.full(top, -1)], top + 1)
        same &= calls[:n, 1:] == calls[:n, :1]
    framed = np.zeros((n + 2, top), np.int8)
    framed[1:-1] = same
    edges = np.diff(framed, axis=0).T  # per period: +1 where a run of equal pairs begins
    period_index, starts = np.nonzero(edges == 1)
    ends = np.nonzero(edges == -1)[1]
    return period_index + 1, starts, ends


def tandem_repeats(codes: np.ndarray, idle: np.ndarray) -> list[tuple[int, int, int]]:
    """(first, period, repeats) of each run of one block repeated MIN_LOOP_ITERATIONS times or
    more back to back, the run covering the most items first; runs do not overlap. codes: per
    item, equal where two items are the same; idle: per item, whether it is a module call or a
    view (a block of those alone is no loop)."""
    found: list[tuple[int, int, int]] = []
    segments = [(0, len(codes))]
    while segments:
        lo, hi = segments.pop()
        best = _best_repeat(codes[lo:hi], idle[lo:hi])
        if best is None:
            continue
        first, period, repeats = best
        found.append((lo + first, period, repeats))
        segments += [(lo, lo + first), (lo + first + period * repeats, hi)]
    return sorted(found)


def _best_repeat(codes: np.ndarray, idle: np.ndarray) -> tuple[int, int, int] | None:
    """The run of one block repeated MIN_LOOP_ITERATIONS times or more that covers the most
    items (the shortest period, then the earliest, on a tie); codes are 0 or more."""
    n = len(codes)
    top = min(n // MIN_LOOP_ITERATIONS, MAX_LOOP_PERIOD)
    if top < 1:
        return None
    periods, starts, ends = _equal_runs(codes, top)
    repeats = (ends - starts) // periods + 1
    best: tuple[int, int, int] | None = None
    kept = repeats >= MIN_LOOP_ITERATIONS
    for period, start, count in zip(
        periods[kept].tolist(), starts[kept].tolist(), repeats[kept].tolist(), strict=True
    ):
        if idle[start : start + period].all():
            continue
        if best is None or count * period > best[1] * best[2]:
            best = (start, period, count)
    return best


def _chains(
    fusible: np.ndarray, marker: np.ndarray, bounds: np.ndarray
) -> dict[int, list[np.ndarray]]:
    """Each run of MIN_CHAIN_OPS or more elementwise items holding a marker within one call,
    for all calls at once: {the call's first position: positions of each run within the call}.
    Per item (grouped by call, bounds: where each call's items begin, then the end): fusible,
    whether it is elementwise; marker, whether it is a marker."""
    n = len(fusible)
    new_call = np.zeros(n, bool)
    new_call[bounds[:-1][bounds[:-1] < n]] = True
    # A run begins at an elementwise item after one that is not, or at a call's first item.
    begins = fusible & (new_call | ~np.r_[False, fusible[:-1]])
    at = np.flatnonzero(fusible)
    if not len(at):
        return {}
    run = np.cumsum(begins)[at]
    first = np.flatnonzero(np.r_[True, run[1:] != run[:-1]])
    length = np.diff(np.r_[first, len(at)])
    marked = np.add.reduceat(marker[at].astype(np.int64), first) > 0
    out: dict[int, list[np.ndarray]] = {}
    for i in np.flatnonzero((length >= MIN_CHAIN_OPS) & marked).tolist():
        lo = int(at[first[i]])
        call = int(bounds[np.searchsorted(bounds, lo, side="right") - 1])
        out.setdefault(call, []).append(np.arange(lo, lo + int(length[i])) - call)
    return out


def _syncing_items(
    leaf: np.ndarray, parent: np.ndarray, up: np.ndarray, owner: np.ndarray, dur: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per ops row that is a call's item: the host time of the outermost sync ops it is or
    holds (at least 1 ns when it holds one); 0 for the rest. Then those sync ops' rows and
    the item holding each. up: each row's innermost item strictly above it; owner: the call a
    row is an item of, -1 when it is none's; leaf: per row, whether it is a sync op."""
    rows = np.flatnonzero(leaf)
    out = np.zeros(len(leaf), np.int64)
    if not len(rows):
        return out, rows, rows
    # The outermost leaves only: is_nonzero holds item holds _local_scalar_dense.
    rows = rows[innermost_with(leaf, parent, parent[rows]) < 0]
    # Climb each to the item of a call that holds it (the index op around a nonzero).
    at = rows.copy()
    climbing = np.flatnonzero(owner[at] < 0)
    while len(climbing):
        at[climbing] = up[at[climbing]]
        climbing = climbing[at[climbing] >= 0]
        climbing = climbing[owner[at[climbing]] < 0]
    held = at >= 0
    np.add.at(out, at[held], np.maximum(dur[rows[held]], 1))
    return out, rows[held], at[held]


def _line(source: np.ndarray, lines: tuple[SourceLine, ...]) -> SourceLine | None:
    """The user's line most of the rows ran from (Analysis.sources), None without stacks."""
    known = source[source >= 0]
    if not len(known):
        return None
    return lines[int(np.bincount(known).argmax())]


def groups(modules: Modules, found: tuple[Occurrence, ...]) -> list[tuple[str, list[Occurrence]]]:
    """Occurrences of one pattern in one kind of module on one rank, as (subject, them): the
    per-layer copies of a module (layers.0.norm, layers.1.norm) are one finding. A module is
    known by its class, or by its path when its class is unknown."""
    out: dict[tuple[int, str], list[Occurrence]] = {}
    for o in found:
        kind = modules.types[o.module] or modules.paths[o.module]
        out.setdefault((o.rank, f"{kind}: {' -> '.join(o.names)}"), []).append(o)
    return [(subject, them) for (_rank, subject), them in out.items()]


def where(modules: Modules, found: list[Occurrence], limit: int = 3) -> str:
    """The modules of occurrences in words: "Block.attn (LoopAttention)", or the first few
    paths and how many more."""
    paths = list(dict.fromkeys(modules.paths[o.module] for o in found))
    kind = modules.types[found[0].module]
    shown = ", ".join(paths[:limit]) + (
        f" and {len(paths) - limit} more" if len(paths) > limit else ""
    )
    return f"{shown} ({kind})" if kind else shown


def line_text(found: list[Occurrence]) -> str:
    """ " at cell [5] line 12" for the line most occurrences ran from; "" without stacks."""
    lines = [o.line for o in found if o.line is not None]
    return f" at {max(set(lines), key=lines.count).label}" if lines else ""
