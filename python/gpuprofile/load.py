"""gpuprofile.load: read a trace someone shared into a Profile."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gpuprofile.hardware.model import Hardware
from gpuprofile.importers.kineto import load_kineto
from gpuprofile.profiles import Profile


def load(
    path: str | Path | Sequence[str | Path],
    *,
    hardware: Hardware | None = None,
    rank_regex: str | None = None,
) -> Profile:
    """Read a PyTorch profiler / Kineto trace, or a job's traces, into a Profile.

    Parameters:
        path: a ``.json`` or ``.json.gz`` trace; a job (one file per rank): a directory, a
            list of files, or a glob pattern (``"run/rank*.json.gz"``).
        hardware: the roofs to analyse against; None: the datasheet of the device named in
            the trace (or, e.g., ``gpuprofile.calibrate()`` on the machine it came from).
        rank_regex: for a job whose traces do not declare their rank (distributedInfo): the
            rank in each file name, one group of digits; default ``rank3``, ``worker3``.

    Raises:
        TraceFormatError: a file is missing, unreadable or not a trace, or a job's files are
            not one job (a rank twice, different world sizes); the message names the file and
            the problem.
    """
    return Profile(load_kineto(path, rank_regex=rank_regex), hardware=hardware)
