"""gpuprofile.load: read a trace someone shared into a Profile."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gpuprofile.errors import TraceFormatError
from gpuprofile.importers.kineto import load_kineto
from gpuprofile.result import Profile

if TYPE_CHECKING:
    from gpuprofile.hardware.model import Hardware


def load(path: str | Path, *, hardware: Hardware | None = None) -> Profile:
    """Read a PyTorch profiler / Kineto trace (.json, .json.gz, or a directory of rank files).

    The roofs are the datasheet's for the device named in the trace unless ``hardware`` is
    given (for example ``gpuprofile.calibrate()`` on the machine the trace came from).
    """
    path = Path(path)
    if not path.exists():
        raise TraceFormatError(path, "no such file or directory")
    return Profile(load_kineto(path), hardware=hardware)
