"""The program behind the events: which nn.Module call and which phase (forward, backward,
optimizer, other) each op and kernel belongs to.

Module calls are ops rows:
- a capture's (and an importer's that knows the path): category ``user_annotation``, name
  ``nn.Module: {path} ({Type})``, the path from the outermost module called
  (``Transformer.layers.3.mlp``);
- torch's own (``with_stack``): category ``python_function``, name ``nn.Module: {Class}_{N}``,
  the path the one gpuprofile's capture saw the module called at (``TraceMeta.module_names``,
  capture/module_names.py), else the chain of enclosing module calls joined with "."
  (``Transformer_0.Layer_3.MLP_3``).
A trace with calls of the first form is read by those alone: a capture with stacks holds both,
and the two would count every module twice.

An op belongs to its innermost enclosing module call (the op tree, one thread). Backward work
belongs to the module whose forward op has its autograd sequence number: an engine op
(``autograd::engine::evaluate_function: MmBackward0``) carries the number of the forward op
that made its grad_fn; the outermost forward op with that (rank, sequence) (``aten::linear``,
not its inner ``aten::t``) sits inside the module call that owns it. The engine op and
everything it runs take that module, unless a module call nested inside it is nearer
(activation checkpointing recomputes a forward inside a backward). Kernels take their
launching op's module and phase.

Phases, by priority: optimizer (inside ``Optimizer.step#...`` / ``Optimizer.zero_grad#...``,
whatever category the trace gives them: torch 1.x wrote them as plain ops) > backward (inside
an engine op, or, in traces older than the engine ops, an op named ``...Backward`` /
``...BackwardN``, which torch names its grad functions) > forward (inside a module call) >
other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from gpuprofile.analyses.lookups import innermost_everywhere, innermost_with, outermost_with
from gpuprofile.analyses.names import categorical, codes, matches, per_category
from gpuprofile.trace.model import MODULE_PREFIX, NO_ID

if TYPE_CHECKING:
    from gpuprofile.analyses.lookups import Lookups

NO_MODULE = "(no module)"
# Phase codes of op_phase / kernel_phase.
PHASES = ("other", "forward", "backward", "optimizer")
OTHER, FORWARD, BACKWARD, OPTIMIZER = range(4)
ENGINE_PREFIX = "autograd::engine::evaluate_function: "

_CALL = re.compile(re.escape(MODULE_PREFIX))
_ENGINE = re.compile(re.escape(ENGINE_PREFIX))
_OPTIMIZER = re.compile(r"Optimizer\.(step|zero_grad)#")
# A grad function's own op, as torch 1.x traces record the backward (no engine op around it).
_GRAD_FN = re.compile(r"^[A-Z]\w*Backward\d*$")
# Phase ranges programs mark themselves (user annotations): PARAM's and TorchRec's
# "## forward ##" / "## forward:bottom_mlp ##", "## backward ##", "## optimizer ##",
# "## zero_grad ##"; DDP's and FSDP's own forward ranges; PARAM's "[param|...|forward]".
_FORWARD_MARK = re.compile(
    r"## ?forward(?::[^#]*)? ?##|(?:DistributedDataParallel|FullyShardedDataParallel)\.forward"
    r"|\[param\|.*\|forward\]"
)
_BACKWARD_MARK = re.compile(r"## ?backward ?##")
_OPTIMIZER_MARK = re.compile(r"## ?(?:optimizer|zero_grad) ?##")
# "Transformer.layers.3.mlp (MLP)": the path, then the class in parentheses (optional).
_CAPTURE_NAME = re.compile(r"(?P<path>.*?)(?: \((?P<type>[^()]*)\))?")
# "MLP_3": torch's class name and its instance counter.
_TORCH_NAME = re.compile(r"(?P<type>.*)_\d+")
# Sequence numbers are per-thread counters; above this one a (rank, sequence) key would not
# fit one int64, and such a number is no sequence torch writes.
_MAX_SEQUENCE = 2**40
_NONE = np.zeros(0, np.int64)
_NO_OPS = pd.DataFrame({c: _NONE for c in ("id", "rank", "start_ns", "dur_ns")})


@dataclass(frozen=True)
class Modules:
    """Module and phase of every op and kernel of a trace, in table row order."""

    paths: tuple[str, ...]  # module index -> path
    types: tuple[str, ...]  # module index -> class name ("" when unknown)
    op_module: np.ndarray  # int32 per ops row: innermost module index, -1: none
    op_phase: np.ndarray  # int8 per ops row: a PHASES index
    kernel_module: np.ndarray  # int32 per kernels row, from its launching op
    kernel_phase: np.ndarray  # int8 per kernels row
    # One row per module call: op (its ops row id), module (index), rank, start_ns, end_ns,
    # outer (the module of the innermost call around it, -1: none).
    calls: pd.DataFrame
    # module index -> the index of the module it sits in (the longest path that is a proper
    # "."-prefix of its own), -1 for a root.
    parents: tuple[int, ...] = ()
    # One row per backward engine op: op (id), module (the module its forward op ran in, -1
    # unknown), rank, start_ns, end_ns.
    engines: pd.DataFrame = field(default_factory=lambda: _rows_of(_NO_OPS, _NONE, _NONE))


def attribute_modules(analysis: Lookups) -> Modules:
    """Every op's and kernel's module and phase (Analysis.modules)."""
    trace = analysis.trace
    ops = trace.ops
    n = len(ops)
    if n == 0:
        return _empty(len(trace.kernels))
    names = categorical(ops["name"])
    category = ops["category"]  # compared as a categorical: one test per category
    prefixed = matches(names, _CALL, anchored=True)
    annotation = (category == "user_annotation").to_numpy()
    call = prefixed & annotation
    torch_form = not call.any()
    if torch_form:
        call = prefixed & (category == "python_function").to_numpy()
    parent = analysis.op_parents
    call_rows = np.flatnonzero(call)
    paths, types, call_module = _call_modules(
        names, call_rows, parent, call, trace.meta.module_names if torch_form else None
    )
    module_of_call = np.full(n, -1, np.int32)
    module_of_call[call_rows] = call_module

    engine = matches(names, _ENGINE, anchored=True)
    in_engine = outermost_with(engine, parent) >= 0
    engine_rows = np.flatnonzero(engine)
    engine_module = np.full(n, -1, np.int32)
    engine_module[engine_rows] = _engine_modules(
        ops, engine_rows, in_engine, parent, call, module_of_call
    )

    # Each op's nearer of its innermost module call and innermost engine op.
    nearest = innermost_everywhere(call | engine, parent, ops["depth"].to_numpy())
    inside = np.flatnonzero(nearest >= 0)
    near = nearest[inside]
    op_module = np.full(n, -1, np.int32)
    op_module[inside] = np.where(call[near], module_of_call[near], engine_module[near])
    optimizer = matches(names, _OPTIMIZER, anchored=True)
    grad_fn = matches(names, _GRAD_FN, anchored=True)
    op_phase = np.full(n, OTHER, np.int8)

    def marked(pattern: re.Pattern[str]) -> np.ndarray:
        return _inside_range(matches(names, pattern, anchored=True) & annotation, parent, ops)

    # Later phases win (optimizer > backward > forward): inside a call or an engine op, or a
    # phase range the program marked; those inside an engine op are backward.
    op_phase[marked(_FORWARD_MARK)] = FORWARD
    op_phase[inside] = FORWARD
    op_phase[marked(_BACKWARD_MARK)] = BACKWARD
    op_phase[in_engine] = BACKWARD
    op_phase[_inside_range(grad_fn, parent, ops)] = BACKWARD
    op_phase[marked(_OPTIMIZER_MARK)] = OPTIMIZER
    op_phase[_inside_range(optimizer, parent, ops)] = OPTIMIZER

    kernel_module, kernel_phase = _kernel_facts(analysis, op_module, op_phase)
    return Modules(
        paths=paths,
        types=types,
        op_module=op_module,
        op_phase=op_phase,
        kernel_module=kernel_module,
        kernel_phase=kernel_phase,
        calls=_rows_of(ops, call_rows, call_module).assign(
            outer=_outer(call, parent, call_rows, module_of_call)
        ),
        parents=_parents(paths),
        engines=_rows_of(ops, engine_rows, engine_module[engine_rows]),
    )


def _inside_range(flag: np.ndarray, parent: np.ndarray, ops: pd.DataFrame) -> np.ndarray:
    """Per row, whether it or an ancestor has flag set and the innermost such one holds it
    in time. Ranges need not nest: with --steps, the profiler's step (its hook runs inside
    ``Optimizer.step``) opens ``ProfilerStep#N`` before the optimizer's range closes, and the
    whole next step would otherwise read as its child."""
    if not flag.any():
        return np.zeros(len(flag), bool)
    holder = innermost_everywhere(flag, parent, ops["depth"].to_numpy())
    rows = np.flatnonzero(holder >= 0)
    start = ops["start_ns"].to_numpy(np.int64)
    end = start + ops["dur_ns"].to_numpy(np.int64)
    out = np.zeros(len(flag), bool)
    out[rows] = end[rows] <= end[holder[rows]]
    return out


def _call_modules(
    names: pd.Series,
    rows: np.ndarray,
    parent: np.ndarray,
    call: np.ndarray,
    torch_names: dict[str, str] | None,
) -> tuple[tuple[str, ...], tuple[str, ...], np.ndarray]:
    """(paths, types, module index per call row). A capture's call names its path; torch's
    (torch_names not None: TraceMeta.module_names) names one link of it, so its path is the
    path the capture saw the module called at, else the chain of calls around it."""
    torch_form = torch_names is not None
    parse = _torch_name if torch_form else _capture_name
    code = codes(names)[rows]
    # Per call row: its path (a link of it, in torch's form) and its class.
    own_path = per_category(names, ("module path", torch_form), lambda t: parse(t)[0])[code]
    own_type = per_category(names, ("module type", torch_form), lambda t: parse(t)[1])[code]
    own = list(zip(own_path.tolist(), own_type.tolist(), strict=True))
    index: dict[str, int] = {}
    types: list[str] = []
    module = np.empty(len(rows), np.int32)
    if torch_names is None:
        for i, (path, kind) in enumerate(own):
            module[i] = _module_index(index, types, path, kind)
        return tuple(index), tuple(types), module
    # The enclosing call of each call (its parent's innermost call), as a position in rows:
    # calls nest, so an enclosing call starts first and is met first in start order.
    above = innermost_with(call, parent, parent[rows])
    position = np.full(len(call), -1, np.int64)
    position[rows] = np.arange(len(rows))
    enclosing = np.where(above >= 0, position[np.maximum(above, 0)], -1).tolist()
    # Calls ordered by depth: an enclosing call's path is known before its callees'.
    depth_order = np.argsort(chain_depth(np.asarray(enclosing)), kind="stable").tolist()
    path_of = [""] * len(rows)
    for i in depth_order:
        link, kind = own[i]
        up = enclosing[i]
        path = torch_names.get(link) or (link if up < 0 else f"{path_of[up]}.{link}")
        path_of[i] = path
        module[i] = _module_index(index, types, path, kind)
    return tuple(index), tuple(types), module


def chain_depth(enclosing: np.ndarray) -> np.ndarray:
    """How many calls enclose each call (enclosing: position of each one's enclosing call)."""
    depth = np.zeros(len(enclosing), np.int64)
    at = enclosing.copy()
    while (at >= 0).any():
        climbing = at >= 0
        depth[climbing] += 1
        at[climbing] = enclosing[at[climbing]]
    return depth


def _module_index(index: dict[str, int], types: list[str], path: str, kind: str) -> int:
    if path not in index:
        index[path] = len(index)
        types.append(kind)
    return index[path]


def _capture_name(name: str) -> tuple[str, str]:
    found = _CAPTURE_NAME.fullmatch(name.removeprefix(MODULE_PREFIX))
    assert found is not None  # the pattern matches every text
    return found["path"] or "?", found["type"] or ""


def _torch_name(name: str) -> tuple[str, str]:
    link = name.removeprefix(MODULE_PREFIX) or "?"
    found = _TORCH_NAME.fullmatch(link)
    return link, found["type"] if found else link


def _engine_modules(
    ops: pd.DataFrame,
    engine_rows: np.ndarray,
    in_engine: np.ndarray,
    parent: np.ndarray,
    call: np.ndarray,
    module_of_call: np.ndarray,
) -> np.ndarray:
    """Per engine op, the module its forward op ran in; -1 when none is known.

    Ops outside every engine op that carry the engine op's (rank, sequence number) are its
    forward candidates. Autograd's counter moves on when an op makes a grad_fn, so ops that
    only read it (``aten::item``) carry the number of the next one that does: the maker is
    the last candidate to start, climbed to its outermost enclosing op with the same number
    (``aten::linear`` around ``aten::t``)."""
    sequence = ops["sequence"].to_numpy()
    rank = ops["rank"].to_numpy().astype(np.int64)
    usable = (sequence != NO_ID) & (sequence >= 0) & (sequence < _MAX_SEQUENCE)
    key = (rank << 40) | np.where(usable, sequence, 0)
    forward = usable & ~in_engine
    candidates = np.flatnonzero(forward)
    result = np.full(len(engine_rows), -1, np.int32)
    if not len(candidates) or not len(engine_rows):
        return result
    start = ops["start_ns"].to_numpy()
    order = candidates[np.lexsort((start[candidates], key[candidates]))]
    last = np.r_[key[order][1:] != key[order][:-1], True]  # the last of each key
    owner = order[last]
    keys = key[owner]
    climbing = np.arange(len(owner))
    while len(climbing):
        up = parent[owner[climbing]]
        same = up >= 0
        same[same] = forward[up[same]] & (key[up[same]] == keys[climbing[same]])
        climbing = climbing[same]
        owner[climbing] = up[same]
    inner = innermost_with(call, parent, owner)
    owner_module = np.where(inner >= 0, module_of_call[np.maximum(inner, 0)], -1)
    wanted = key[engine_rows]
    at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    hit = usable[engine_rows] & (keys[at] == wanted)
    result[hit] = owner_module[at[hit]]
    return result


def _kernel_facts(
    analysis: Lookups, op_module: np.ndarray, op_phase: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each kernel's module and phase: its launching op's."""
    op_id = analysis.trace.kernels["op_id"].to_numpy()
    row = analysis.id_index("ops").get_indexer(pd.Index(op_id))
    row = np.where(op_id == NO_ID, -1, row)
    launched = row >= 0
    module = np.full(len(op_id), -1, np.int32)
    phase = np.full(len(op_id), OTHER, np.int8)
    module[launched] = op_module[row[launched]]
    phase[launched] = op_phase[row[launched]]
    return module, phase


def _parents(paths: tuple[str, ...]) -> tuple[int, ...]:
    """Each module's enclosing module: its longest proper "."-prefix among the paths (a
    ModuleList is never called, so ``layers.3``'s parent is the model, not ``layers``)."""
    index = {path: i for i, path in enumerate(paths)}
    parents = []
    for path in paths:
        found = -1
        head = path
        while "." in head:
            head = head.rsplit(".", 1)[0]
            if head in index:
                found = index[head]
                break
        parents.append(found)
    return tuple(parents)


def _outer(
    call: np.ndarray, parent: np.ndarray, rows: np.ndarray, module_of_call: np.ndarray
) -> np.ndarray:
    """Per call, the module of the innermost call around it (-1: none)."""
    above = innermost_with(call, parent, parent[rows])
    return np.where(above >= 0, module_of_call[np.maximum(above, 0)], -1).astype(np.int64)


def _rows_of(ops: pd.DataFrame, rows: np.ndarray, module: np.ndarray) -> pd.DataFrame:
    start = ops["start_ns"].to_numpy()[rows]
    return pd.DataFrame(
        {
            "op": ops["id"].to_numpy()[rows],
            "module": np.asarray(module, np.int64),
            "rank": ops["rank"].to_numpy()[rows].astype(np.int64),
            "start_ns": start,
            "end_ns": start + ops["dur_ns"].to_numpy()[rows],
        }
    )


def _empty(kernels: int) -> Modules:
    return Modules(
        paths=(),
        types=(),
        op_module=np.zeros(0, np.int32),
        op_phase=np.zeros(0, np.int8),
        kernel_module=np.full(kernels, -1, np.int32),
        kernel_phase=np.zeros(kernels, np.int8),
        calls=_rows_of(_NO_OPS, _NONE, _NONE).assign(outer=_NONE),
    )
