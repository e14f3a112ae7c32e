"""JAX/XLA XPlane protobuf (*.xplane.pb, or a plugins/profile/<run>/ directory)."""

from __future__ import annotations

from pathlib import Path

from gpuprofile.errors import TraceFormatError
from gpuprofile.trace.model import Trace


def load_xplane(path: str | Path) -> Trace:
    """Read one file of this format into a Trace."""
    raise TraceFormatError(path, "this format is not read yet")
