"""gpuprofile.load: read a trace someone shared into a Profile."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuprofile.errors import TraceFormatError
from gpuprofile.hardware.model import Hardware
from gpuprofile.importers.kineto import load_kineto
from gpuprofile.profiles import Profile


def load(
    path: str | Path,
    *,
    hardware: Hardware | None = None,
    workers: int | None = None,
    scheduler: Any = None,
) -> Profile:
    """Read a PyTorch profiler / Kineto trace into a Profile.

    Parameters:
        path: a ``.json`` or ``.json.gz`` trace, or a directory holding one file per rank.
        hardware: the roofs to analyse against; None: the datasheet of the device named in
            the trace (or, e.g., ``gpuprofile.calibrate()`` on the machine it came from).
        workers: processes that read a directory's ranks side by side; None: this machine's
            cores, or this process when the files are small (under 128 MiB of JSON in all);
            1: this process.
        scheduler: a Dask scheduler address (``"tcp://host:8786"``) or a
            ``distributed.Client`` to read the ranks on (``pip install 'gpuprofile[dask]'``);
            its workers must see ``path``. The Trace is the same as one read here.

    Raises:
        TraceFormatError: the file is missing, unreadable or not a trace (the message names
            the file and the problem), wherever it was read.
        WorkerError: a worker process died, or the scheduler cannot be reached.
    """
    path = Path(path)
    if not path.exists():
        raise TraceFormatError(path, "no such file or directory")
    trace = load_kineto(path, workers=workers, scheduler=scheduler)
    return Profile(trace, hardware=hardware)
