"""TensorRT trtexec --exportProfile JSON (with --exportTimes and --exportLayerInfo beside it)."""

from __future__ import annotations

from pathlib import Path

from gpuprofile.errors import TraceFormatError
from gpuprofile.trace.model import Trace


def load_tensorrt(path: str | Path) -> Trace:
    """Read one file of this format into a Trace."""
    raise TraceFormatError(path, "this format is not read yet")
