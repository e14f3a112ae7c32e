"""Which framework wrote the profiled program, so that fixes speak its language.

The rule, from the trace's source format (``trace.meta.source.format``):

- ``kineto`` / ``capture`` (PyTorch's profiler): ``"pytorch"``;
- ``xplane`` (JAX / XLA's profiler): ``"jax"``;
- ``tensorrt`` (a TensorRT engine profile): ``"tensorrt"``;
- anything else, Nsight Systems / Compute (``nsys`` / ``ncu``) included, which may profile any
  CUDA program: ``"pytorch"`` when the trace shows PyTorch (the capture recorded a torch
  version; an op or NVTX range named ``aten::...``; a kernel whose name contains
  ``at::native`` or ``at::cuda``; a thread named ``pt_autograd...`` or ``pt_main_thread``),
  else ``"cuda"`` (a C/C++/Fortran CUDA application: CUDA runtime advice).
"""

from __future__ import annotations

from typing import Literal

import pandas as pd

from gpuprofile.trace.model import Trace

Framework = Literal["pytorch", "jax", "tensorrt", "cuda"]
FRAMEWORKS: tuple[Framework, ...] = ("pytorch", "jax", "tensorrt", "cuda")

_BY_FORMAT: dict[str, Framework] = {
    "kineto": "pytorch",
    "capture": "pytorch",
    "xplane": "jax",
    "tensorrt": "tensorrt",
}
_TORCH_KERNEL = r"at::native|at::cuda"
_TORCH_THREAD = ("pt_autograd", "pt_main_thread")


def framework(trace: Trace) -> Framework:
    """The framework of the profiled program (see the module docstring for the rule). Not
    memoised: detectors read it once, as ``Analysis.framework``."""
    known = _BY_FORMAT.get(trace.meta.source.format)
    if known is not None:
        return known
    return "pytorch" if _shows_pytorch(trace) else "cuda"


def _shows_pytorch(trace: Trace) -> bool:
    if "torch" in trace.meta.framework:
        return True
    if any(_names(trace.ops).str.startswith("aten::")):
        return True
    if any(_names(trace.kernels).str.contains(_TORCH_KERNEL, regex=True)):
        return True
    return any(
        name.startswith(_TORCH_THREAD)
        for rank in trace.meta.ranks.values()
        for name in rank.thread_names.values()
    )


def _names(frame: pd.DataFrame) -> pd.Series:
    """The distinct names of a table's rows, as strings (one check per name, not per row)."""
    return pd.Series(frame["name"].dropna().unique(), dtype=object).astype(str)
