"""Where memory goes: a rank's allocator events as blocks with a lifetime, a category and the
module and line that allocated them; the memory in use over time by category, and what was
live at the peak and where the trace ends (an out-of-memory failure's moment).

Each allocation is paired with its free by address (the allocator's ``Addr``); one never freed
lives to the end. The block's op is the innermost op of its thread running at the allocation,
its module that op's (a backward op's: the module whose forward made its grad_fn), its phase
that op's phase.

Categories, in order of evidence:
1. ``parameters``, ``gradients``, ``optimizer state``: a block still live at the end whose
   address is a tensor the capture knew in that role (``TraceMeta.tensor_roles``: the modules
   it saw called, the optimizers that stepped). Those known tensors that were never allocated
   during the trace were already there: they start the timeline, in their roles.
2. By lifetime, for the rest: made in the forward and freed in the backward, or still live
   where a failure cut the trace short: ``activations`` (saved for the backward, or the
   forward's work in flight); made and freed in one phase: ``temporaries``; made in the
   backward and outliving it: ``gradients``; made in the optimizer and outliving it:
   ``optimizer state``; anything else (inputs, outputs, blocks of unknown address): ``other``.

Why not torch's own classification (``torch.profiler._memory_profiler``, behind
``export_memory_timeline``): it is private, needs ``with_stack`` and shapes on every capture,
and is being deprecated in favour of allocator snapshots (pytorch PR #168036). The tensors the
capture knows are torch's own answer for the three roles that matter most to a fix.
"""

from __future__ import annotations

from itertools import pairwise
from typing import TYPE_CHECKING

import msgspec
import numpy as np
import pandas as pd

from gpuprofile.analyses.memory_failure import MemoryFailure, failed_device, memory_failure
from gpuprofile.analyses.memory_moments import (
    LiveBlock,
    MemoryFacts,
    MemoryMoment,
    ModuleBytes,
)
from gpuprofile.analyses.modules import BACKWARD, FORWARD, NO_MODULE, OPTIMIZER
from gpuprofile.analyses.names import strings

if TYPE_CHECKING:
    from gpuprofile.trace.meta import TensorRole

CATEGORIES = (
    "parameters", "gradients", "optimizer state", "activations", "temporaries", "other",
)  # fmt: skip
PARAMETERS, GRADIENTS, OPTIMIZER_STATE, ACTIVATIONS, TEMPORARIES, OTHER = range(6)
_CODE = {name: code for code, name in enumerate(CATEGORIES)}
# The timeline's points at most: each kept point is its stretch's highest, so the peak stays.
TIMELINE_POINTS = 400
LARGEST = 10
UNNAMED = "(before the trace, unnamed)"
UNATTRIBUTED = "(not attributed: before the trace, or events without an address)"
_DEPTH = 256  # op nesting climbed at most


class MemoryUse(msgspec.Struct, frozen=True):
    """A rank's memory in use on its main allocator device (report: RankReport.memory)."""

    device: int  # -1: host memory (PyTorch's CPU allocator)
    before_bytes: int  # live before the trace's first event, as far as known
    categories: list[str]
    times_ns: list[int]
    by_category: dict[str, list[int]]  # category -> bytes in use at each time
    peak: MemoryMoment
    end: MemoryMoment  # where the trace ends: an out-of-memory failure's moment
    known_roles: int  # tensors the capture named (parameters, gradients, optimizer state)
    # The capture's code ran out of memory: its post-mortem at ``end``.
    failure: MemoryFailure | None = None
    # What the events could not tell ("" when they told everything): events without an
    # address (not paired, in "other", no block of theirs listed), or without totals.
    note: str = ""


class Blocks:
    """One row per allocation on the device (and per free of a block made before the trace)."""

    def __init__(self, analysis: MemoryFacts, rank: int, memory: pd.DataFrame) -> None:
        mine = memory.sort_values("time_ns", kind="stable")
        self.time = mine["time_ns"].to_numpy()
        self.totals = mine["total_allocated"].to_numpy()
        self.deltas = delta = mine["bytes"].to_numpy()
        addr = mine["addr"].to_numpy() if "addr" in mine else np.full(len(mine), -1)
        n = len(mine)
        order = np.lexsort((np.arange(n), addr))
        paired = (
            (addr[order][:-1] >= 0)
            & (addr[order][:-1] == addr[order][1:])
            & (delta[order][:-1] > 0)
            & (delta[order][1:] < 0)
        )
        free_of = np.full(n, n, np.int64)  # each allocation's free, n: never freed
        free_of[order[:-1][paired]] = order[1:][paired]
        freed = np.zeros(n, bool)
        freed[order[1:][paired]] = True
        known = addr >= 0
        alloc = np.flatnonzero((delta > 0) & known)
        early = np.flatnonzero((delta < 0) & ~freed & known)  # blocks made before the trace
        # Events without an address pair with nothing: they move the total, as "other".
        self.loose = np.flatnonzero(~known)
        self.loose_bytes = delta[self.loose]
        self.rows = np.r_[alloc, early]  # event index each block is counted from
        self.start = np.r_[alloc, np.full(len(early), -1)]  # event index; -1: before
        self.end = np.r_[free_of[alloc], early]
        self.size = np.r_[delta[alloc], -delta[early]]
        self.addr = addr[self.rows]
        op, module, phase, line = _placed(analysis, rank, mine)
        self.op, self.module, self.line = op[self.rows], module[self.rows], line[self.rows]
        self.alloc_phase = np.where(self.start >= 0, phase[self.rows], -1)
        end_phase = np.r_[phase, -1][np.minimum(self.end, n)]
        self.free_phase = np.where(self.end < n, end_phase, -1)
        self.events = n
        self.category = _categories(self, analysis, int(mine["device"].iloc[0]) if n else -1)


def _placed(
    analysis: MemoryFacts, rank: int, memory: pd.DataFrame
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per memory event: the innermost op of its thread running then (-1 none), that op's
    module (-1 none), phase, and user line (-1 unknown)."""
    n = len(memory)
    op = np.full(n, -1, np.int64)
    rows = analysis.rank_rows("ops", rank)
    ops = analysis.trace.ops
    if len(rows) and n:
        start = ops["start_ns"].to_numpy()[rows]
        thread = ops["tid"].to_numpy()[rows]
        time, tid = memory["time_ns"].to_numpy(), memory["tid"].to_numpy()
        parents = analysis.op_parents
        for t in np.unique(tid):
            on = np.flatnonzero(thread == t)
            if not len(on):
                continue
            on = on[np.argsort(start[on], kind="stable")]
            at = np.flatnonzero(tid == t)
            i = np.searchsorted(start[on], time[at], "right") - 1
            cand = np.where(i >= 0, rows[on[np.maximum(i, 0)]], -1)
            op[at] = _containing(cand, time[at], ops, parents)
    modules = analysis.modules
    module = np.full(n, -1, np.int64)
    phase = np.zeros(n, np.int64)
    line = np.full(n, -1, np.int64)
    known = op >= 0
    if known.any():
        engine = np.full(len(ops), -1, np.int64)
        engines = modules.engines
        at = analysis.id_index("ops").get_indexer(pd.Index(engines["op"].to_numpy()))
        engine[at[at >= 0]] = engines["module"].to_numpy()[at >= 0]
        parents = analysis.op_parents
        # A backward op's module: the module whose forward made its engine op's grad_fn.
        owner = np.maximum(modules.op_module, engine)
        module[known] = _first_up(op[known], owner, parents)
        phase[known] = modules.op_phase[op[known]]
        line[known] = _first_up(op[known], analysis.sources.op_source, parents)
    return op, module, phase, line


def _containing(
    cand: np.ndarray, time: np.ndarray, ops: pd.DataFrame, parents: np.ndarray
) -> np.ndarray:
    """The op at or above each candidate that is still running at ``time`` (-1: none)."""
    start, dur = ops["start_ns"].to_numpy(), ops["dur_ns"].to_numpy()
    out = cand.copy()
    for _ in range(_DEPTH):
        open_ = out >= 0
        if not open_.any():
            break
        done = np.zeros(len(out), bool)
        done[open_] = start[out[open_]] + dur[out[open_]] >= time[open_]
        climb = open_ & ~done
        if not climb.any():
            break
        out[climb] = parents[out[climb]]
    return out


def _first_up(op: np.ndarray, known: np.ndarray, parents: np.ndarray) -> np.ndarray:
    """Per op, ``known`` of the op or of the nearest op above it that has one (>= 0); -1."""
    out = np.full(len(op), -1, np.int64)
    cur = op.copy()
    for _ in range(_DEPTH):
        todo = (out < 0) & (cur >= 0)
        if not todo.any():
            break
        out[todo] = known[cur[todo]]
        cur[todo] = parents[cur[todo]]
    return out


def _categories(blocks: Blocks, analysis: MemoryFacts, device: int) -> np.ndarray:
    n = blocks.events
    category = np.full(len(blocks.size), OTHER, np.int8)
    a, f = blocks.alloc_phase, blocks.free_phase
    live_at_end = blocks.end >= n
    category[(a == FORWARD) & (f == BACKWARD)] = ACTIVATIONS
    category[(a == FORWARD) & (f == FORWARD)] = TEMPORARIES
    if analysis.trace.meta.partial:  # cut short: the forward's live blocks await a backward
        category[(a == FORWARD) & live_at_end] = ACTIVATIONS
    category[(a == BACKWARD) & (f == BACKWARD)] = TEMPORARIES
    category[(a == BACKWARD) & (f != BACKWARD)] = GRADIENTS
    category[(a == OPTIMIZER) & (f == OPTIMIZER)] = TEMPORARIES
    category[(a == OPTIMIZER) & (f != OPTIMIZER)] = OPTIMIZER_STATE
    # Made before the trace: freed by zero_grad (the optimizer's phase) they were gradients.
    category[(blocks.start < 0) & (f == OPTIMIZER)] = GRADIENTS
    roles = _roles(analysis, device)
    if roles:
        known = np.array([roles.get(int(x), -1) for x in blocks.addr], np.int64)
        named = live_at_end & (known >= 0)
        category[named] = known[named]
    return category


def _roles(analysis: MemoryFacts, device: int) -> dict[int, int]:
    return {
        r.addr: _CODE[r.role]
        for r in analysis.trace.meta.tensor_roles
        if r.device == device and r.role in _CODE
    }


def main_device(memory: pd.DataFrame, failed: int | None = None) -> int | None:
    """The device a rank's memory is told for: the GPU that ran out of memory (``failed``,
    when it has events), else the GPU whose allocator total peaked highest (the peak gauge's),
    else the one with most events, else the host."""
    if not len(memory):
        return None
    device = memory["device"].to_numpy()
    if failed is not None and (device == failed).any():
        return failed
    gpu = device >= 0
    if not gpu.any():
        return int(device[0])
    total = memory["total_allocated"].to_numpy()
    known = gpu & (total >= 0)
    if known.any():
        return int(device[known][np.argmax(total[known])])
    devices, counts = np.unique(device[gpu], return_counts=True)
    return int(devices[counts.argmax()])


def memory_use(analysis: MemoryFacts, rank: int) -> MemoryUse | None:
    """The rank's memory by category and module over time; None without allocator events."""
    memory = analysis.rank_table("memory", rank)
    device = main_device(memory, failed_device(analysis.trace.meta.failure))
    if device is None:
        return None
    mine = memory[memory["device"].to_numpy() == device]
    blocks = Blocks(analysis, rank, mine)
    n = blocks.events
    paths = analysis.modules.paths
    # Known tensors never allocated during the trace were there before it: they start it.
    allocated_here = set(blocks.addr[blocks.start >= 0].tolist())
    before = [
        r for r in analysis.trace.meta.tensor_roles
        if r.device == device and r.addr not in allocated_here and r.role in _CODE
    ]  # fmt: skip
    before_by = np.zeros(len(CATEGORIES), np.int64)
    for r in before:
        before_by[_CODE[r.role]] += r.bytes
    early = blocks.start < 0
    np.add.at(before_by, blocks.category[early].astype(np.int64), blocks.size[early])
    totals, deltas = blocks.totals, blocks.deltas
    # A GPU allocator's own total says what was live before the first event, known or not.
    # The CPU allocator's counts only what it saw while a profiler ran, in this process: not
    # the tensors made before (the model), so its total tells nothing of the start.
    recorded_before = int(totals[0] - deltas[0]) if n and totals[0] >= 0 and device >= 0 else 0
    before_by[OTHER] += max(0, recorded_before - int(before_by.sum()))
    # Per category, bytes in use after each event.
    step = np.zeros((len(CATEGORIES), n + 1), np.int64)
    made = ~early
    np.add.at(step, (blocks.category[made].astype(np.int64), blocks.start[made]), blocks.size[made])
    gone = blocks.end < n
    np.add.at(step, (blocks.category[gone].astype(np.int64), blocks.end[gone]), -blocks.size[gone])
    np.add.at(step[OTHER], blocks.loose, blocks.loose_bytes)
    if len(blocks.loose) and not recorded_before:
        # Unpaired frees of blocks from before the trace: at least enough was live to free.
        lowest = int(np.cumsum(step, axis=1)[:, :n].sum(axis=0).min()) if n else 0
        before_by[OTHER] += max(0, -lowest - int(before_by.sum()))
    # Column c: in use after event c - 1; column 0 the start, before the first event (what was
    # live then can be the peak: a trace that begins by freeing).
    in_use = before_by[:, None] + np.cumsum(step, axis=1)
    in_use = np.concatenate([before_by[:, None], in_use[:, :n]], axis=1)
    total = in_use.sum(axis=0)
    kept = _kept_points(total)
    time = blocks.time
    at_time = np.r_[time[:1], time] if n else np.zeros(1, np.int64)
    peak_at = int(np.argmax(total))
    named_before = [LiveBlock(r.bytes, r.role, _owner_module(r), "", "", None) for r in before]
    # Blocks in a known role are the owner's (a parameter's module, the optimizer), wherever
    # they were allocated.
    owners = {
        r.addr: _owner_module(r) for r in analysis.trace.meta.tensor_roles if r.device == device
    }
    owned = (blocks.end >= n) & np.isin(blocks.addr, list(owners))
    # Made in the optimizer's step outside every module: the optimizer's (its temporaries).
    optimizers = analysis.workload.optimizers
    stepper = f"{optimizers[0] if len(optimizers) == 1 else 'the'} (optimizer)"
    stepped = (blocks.alloc_phase == OPTIMIZER) & (blocks.module < 0)
    # Each block's module as shown, worked out once for every moment.
    shown = [
        owners[int(a)] if is_owned
        else paths[m] if m >= 0
        else stepper if is_stepped
        else NO_MODULE
        for a, m, is_owned, is_stepped in zip(
            blocks.addr.tolist(), blocks.module.tolist(), owned.tolist(), stepped.tolist(),
            strict=True,
        )
    ]  # fmt: skip

    def moment(c: int) -> tuple[MemoryMoment, list[LiveBlock]]:
        k = c - 1  # the last event counted in column c
        live = np.flatnonzero((blocks.start <= k) & (blocks.end > k))
        unnamed = int(total[c]) - int(blocks.size[live].sum())
        unnamed -= sum(b.bytes for b in named_before)
        rows = [
            LiveBlock(
                int(blocks.size[i]),
                CATEGORIES[int(blocks.category[i])],
                shown[i],
                op_name,
                _line(analysis, int(blocks.line[i])),
                int(time[blocks.start[i]]) if blocks.start[i] >= 0 else None,
            )
            for i, op_name in zip(live, _op_names(analysis, blocks.op[live]), strict=True)
        ] + named_before
        by_module: dict[str, int] = {}
        for b in rows:
            by_module[b.module] = by_module.get(b.module, 0) + b.bytes
        if unnamed > 0:
            # Live before the trace with no known role, or moved by events without an address.
            by_module[UNNAMED if not len(blocks.loose) else UNATTRIBUTED] = unnamed
        return MemoryMoment(
            time_ns=int(at_time[c]),
            total_bytes=int(total[c]),
            by_category={name: int(in_use[i, c]) for i, name in enumerate(CATEGORIES)},
            by_module=[
                ModuleBytes(m, b) for m, b in sorted(by_module.items(), key=lambda kv: -kv[1])
            ],
            largest=sorted(rows, key=lambda b: -b.bytes)[:LARGEST],
        ), rows

    peak, _ = moment(peak_at)
    end, live = moment(n)
    return MemoryUse(
        device=device,
        before_bytes=int(before_by.sum()),
        categories=list(CATEGORIES),
        times_ns=[int(at_time[c]) for c in kept],
        by_category={name: in_use[i, kept].tolist() for i, name in enumerate(CATEGORIES)},
        peak=peak,
        end=end,
        known_roles=len(analysis.trace.meta.tensor_roles),
        failure=memory_failure(analysis, end, live, device, _failed_where(analysis, rank)),
        note=_note(len(blocks.loose), n, bool(n) and totals[0] < 0 and device >= 0),
    )


def _failed_where(analysis: MemoryFacts, rank: int) -> tuple[str, str, str]:
    """(op, module, line) running where the allocator refused, from its [OutOfMemory] event."""
    at = analysis.trace.meta.failure_at
    if at is None:
        return "", "", ""
    point = pd.DataFrame({"time_ns": [at[0]], "tid": [at[1]]})
    op, module, _, line = _placed(analysis, rank, point)
    paths = analysis.modules.paths
    return (
        _op_name(analysis, int(op[0])),
        paths[int(module[0])] if module[0] >= 0 else (NO_MODULE if op[0] >= 0 else ""),
        _line(analysis, int(line[0])),
    )


def _note(loose: int, events: int, no_totals: bool) -> str:
    said = []
    if loose:
        said.append(
            f"{loose} of {events} allocator events carry no address: they are not paired with "
            "their frees, count as other, and no block of theirs is listed"
        )
    if no_totals:
        said.append(
            "the events carry no totals: what was live before the first event is unknown "
            "(counted from the least that the frees imply)"
        )
    return "; ".join(said)


def _owner_module(role: TensorRole) -> str:
    """A parameter's or gradient's module ("Net.a" for "Net.a.weight"); an optimizer's own."""
    if role.role == "optimizer state" or "." not in role.owner:
        return f"{role.owner} (optimizer)"
    return role.owner.rsplit(".", 1)[0]


def _kept_points(total: np.ndarray) -> np.ndarray:
    """Columns kept for the timeline: each stretch's highest, the first and the last."""
    n = len(total)
    if n <= TIMELINE_POINTS:
        return np.arange(n)
    edges = np.linspace(0, n, TIMELINE_POINTS - 1, dtype=np.int64)
    highest = [int(lo + np.argmax(total[lo:hi])) for lo, hi in pairwise(edges) if hi > lo]
    return np.unique(np.r_[0, highest, n - 1])


def _op_name(analysis: MemoryFacts, op: int) -> str:
    return _op_names(analysis, np.array([op]))[0]


def _op_names(analysis: MemoryFacts, ops: np.ndarray) -> list[str]:
    """The name of each ops row ("" for -1), read from the column's names listed once: a
    moment has thousands of live blocks, and a categorical's .iat costs microseconds."""
    if not (ops >= 0).any():
        return [""] * len(ops)
    names = strings(analysis.trace.ops["name"], rows=np.maximum(ops, 0)).tolist()
    return [str(n) if o >= 0 else "" for n, o in zip(names, ops.tolist(), strict=True)]


def _line(analysis: MemoryFacts, source: int) -> str:
    return analysis.sources.lines[source].label if source >= 0 else ""
