"""What PyTorch writes into NVTX ranges, read back as ops, frames and module calls.

Two writers are known (docs/formats/nsys.md, "Torch's NVTX ranges"):

- ``torch.autograd.profiler.emit_nvtx``: one range per op, its text
  ``{name}[, seq = N][, op_id = N][, sizes = [[8, 16], []]][, input_op_ids = ...]`` (older
  torch wrote ``stashed seq = N`` on backward functions). The op is read under its own name
  (``aten::addmm``), category ``cpu_op`` as Kineto records it, the sequence number in
  ``sequence`` and the sizes in ``input_dims``; a bare op name (``aten::relu``: no sequence
  number, no shapes recorded) is an op too when it reads like one (``namespace::name``,
  ``autograd::engine::evaluate_function: X``, ``XBackward0``).
- pyprof / DLProf (``pyprof.init()``): three nested ranges per wrapped call, each the ``str()``
  of a Python dict: ``{'traceMarker': [file:line, ...], 'funcStack': '/A::forward/.../op'}``
  around ``{'mod': ..., 'strRepr': ...}`` (modules with an ``extra_repr`` only) around
  ``{'mod': 'torch.nn.functional', 'op': 'conv2d', 'args': [...]}``. Read with
  ``ast.literal_eval``, never ``eval``. The trace-marker range becomes the call's frame (category
  ``python_function``, ``{file}({line}): {function}``, its innermost frame outside installed
  packages, the form Kineto's ``with_stack`` frames take); the argument range becomes the op
  (``torch.nn.functional.conv2d``, ``user_annotation``, tensor shapes in ``input_dims``); the
  module range is folded into the call (counted in ``skipped``). ``funcStack``'s
  ``Class::forward`` frames give module calls: ops rows ``nn.Module: {path} ({Class})``,
  category ``user_annotation``, the form a capture writes, each spanning the calls whose stack
  passes through it (nested). A marker that does not parse keeps its text and is counted.
"""

from __future__ import annotations

import ast
import json
import re
from collections import Counter
from typing import Any

import numpy as np

from gpuprofile.importers.module_calls import Chain, module_calls
from gpuprofile.trace.model import NO_ID

Columns = dict[str, Any]

_EMIT_NVTX = re.compile(
    r"^(?P<name>[^,]+?)"
    r"(?:, (?:stashed )?seq = (?P<seq>-?\d+))?"
    r"(?:, op_id = (?P<op_id>\d+))?"
    r"(?:, sizes = (?P<sizes>\[.*?\]))?"
    r"(?:, input_op_ids = (?P<inputs>.*))?$"
)
# A bare op name: ``aten::addmm``, ``c10d::allreduce_``, ``mylib::op.overload``, the autograd
# engine's ``autograd::engine::evaluate_function: MmBackward0``, a backward node.
_OP_NAME = re.compile(
    r"^(?:[A-Za-z_]\w*::[A-Za-z_][\w.]*"
    r"|autograd::engine::evaluate_function: \w+"
    r"|\w+Backward\d*)$"
)
_MARKER = re.compile(r"^\{\s*['\"](?:traceMarker|funcStack|mod|op|args)['\"]\s*:")
# A marker past this size is not parsed (literal_eval of a huge text is slow and deep).
_MAX_MARKER = 200_000
_FRAME_AT = re.compile(r"^(?P<file>.+):(?P<line>\d+)$")
_INSTALLED = re.compile(r"(?:^|/)(?:site-packages|dist-packages|lib/python3(?:\.\d+)?)/")
_FORWARD = re.compile(r"^(?P<cls>[A-Za-z_]\w*)::forward$")
_CALL_SITE = re.compile(r"^(?P<frame>.*?)\((?P<n>\d+)\)$")
# pyprof names a torch.Tensor method's module "Tensor".
_MOD_NAMES = {"Tensor": "torch.Tensor"}

FOLDED = "pyprof module markers (folded into their call's op)"
UNREADABLE = "pyprof markers that do not parse (kept as their text)"
EMIT_NVTX_SIZES = "emit_nvtx ranges with sizes that do not parse (op kept, shapes not)"


def torch_nvtx(columns: Columns, pid: np.ndarray, skipped: Counter[str]) -> tuple[Columns, Any]:
    """NVTX ops columns (name, category, start_ns, dur_ns, tid, pid) with emit_nvtx and pyprof
    ranges read as above; returns the new columns (rows added for module calls, pyprof module
    markers dropped) and their process ids."""
    names = list(columns["name"])
    n = len(names)
    if not any(_torch_text(name) for name in names):
        return columns, pid
    category = list(columns["category"])
    sequence = np.full(n, NO_ID, np.int64)
    dims: list[str | None] = [None] * n
    chains: dict[int, Chain] = {}
    keep = np.ones(n, bool)
    # Names repeat (a loop's ops, every call's module marker): each text is read once, and
    # what it adds to ``skipped`` is counted per row.
    parsed: dict[str, tuple[tuple[str, Any] | None, Counter[str]]] = {}
    for row, text in enumerate(names):
        if not _torch_text(text):
            continue
        if text not in parsed:
            said: Counter[str] = Counter()
            parsed[text] = (_read(text, said), said)
        found, said = parsed[text]
        skipped.update(said)
        if found is None:
            continue
        kind, value = found
        if kind == "op":
            names[row], category[row], sequence[row], dims[row] = value
        elif kind == "frame":
            names[row], category[row] = value[0], "python_function"
            if value[1]:
                chains[row] = value[1]
        elif kind == "call":
            names[row], dims[row] = value[0], value[1]
        else:
            keep[row] = False
    if (folded := int((~keep).sum())) > 0:
        skipped[FOLDED] += folded
    out: Columns = {
        "name": names,
        "category": category,
        "sequence": sequence,
        "input_dims": dims,
        **{k: np.asarray(columns[k]) for k in ("start_ns", "dur_ns", "tid")},
        "pid": np.asarray(pid),
    }
    out = {k: _take(v, keep) for k, v in out.items()}
    kept_rows = np.flatnonzero(keep)
    modules = module_calls(
        {int(np.searchsorted(kept_rows, r)): c for r, c in chains.items()},
        out["start_ns"], out["dur_ns"], out["pid"], out["tid"],
    )  # fmt: skip
    return _with_rows(out, modules)


def _torch_text(text: str) -> bool:
    return (
        ", seq = " in text
        or ", sizes = " in text
        or ", op_id = " in text
        or (text.startswith("{") or _OP_NAME.match(text) is not None)
    )


def _read(text: str, skipped: Counter[str]) -> tuple[str, Any] | None:
    """("op", (name, category, sequence, input_dims)) for an emit_nvtx range, the marker's
    reading for a pyprof marker, None for text of another kind."""
    if text.startswith("{"):
        return _marker(text, skipped)
    # The lazy sizes group makes a match quadratic in the text: torch's texts are short.
    found = _EMIT_NVTX.match(text) if len(text) <= _MAX_MARKER else None
    if found is None or found["name"] == text:
        # No suffix: an op only by its name's form (torch writes ", op_id = N" on every range
        # since 1.12, so a bare name is an older torch's or a user's text).
        return ("op", (text, "cpu_op", NO_ID, None)) if _OP_NAME.match(text) else None
    name = found["name"].strip()
    # A record_function range of the user's ("## forward ##, op_id = 5") keeps its category.
    category = "cpu_op" if _OP_NAME.match(name) else "user_annotation"
    seq = int(found["seq"]) if found["seq"] is not None else NO_ID
    return "op", (name, category, seq if seq >= 0 else NO_ID, _sizes(found["sizes"], skipped))


def _sizes(text: str | None, skipped: Counter[str]) -> str | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not (isinstance(value, list) and all(_is_shape(v) for v in value)):
        skipped[EMIT_NVTX_SIZES] += 1
        return None
    return json.dumps(value, separators=(", ", ": "))


def _is_shape(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in value
    )


def _marker(text: str, skipped: Counter[str]) -> tuple[str, Any] | None:
    """A pyprof marker: ("frame", (name, module chain)), ("call", (name, input_dims)),
    ("fold", None); None for a dict of another kind or a text that does not parse (counted
    when it looked like a marker)."""
    looks = _MARKER.match(text) is not None
    try:
        value = ast.literal_eval(text) if len(text) <= _MAX_MARKER else None
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        value = None
    if not isinstance(value, dict):
        if looks:
            skipped[UNREADABLE] += 1
        return None
    if isinstance(value.get("traceMarker"), list):
        stack = value.get("funcStack")
        chain = module_chain(stack) if isinstance(stack, str) else []
        return "frame", (_frame_name(value["traceMarker"], stack), chain)
    mod, op = value.get("mod"), value.get("op")
    if isinstance(mod, str) and isinstance(op, str):
        return "call", (f"{_MOD_NAMES.get(mod, mod)}.{op}", _arg_dims(value.get("args")))
    if isinstance(mod, str) and "strRepr" in value:
        return "fold", None
    if looks:
        skipped[UNREADABLE] += 1
    return None


def _frame_name(trace: list[Any], stack: Any) -> str:
    """``{file}({line}): {function}`` of the innermost frame outside installed packages (the
    innermost of all when every frame is installed); the function is known only for the
    calling frame, from the last ``Class::function`` of funcStack before the op."""
    frames = [f for f in (_FRAME_AT.match(str(t)) for t in trace) if f is not None]
    if not frames:
        return "pyprof call (no frames recorded)"
    outside = [i for i, f in enumerate(frames) if not _INSTALLED.search(f["file"])]
    at = outside[-1] if outside else len(frames) - 1
    function = ""
    if at == len(frames) - 1 and isinstance(stack, str):
        parts = [p for p in stack.split("/") if p]
        if len(parts) >= 2:
            caller = _CALL_SITE.sub(r"\g<frame>", parts[-2])
            function = caller.rsplit("::", 1)[-1]
    return f"{frames[at]['file']}({frames[at]['line']}): {function}"


def module_chain(stack: str) -> Chain:
    """funcStack -> [(path, class)] of its ``Class::forward`` frames, outermost first. DLProf
    tells two call sites of one function apart with a "(k)" suffix on a frame between two
    forwards; the module after it gets ``_k`` (``Net.Block_2.Linear``)."""
    chain: Chain = []
    site = ""
    path = ""
    for part in stack.split("/"):
        suffix = _CALL_SITE.match(part)
        frame = suffix["frame"] if suffix else part
        if suffix:
            site = f"_{suffix['n']}"
        forward = _FORWARD.match(frame)
        if forward is None:
            continue
        segment = forward["cls"] + site
        path = f"{path}.{segment}" if path else segment
        chain.append((path, forward["cls"]))
        site = ""
    return chain


def _arg_dims(args: Any) -> str | None:
    """pyprof's arguments as Kineto's Input Dims: a tensor's shape, [] for anything else."""
    if not isinstance(args, list):
        return None
    shapes: list[list[int]] = []
    for arg in args:
        shape = arg.get("shape") if isinstance(arg, dict) else None
        if isinstance(arg, dict) and arg.get("type") in ("tensor", "ndarray") and shape:
            dims = list(shape) if isinstance(shape, list | tuple) else []
            shapes.append(dims if _is_shape(dims) else [])
        else:
            shapes.append([])
    return json.dumps(shapes, separators=(", ", ": "))


def _with_rows(out: Columns, modules: Columns) -> tuple[Columns, Any]:
    """The ops with the module-call rows added, all in time order; at an equal start and
    length a module call comes first, so nesting makes it the parent of its one call."""
    m = len(modules["name"])
    if m:
        out = {
            "name": modules["name"] + list(out["name"]),
            "category": ["user_annotation"] * m + list(out["category"]),
            "sequence": np.r_[np.full(m, NO_ID, np.int64), out["sequence"]],
            "input_dims": [None] * m + list(out["input_dims"]),
            **{k: np.r_[modules[k], out[k]] for k in ("start_ns", "dur_ns", "tid", "pid")},
        }
    first = np.r_[np.zeros(m, np.int8), np.ones(len(out["start_ns"]) - m, np.int8)]
    order = np.lexsort((first, -out["dur_ns"], out["start_ns"]))
    out = {k: _take(v, order) for k, v in out.items()}
    return out, out["pid"]


def _take(values: Any, index: np.ndarray) -> Any:
    if isinstance(values, np.ndarray):
        return values[index]
    if index.dtype == bool:
        return [v for v, k in zip(values, index, strict=True) if k]
    return [values[i] for i in index]
