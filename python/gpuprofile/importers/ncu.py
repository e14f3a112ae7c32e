"""Nsight Compute CSV (ncu --csv, details or raw page)."""

from __future__ import annotations

from pathlib import Path

from gpuprofile.errors import TraceFormatError
from gpuprofile.trace.model import Trace


def load_ncu(path: str | Path) -> Trace:
    """Read a Nsight Compute CSV (ncu --csv, details or raw page) into a Trace."""
    raise TraceFormatError(path, "this format is not read yet")
