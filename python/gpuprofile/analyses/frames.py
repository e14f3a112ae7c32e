"""The user's lines: each op's and kernel's innermost frame of the user's own code, with the
frames of torch, ipykernel, asyncio and other installed packages collapsed.

With ``with_stack``, Kineto records Python frames as ops rows of category ``python_function``
named ``{path}({line}): {function}`` (``model.py(42): forward``,
``/tmp/ipykernel_10077/3555353563.py(62): forward``), C calls as ``<built-in method ...>``, and
module calls as ``nn.Module: Linear_0`` (module calls, not frames). The line in the name is where
the frame stood when torch saw it: a function called while profiling shows its first line
(``def``), a frame already running when profiling started shows the line it was on.

An op's line is the line its innermost user frame U stood on when the op ran: the caller line
(``ops.caller_line``) of the call just below U on the op's path up (a library function, a
built-in such as ``torch.mm`` or ``Tensor.relu``, a module call), or of the op itself when it
sits directly under U (``x @ w``, ``a + 1``: operators make no Python call). gpuprofile's
capture records these lines (capture/line_ranges.py); where none was recorded (another
profiler's trace, a debugger's trace function in the way) the op keeps the line in U's name,
its ``def``.

Library or the user's, decided from the path text alone (the trace may come from another
machine, whose installed packages are not ours to ask), first rule that applies:
- a notebook cell's code (ipykernel's ``ipykernel_<pid>/<hash>.py``, terminal IPython's
  ``<ipython-input-5-...>``): the user's;
- ``<frozen ...>``, ``<built-in ...>`` and any other ``<...>`` name: library;
- a path through ``site-packages/``, ``dist-packages/`` or a ``lib/python3.X/`` folder: library;
- a path with a folder named like a package that runs around or under user code (torch,
  ipykernel, IPython, tornado, traitlets, zmq, jupyter_client, gpuprofile, pytest, transformers,
  ...: LIBRARY_PACKAGES): library;
- a relative path (torch writes paths relative to their ``sys.path`` entry) whose first part is a
  standard-library module (``contextlib.py``, ``asyncio/events.py``, ``runpy.py``,
  ``threading.py``): library. A user's own file named like a standard module reads as library;
- anything else is the user's.
torch writes a path relative to the ``sys.path`` entry it lies under, site-packages included,
so an installed package outside LIBRARY_PACKAGES (``somepkg/mod.py``) reads as the user's.
A notebook cell's frame has ``file`` "cell [5]" (ipykernel's temporary file mapped to its cell
through ``TraceMeta.cells``; "cell" when the number is unknown), a file's its path as written.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from gpuprofile.analyses.lookups import innermost_everywhere
from gpuprofile.analyses.names import categorical, codes
from gpuprofile.trace.model import NO_ID

if TYPE_CHECKING:
    from gpuprofile.analyses.lookups import Lookups

FRAME = re.compile(r"^(?P<path>.+)\((?P<line>\d+)\): (?P<function>.*)$")
_CELL_FILE = re.compile(r"(?:^|/)(ipykernel_\d+/[^/]+\.py)$")
# Terminal IPython's name for a cell's code (its own compiler, not ipykernel's).
_IPYTHON_INPUT = re.compile(r"^<ipython-input-(?P<count>\d+)-[0-9a-f]+>$")
_INSTALLED = re.compile(r"(?:^|/)(?:site-packages|dist-packages|lib/python3(?:\.\d+)?)/")
# Packages whose frames wrap the user's code (the kernel, its event loop, the profiler itself)
# or sit under it (torch): any folder of theirs in a path marks a library frame.
LIBRARY_PACKAGES = frozenset(
    {
        "torch",
        "torchvision",
        "torchaudio",
        "functorch",
        "triton",
        "ipykernel",
        "IPython",
        "ipywidgets",
        "anywidget",
        "jupyter_client",
        "jupyter_core",
        "tornado",
        "traitlets",
        "zmq",
        "comm",
        "debugpy",
        "gpuprofile",
        "numpy",
        "pandas",
        # Launchers and frameworks that call the user's code: with their site-packages folder
        # stripped by torch, only their name tells them apart from the user's own folders.
        "_pytest",
        "pytest",
        "pluggy",
        "hydra",
        "fire",
        "click",
        "typer",
        "tqdm",
        "accelerate",
        "lightning",
        "pytorch_lightning",
        "transformers",
        "diffusers",
        "deepspeed",
        "vllm",
        "jax",
        "flax",
        "nbclient",
        "jupyter_server",
    }
)
_STDLIB = frozenset(sys.stdlib_module_names)


@dataclass(frozen=True)
class SourceLine:
    file: str  # "cell [5]", "cell", or a file's path
    line: int
    function: str

    @property
    def label(self) -> str:
        """``cell [5] line 12`` for a notebook cell, ``model.py:42`` for a file."""
        if self.file.startswith("cell"):
            return f"{self.file} line {self.line}"
        return f"{self.file.rsplit('/', 1)[-1]}:{self.line}"


@dataclass(frozen=True)
class Sources:
    """The innermost user frame of every op and kernel, in table row order."""

    lines: tuple[SourceLine, ...]
    op_source: np.ndarray  # int32 per ops row: index into lines, -1: none
    kernel_source: np.ndarray  # int32 per kernels row, from its launching op


def is_library_path(path: str) -> bool:
    """Whether a frame's file (as the trace writes it) belongs to a library (rules above)."""
    if _CELL_FILE.search(path) or _IPYTHON_INPUT.match(path):
        return False
    if path.startswith("<"):
        return True
    if _INSTALLED.search(path):
        return True
    parts = path.split("/")
    if any(part in LIBRARY_PACKAGES for part in parts[:-1]):
        return True
    if path.startswith("/"):
        return False
    first = parts[0].removesuffix(".py")
    return first in _STDLIB or first in LIBRARY_PACKAGES


def is_user_frame(name: str) -> bool:
    """Whether an op name is a Python frame of the user's code."""
    found = FRAME.match(name)
    return found is not None and not is_library_path(found["path"])


def cell_numbers(cells: dict[str, int]) -> dict[str, int]:
    """TraceMeta.cells keyed by ``ipykernel_<pid>/<hash>.py``, as a frame's path ends, whatever
    folder the kernel kept its files in and however torch shortened the path."""
    out = {}
    for path, count in cells.items():
        found = _CELL_FILE.search(path)
        out[found[1] if found else path] = count
    return out


def source_line(name: str, cells: dict[str, int]) -> SourceLine | None:
    """The SourceLine of a user frame's name (None for any other name); cells: cell_numbers."""
    found = FRAME.match(name)
    if found is None or is_library_path(found["path"]):
        return None
    path = found["path"]
    cell, terminal = _CELL_FILE.search(path), _IPYTHON_INPUT.match(path)
    if cell is not None:
        count = cells.get(cell[1])
        path = "cell" if count is None else f"cell [{count}]"
    elif terminal is not None:
        path = f"cell [{int(terminal['count'])}]"
    return SourceLine(file=path, line=int(found["line"]), function=found["function"])


def frame_title(name: str, cells: dict[str, int]) -> str:
    """How a frame's name reads in details and lanes: ``cell [5] line 12: forward`` for a cell,
    the name as recorded otherwise; cells: cell_numbers."""
    found = FRAME.match(name)
    if found is None or not (
        _CELL_FILE.search(found["path"]) or _IPYTHON_INPUT.match(found["path"])
    ):
        return name
    line = source_line(name, cells)
    return name if line is None else f"{line.label}: {line.function}"


def frame_kinds(names: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Per row of a python_function name column: (a user frame, a library frame). A row that is
    neither is a module call (``nn.Module: ...``) or a name of another shape."""
    codes, distinct = pd.factorize(names.astype(object), use_na_sentinel=False)
    frames = [FRAME.match(str(name)) for name in distinct]
    library = np.array(
        [
            is_library_path(f["path"]) if f is not None else str(n).startswith("<")
            for n, f in zip(distinct, frames, strict=True)
        ],
        bool,
    )
    user = np.array([f is not None for f in frames], bool) & ~library
    return user[codes], library[codes]


def _call_lines(ops: pd.DataFrame, parents: np.ndarray, innermost: np.ndarray) -> np.ndarray:
    """Per ops row, the line of its innermost user frame U it stands on: the caller line of the
    frame just below U on its path up (the call U made: a library function, a built-in, a
    module), else -1 (directly under U, no line recorded, or U itself)."""
    rows = np.arange(len(ops))
    # Just below its own innermost user frame: a row U itself is not (its innermost is itself).
    below = (parents >= 0) & (innermost >= 0) & (innermost != rows)
    below[below] = parents[below] == innermost[below]
    under = np.where(
        innermost >= 0, innermost_everywhere(below, parents, ops["depth"].to_numpy()), -1
    )
    caller = ops["caller_line"].to_numpy()
    return np.where(under >= 0, caller[np.maximum(under, 0)], -1).astype(np.int64)


def _at_line(frame: SourceLine | None, line: int) -> SourceLine:
    """The frame (a user frame: never None here) at the line an op stands on, its def line
    when unknown (-1)."""
    assert frame is not None
    return frame if line < 1 else SourceLine(frame.file, line, frame.function)


def attribute_sources(analysis: Lookups) -> Sources:
    """Every op's and kernel's innermost user frame (Analysis.sources); empty without stacks."""
    trace = analysis.trace
    ops, kernels = trace.ops, trace.kernels
    op_source = np.full(len(ops), -1, np.int32)
    kernel_source = np.full(len(kernels), -1, np.int32)
    is_frame = (ops["category"] == "python_function").to_numpy()
    if not is_frame.any():
        return Sources(lines=(), op_source=op_source, kernel_source=kernel_source)
    # One decision per distinct name: a million frames have a few thousand names.
    frame_rows = np.flatnonzero(is_frame)
    # The names' category codes, not the names: a column of 10^5 texts costs more to build.
    names = categorical(ops["name"])
    frame_codes, distinct = pd.factorize(codes(names)[frame_rows])
    texts = names.cat.categories.astype(object)
    cells = cell_numbers(trace.meta.cells)
    found = [source_line(str(texts[c]) if c >= 0 else "", cells) for c in distinct.tolist()]
    row_line = np.full(len(ops), -1, np.int32)  # per user frame row: index into found
    name_found = np.array([-1 if ln is None else i for i, ln in enumerate(found)], np.int32)
    row_line[frame_rows] = name_found[frame_codes] if len(frame_codes) else []
    parents = analysis.op_parents
    innermost = innermost_everywhere(row_line >= 0, parents, ops["depth"].to_numpy())
    has = np.flatnonzero(innermost >= 0)
    # Each op's (frame name, line it stands on), one SourceLine per distinct pair.
    line_no = _call_lines(ops, parents, innermost)[has]
    keys = row_line[innermost[has]].astype(np.int64) << 32 | (line_no + 1)
    distinct_keys, inverse = _sorted_codes(keys)
    at_lines = [
        _at_line(found[key >> 32], (key & 0xFFFFFFFF) - 1) for key in distinct_keys.tolist()
    ]
    lines = tuple(dict.fromkeys(at_lines))
    where = {line: i for i, line in enumerate(lines)}
    key_source = np.array([where[line] for line in at_lines], np.int32)
    op_source[has] = key_source[inverse.reshape(-1)] if len(has) else []
    if len(kernels):
        op_ids = kernels["op_id"].to_numpy()
        rows = analysis.id_index("ops").get_indexer(pd.Index(op_ids))
        launched = (op_ids != NO_ID) & (rows >= 0)
        kernel_source[launched] = op_source[rows[launched]]
    return Sources(lines=lines, op_source=op_source, kernel_source=kernel_source)


def _sorted_codes(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(keys, return_inverse=True) by hashing, then sorting the few distinct keys
    (the rows are 10^5, the lines they stand on a few hundred)."""
    found, distinct = pd.factorize(keys)
    order = np.argsort(distinct, kind="stable")
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    return np.asarray(distinct)[order], rank[found]
