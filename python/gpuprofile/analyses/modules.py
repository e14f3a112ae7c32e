"""The program behind the events: which nn.Module call and which phase (forward, backward,
optimizer, other) each op and kernel belongs to.

CONTRACT STUB (issue 25): the shape below is what every other part builds against; the
implementation fills it. Module calls are ops rows:
- a capture's: category ``user_annotation``, name ``nn.Module: {path} ({Type})``, the path from
  the outermost module called (``Transformer.layers.3.mlp``);
- torch's own (``with_stack``): category ``python_function``, name ``nn.Module: {Class}_{N}``,
  the path the chain of enclosing module calls joined with "." (``Transformer_0.Layer_3.MLP_3``).
Backward work belongs to the module whose forward op has its autograd sequence number.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from gpuprofile.analyses.lookups import Lookups

NO_MODULE = "(no module)"
# Phase codes of op_phase / kernel_phase.
PHASES = ("other", "forward", "backward", "optimizer")
OTHER, FORWARD, BACKWARD, OPTIMIZER = range(4)
MODULE_PREFIX = "nn.Module: "


@dataclass(frozen=True)
class Modules:
    """Module and phase of every op and kernel of a trace, in table row order."""

    paths: tuple[str, ...]  # module index -> path
    types: tuple[str, ...]  # module index -> class name ("" when unknown)
    op_module: np.ndarray  # int32 per ops row: innermost module index, -1: none
    op_phase: np.ndarray  # int8 per ops row: a PHASES index
    kernel_module: np.ndarray  # int32 per kernels row, from its launching op
    kernel_phase: np.ndarray  # int8 per kernels row
    # One row per module call: op (its ops row id), module (index), rank, start_ns, end_ns.
    calls: pd.DataFrame


def attribute_modules(analysis: Lookups) -> Modules:
    """Every op's and kernel's module and phase (Analysis.modules)."""
    trace = analysis.trace
    ops, kernels = len(trace.ops), len(trace.kernels)
    return Modules(
        paths=(),
        types=(),
        op_module=np.full(ops, -1, np.int32),
        op_phase=np.zeros(ops, np.int8),
        kernel_module=np.full(kernels, -1, np.int32),
        kernel_phase=np.zeros(kernels, np.int8),
        calls=pd.DataFrame(
            {c: pd.Series(dtype="int64") for c in ("op", "module", "rank", "start_ns", "end_ns")}
        ),
    )
