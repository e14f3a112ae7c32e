"""Nsight Systems SQLite export (nsys export --type sqlite), or an nsys stats CSV."""

from __future__ import annotations

from pathlib import Path

from gpuprofile.errors import TraceFormatError
from gpuprofile.trace.model import Trace


def load_nsys(path: str | Path) -> Trace:
    """Read one file of this format into a Trace."""
    raise TraceFormatError(path, "this format is not read yet")
