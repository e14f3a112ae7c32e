"""Each module's share of a rank (the report's module rows) and the rank's wall split by phase,
from Analysis.modules (analyses/modules.py).

A module's figures include the modules it calls: forward_ns is the union of its calls (a call
nested in a call of the same path counts once), backward_ns the union of the backward engine
ops attributed to it or to a module below it, gpu_ns the kernels its forward and backward ops
launched, flops its ops' FLOPs counted once each (at the outermost op with a count, as the
roofline counts them: op_costs.counted). self_ns is forward_ns less its callees' calls.
"Below" is the module tree of modules.parents (paths' "." prefixes).

The "(no module)" row holds the work outside every module: backward engine ops whose forward
op ran outside every module (a loss, AccumulateGrad), the kernels and FLOPs of ops outside
every module (the optimizer's included); its forward_ns and self_ns are 0 (the rank's phases
say how long the host spent outside modules).

Memory (with allocator events): alloc_bytes is the bytes allocated on the rank's main device
(the GPU with the most allocator events, else the host) while the module's calls and backward
ops ran, each allocation once; peak_bytes the most the allocated total rose during one of
them above its value when it began.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from gpuprofile.analyses.hints import Evidence
from gpuprofile.analyses.module_spans import memory_by_module, union, union_by, with_ancestors
from gpuprofile.analyses.modules import (
    BACKWARD,
    FORWARD,
    NO_MODULE,
    OPTIMIZER,
    Modules,
    chain_depth,
)
from gpuprofile.analyses.roofline import compute_roof
from gpuprofile.analyses.steps import is_step

if TYPE_CHECKING:
    from gpuprofile.analyses.context import Analysis

# Calls a row's evidence names (its heaviest): a module called 10^4 times would otherwise
# carry the evidence cap (50 events) on each of hundreds of rows of the report.
MODULE_EVIDENCE_CALLS = 10


@dataclass(frozen=True)
class ModuleRow:
    """report.schema.ModuleRow, as the analysis gives it."""

    path: str
    type: str
    depth: int
    calls: int
    forward_ns: int
    backward_ns: int
    self_ns: int
    gpu_ns: int
    flops: float | None
    achieved_flops_per_s: float | None
    pct_of_roof: float | None
    alloc_bytes: int | None
    peak_bytes: int | None
    evidence: tuple[Evidence, ...]

    def to_dict(self) -> dict[str, Any]:
        """In plain JSON types (lists, Python numbers, None for unknown), built field by field:
        asdict's deep copies of a thousand rows' evidence cost more than the rows."""
        out = {name: getattr(self, name) for name in _SCALARS}
        out["evidence"] = [
            {
                "table": e.table,
                "rank": e.rank,
                "event_ids": list(e.event_ids),
                "windows": [list(w) for w in e.windows],
                "label": e.label,
            }
            for e in self.evidence
        ]
        return out


_SCALARS = (
    "path", "type", "depth", "calls", "forward_ns", "backward_ns", "self_ns", "gpu_ns", "flops",
    "achieved_flops_per_s", "pct_of_roof", "alloc_bytes", "peak_bytes",
)  # fmt: skip


@dataclass(frozen=True)
class Phases:
    """A rank's wall split: optimizer > backward > forward > other, adding up to the wall."""

    forward_ns: int
    backward_ns: int
    optimizer_ns: int
    other_ns: int


def rank_phases(analysis: Analysis, rank: int) -> Phases | None:
    """The rank's wall split by phase, as interval unions taken in priority order; None when
    the rank has no host ops."""
    rows = analysis.rank_rows("ops", rank)
    if not len(rows):
        return None
    ops = analysis.trace.ops
    start = ops["start_ns"].to_numpy()[rows]
    end = _within_steps(start, start + ops["dur_ns"].to_numpy()[rows], ops, rows)
    phase = analysis.modules.op_phase[rows]
    covered = []  # the length of the union of the phases so far, in priority order
    mask = np.zeros(len(rows), bool)
    for code in (OPTIMIZER, BACKWARD, FORWARD):
        mask |= phase == code
        covered.append(union(start[mask], end[mask]))
    wall = analysis.wall_ns(rank)
    optimizer, backward, forward = np.diff([0, *covered]).tolist()
    return Phases(
        forward_ns=int(forward),
        backward_ns=int(backward),
        optimizer_ns=int(optimizer),
        other_ns=max(0, wall - covered[-1]),
    )


def _within_steps(
    start: np.ndarray, end: np.ndarray, ops: pd.DataFrame, rows: np.ndarray
) -> np.ndarray:
    """Ends cut at the end of the ``ProfilerStep#N`` range each op starts in. The step hook
    runs inside ``Optimizer.step``: the range around it outlasts the step by the profiler's own
    work (a window's end: its export, milliseconds), which is no phase of the program's."""
    steps = is_step(ops["name"].iloc[rows])
    if not steps.any():
        return end
    order = np.argsort(start[steps], kind="stable")
    step_start, step_end = start[steps][order], end[steps][order]
    at = np.searchsorted(step_start, start, side="right") - 1
    inside = (at >= 0) & (start < step_end[np.maximum(at, 0)])
    return np.where(inside, np.minimum(end, step_end[np.maximum(at, 0)]), end)


def module_rows(analysis: Analysis, rank: int) -> list[ModuleRow]:
    """The rank's modules as a tree (children after their parent, siblings largest forward +
    backward first), then "(no module)"; [] when the rank has no module calls."""
    modules = analysis.modules
    calls = modules.calls[modules.calls["rank"].to_numpy() == rank]
    if not len(calls):
        return []
    n = len(modules.paths) + 1  # the last: NO_MODULE
    parents = np.array([*modules.parents, -1], np.int64)
    figures = _Figures(analysis, rank, modules, calls, n, parents)
    shown = np.zeros(n, bool)
    shown[calls["module"].to_numpy()] = True
    order, depth = _tree_order(shown, parents, figures.forward + figures.backward)
    evidence = _evidence(analysis, rank, modules, calls, n)
    rows = [
        figures.row(m, d, modules.paths[m], modules.types[m], evidence.get(m, ()))
        for m, d in zip(order, depth, strict=True)
    ]
    no_module = n - 1
    if figures.backward[no_module] or figures.gpu[no_module] or figures.known[no_module]:
        rows.append(figures.row(no_module, 0, NO_MODULE, "", evidence.get(no_module, ())))
    return rows


class _Figures:
    """Per module index (NO_MODULE last) of one rank, every figure of its row."""

    def __init__(
        self,
        analysis: Analysis,
        rank: int,
        modules: Modules,
        calls: pd.DataFrame,
        n: int,
        parents: np.ndarray,
    ) -> None:
        self.n, self.parents = n, parents
        self.lift = _lifting_order(parents)
        trace = analysis.trace
        module = calls["module"].to_numpy()
        start, end = calls["start_ns"].to_numpy(), calls["end_ns"].to_numpy()
        self.calls = np.bincount(module, minlength=n)
        self.forward = union_by(module, start, end, n)
        outer = calls["outer"].to_numpy()
        callee = (outer >= 0) & (outer != module)
        inner = union_by(outer[callee], start[callee], end[callee], n)
        self.self_ns = np.maximum(self.forward - inner, 0)
        engines = modules.engines[modules.engines["rank"].to_numpy() == rank]
        e_module = np.where(engines["module"].to_numpy() < 0, n - 1, engines["module"].to_numpy())
        e_start, e_end = engines["start_ns"].to_numpy(), engines["end_ns"].to_numpy()
        at, ancestor = with_ancestors(e_module, parents)
        self.backward = union_by(ancestor, e_start[at], e_end[at], n)
        # Kernels and FLOPs: each module's own, then added up the tree.
        k_rows = analysis.rank_rows("kernels", rank)
        k_module = _or_none(modules.kernel_module[k_rows], n)
        k_dur = trace.kernels["dur_ns"].to_numpy()[k_rows]
        self.gpu = self._lifted(np.bincount(k_module, weights=k_dur, minlength=n))
        self.on_gpu = len(k_rows) > 0
        o_rows = analysis.rank_rows("ops", rank)
        costs = analysis.op_costs
        flops = costs["flops"].to_numpy()[o_rows]
        counted = costs["counted"].to_numpy()[o_rows] & np.isfinite(flops)
        o_module = _or_none(modules.op_module[o_rows], n)[counted]
        self.flops = self._lifted(np.bincount(o_module, weights=flops[counted], minlength=n))
        self.known = self._lifted(np.bincount(o_module, minlength=n).astype(np.float64))
        self.peak = self._peaks(analysis, o_rows[counted], o_module, flops[counted])
        self.memory = memory_by_module(
            analysis, rank, module, start, end, e_module, e_start, e_end, parents
        )

    def _lifted(self, own: np.ndarray) -> np.ndarray:
        total = own.astype(np.float64).copy()
        for m in self.lift:
            total[self.parents[m]] += total[m]
        return total

    def _peaks(
        self, analysis: Analysis, rows: np.ndarray, module: np.ndarray, flops: np.ndarray
    ) -> np.ndarray:
        """Per module, the peak FLOP/s of the roof of its dominant precision (the roof its
        counted ops' FLOPs mostly ran against); NaN when the hardware or FLOPs are unknown."""
        hardware = analysis.hardware
        peak = np.full(self.n, np.nan)
        if not hardware.known or not len(rows):
            return peak
        costs = analysis.op_costs
        dtype = costs["dtype"].to_numpy()[rows].astype(str)
        tc = costs["tensor_core_roof"].to_numpy()[rows].astype(str)
        pairs, which = np.unique(np.char.add(np.char.add(dtype, "|"), tc), return_inverse=True)
        split = [pair.split("|", 1) for pair in pairs.tolist()]
        roofs = [compute_roof(precision, roof, hardware) for precision, roof in split]
        per_roof = np.zeros((self.n, len(pairs)))
        np.add.at(per_roof, (module, which), flops)
        for m in self.lift:
            per_roof[self.parents[m]] += per_roof[m]
        dominant = per_roof.argmax(axis=1)
        has = per_roof.max(axis=1) > 0
        values = np.array([hardware.peak_flops.get(r, np.nan) for r in roofs], np.float64)
        peak[has] = values[dominant[has]]
        return peak

    def row(
        self, m: int, depth: int, path: str, kind: str, evidence: tuple[Evidence, ...]
    ) -> ModuleRow:
        flops = float(self.flops[m]) if self.known[m] > 0 else None
        seconds = float(self.gpu[m] if self.on_gpu else self.forward[m] + self.backward[m]) * 1e-9
        achieved = flops / seconds if flops is not None and seconds > 0 else None
        peak = float(self.peak[m])
        pct = achieved / peak * 100.0 if achieved is not None and math.isfinite(peak) else None
        alloc, rise = self.memory if self.memory is not None else (None, None)
        return ModuleRow(
            path=path,
            type=kind,
            depth=depth,
            calls=int(self.calls[m]),
            forward_ns=int(self.forward[m]),
            backward_ns=int(self.backward[m]),
            self_ns=int(self.self_ns[m]),
            gpu_ns=round(float(self.gpu[m])),
            flops=flops,
            achieved_flops_per_s=achieved,
            pct_of_roof=pct,
            alloc_bytes=None if alloc is None else int(alloc[m]),
            peak_bytes=None if rise is None else int(rise[m]),
            evidence=evidence,
        )


def _or_none(module: np.ndarray, n: int) -> np.ndarray:
    """Module indexes with -1 (no module) as n - 1, NO_MODULE's index."""
    return np.where(module < 0, n - 1, module).astype(np.int64)


def _lifting_order(parents: np.ndarray) -> list[int]:
    """Modules with a parent, deepest first: adding each one's total to its parent's in this
    order sums every subtree."""
    depth = chain_depth(parents)
    below = np.flatnonzero(parents >= 0)
    order: list[int] = below[np.argsort(-depth[below], kind="stable")].tolist()
    return order


def _tree_order(
    shown: np.ndarray, parents: np.ndarray, size: np.ndarray
) -> tuple[list[int], list[int]]:
    """The shown modules depth first, siblings largest first; a module whose parent is not
    shown is a root. (order, depth in the shown tree)."""
    children: dict[int, list[int]] = {}
    for m in np.flatnonzero(shown).tolist():
        up = int(parents[m])
        while up >= 0 and not shown[up]:
            up = int(parents[up])
        children.setdefault(up, []).append(m)
    order: list[int] = []
    depth: list[int] = []
    stack = [(m, 0) for m in _largest_first(children.get(-1, []), size)[::-1]]
    while stack:
        m, d = stack.pop()
        order.append(m)
        depth.append(d)
        stack.extend((c, d + 1) for c in _largest_first(children.get(m, []), size)[::-1])
    return order, depth


def _largest_first(modules: list[int], size: np.ndarray) -> list[int]:
    return sorted(modules, key=lambda m: -size[m])


def _evidence(
    analysis: Analysis, rank: int, modules: Modules, calls: pd.DataFrame, n: int
) -> dict[int, tuple[Evidence, ...]]:
    """Per module, its heaviest calls as ops evidence (in time order); for NO_MODULE, the
    heaviest outermost ops outside every module."""
    module = calls["module"].to_numpy()
    start, end = calls["start_ns"].to_numpy(), calls["end_ns"].to_numpy()
    picked = _heaviest_per_group(module, end - start)
    picked = picked[np.lexsort((start[picked], module[picked]))]  # by module, then time
    ids = calls["op"].to_numpy()[picked].tolist()
    starts, ends = start[picked].tolist(), end[picked].tolist()
    group = module[picked]
    bounds = np.flatnonzero(np.r_[True, group[1:] != group[:-1], True]).tolist()
    out: dict[int, tuple[Evidence, ...]] = {}
    for lo, hi in itertools.pairwise(bounds):
        m = int(group[lo])
        out[m] = (
            _ops_evidence(
                rank, ids[lo:hi], starts[lo:hi], ends[lo:hi], f"{modules.paths[m]} calls"
            ),
        )
    ops = analysis.trace.ops
    o_rows = analysis.rank_rows("ops", rank)
    outside = o_rows[(modules.op_module[o_rows] < 0) & analysis.outermost_cpu_ops[o_rows]]
    if len(outside):
        start = ops["start_ns"].to_numpy()[outside]
        end = start + ops["dur_ns"].to_numpy()[outside]
        top = _heaviest_per_group(np.zeros(len(outside), np.int64), end - start)
        top = top[np.argsort(start[top], kind="stable")]
        out[n - 1] = (
            _ops_evidence(
                rank,
                ops["id"].to_numpy()[outside][top].tolist(),
                start[top].tolist(),
                end[top].tolist(),
                "ops outside every module",
            ),
        )
    return out


def _heaviest_per_group(group: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Positions of the MODULE_EVIDENCE_CALLS heaviest rows of each group."""
    order = np.lexsort((-weight, group))
    g = group[order]
    first = np.r_[0, np.flatnonzero(g[1:] != g[:-1]) + 1]
    within = np.arange(len(g)) - np.repeat(first, np.diff(np.r_[first, len(g)]))
    return np.asarray(order[within < MODULE_EVIDENCE_CALLS])


def _ops_evidence(
    rank: int, ids: list[int], starts: list[int], ends: list[int], label: str
) -> Evidence:
    return Evidence(
        table="ops",
        rank=rank,
        event_ids=tuple(ids),
        windows=tuple(zip(starts, ends, strict=True)),
        label=label,
    )
