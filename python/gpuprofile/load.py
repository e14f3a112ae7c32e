"""gpuprofile.load: read a trace someone shared into a Profile."""

from __future__ import annotations

from pathlib import Path

from gpuprofile.errors import TraceFormatError
from gpuprofile.hardware.model import Hardware
from gpuprofile.importers.kineto import load_kineto
from gpuprofile.profiles import Profile


def load(path: str | Path, *, hardware: Hardware | None = None) -> Profile:
    """Read a PyTorch profiler / Kineto trace into a Profile.

    Parameters:
        path: a ``.json`` or ``.json.gz`` trace, or a directory holding one file per rank.
        hardware: the roofs to analyse against; None: the datasheet of the device named in
            the trace (or, e.g., ``gpuprofile.calibrate()`` on the machine it came from).

    Raises:
        TraceFormatError: the file is missing, unreadable or not a trace (the message names
            the file and the problem).
    """
    path = Path(path)
    if not path.exists():
        raise TraceFormatError(path, "no such file or directory")
    return Profile(load_kineto(path), hardware=hardware)
