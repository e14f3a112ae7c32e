"""Module ranges of ``autonvtx`` (pip ``autonvtx``, NeMo Automodel's ``nemo_automodel.autonvtx``)
in NVTX, renamed to the module calls of the Trace contract.

Both patch every module with forward pre/post hooks that push and pop a range named after the
module: the root its class name (``Transformer``), each child ``{attribute}: {Class}``, the
attribute being its name in its parent's ``named_children()`` (``0: Layer``, ``mlp: MLP``). A
child range whose enclosing ranges are child ranges up to a bare class-name range is read as a
module call: ``nn.Module: {root}.{attr}.{attr} ({Class})`` (``Transformer.0.mlp``), the root
``nn.Module: {root} ({root})``. A container never called (``nn.ModuleList``) has no range, so
its attribute is missing from the path (``Transformer.0``, not ``Transformer.layers.0``).
NeMo's backward hooks push the same names on the autograd thread: those read as calls too.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from gpuprofile.trace.model import MODULE_PREFIX, NO_ID
from gpuprofile.trace.nesting import nest

_CHILD = re.compile(r"^(?P<attr>[\w.]+): (?P<cls>[A-Za-z_]\w*)$")
_ROOT = re.compile(r"^[A-Za-z_]\w*$")


def autonvtx_modules(names: list[str], columns: dict[str, Any]) -> list[str]:
    """The ops' names with autonvtx module ranges renamed (others as they are); columns gives
    start_ns, dur_ns, pid and tid of the same rows."""
    child = [_CHILD.match(n) for n in names]
    if not any(child):
        return names
    start = np.asarray(columns["start_ns"], np.int64)
    end = start + np.asarray(columns["dur_ns"], np.int64)
    thread = pd.MultiIndex.from_arrays(
        [np.asarray(columns["pid"]), np.asarray(columns["tid"])]
    ).factorize()[0]
    parent, _ = nest(thread, start, end)
    out = list(names)
    for row, found in enumerate(child):
        if found is None:
            continue
        attrs = [found["attr"]]
        up = int(parent[row])
        while up != NO_ID and child[up] is not None:
            attrs.append(child[up]["attr"])  # type: ignore[index]
            up = int(parent[up])
        if up == NO_ID or not _ROOT.match(names[up]):
            continue  # "Epoch: Train" outside any class-named range: the user's own text
        root = names[up]
        path = ".".join([root, *reversed(attrs)])
        out[row] = f"{MODULE_PREFIX}{path} ({found['cls']})"
        out[up] = f"{MODULE_PREFIX}{root} ({root})"
    return out
