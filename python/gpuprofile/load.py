"""gpuprofile.load: read a trace someone shared into a Profile."""

from __future__ import annotations

from pathlib import Path

from gpuprofile.errors import TraceFormatError
from gpuprofile.importers.kineto import load_kineto
from gpuprofile.result import Profile


def load(path: str | Path) -> Profile:
    """Read a PyTorch profiler / Kineto trace (.json, .json.gz, or a directory of rank files)."""
    path = Path(path)
    if not path.exists():
        raise TraceFormatError(path, "no such file or directory")
    return Profile(load_kineto(path))
