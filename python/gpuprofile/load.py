"""gpuprofile.load: read a trace someone shared into a Profile."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gpuprofile.collector import collector_paused
from gpuprofile.hardware.model import Hardware
from gpuprofile.importers.formats import read_trace
from gpuprofile.importers.kineto import load_kineto
from gpuprofile.importers.source import byte_limit, check_file, reading
from gpuprofile.profiles import Profile, RunRef, resolve_side


def load(
    path: str | Path | Sequence[str | Path],
    *,
    hardware: Hardware | None = None,
    rank_regex: str | None = None,
    workers: int | None = None,
    scheduler: Any = None,
    ncu: str | Path | None = None,
    baseline: RunRef | None = None,
    max_bytes: int | str | None = None,
) -> Profile:
    """Read a trace, or a job's traces, into a Profile.

    The format is told by the file's content (``profile.trace.meta.source.format`` names it):
    PyTorch profiler / Kineto JSON ("kineto"), an Nsight Systems SQLite export ("nsys"), an
    Nsight Compute CSV ("ncu"), a trtexec ``--exportProfile`` JSON ("tensorrt"), a JAX/XLA
    XPlane ("xplane").

    Parameters:
        path: one trace file of any of those formats; a JAX profile directory (``*.xplane.pb``
            inside); a job of Kineto traces (one file per rank): a directory, a list of files,
            or a glob pattern (``"run/rank*.json.gz"``).
        hardware: the roofs to analyse against; None: the datasheet of the device named in
            the trace (or, e.g., ``gpuprofile.calibrate()`` on the machine it came from).
        rank_regex: for a job whose traces do not declare their rank (distributedInfo): the
            rank in each file name, one group of digits; default ``rank3``, ``worker3``.
        workers: processes that read a job's ranks side by side; None: this machine's cores,
            or this process when the files are small (under 128 MiB of JSON in all); 1: this
            process.
        scheduler: a Dask scheduler address (``"tcp://host:8786"``) or a
            ``distributed.Client`` to read the ranks on (``pip install 'gpuprofile[dask]'``);
            its workers must see the files. The Trace is the one a read here gives.
        ncu: an Nsight Compute CSV (``ncu --csv``) of the same program: the trace's kernels
            get the measured FLOPs, DRAM bytes and metrics of its launches, matched by
            kernel name and order of occurrence (the i-th launch of a name in the CSV is the
            i-th kernel of that name in the trace); kernels ncu did not profile keep none,
            and a note in ``trace.meta.notes`` says how many matched.
        baseline: a run to compare with, as ``gpuprofile.diff`` takes it (a Profile, a trace
            path, a run id, label or ``last`` of the history), read before the trace;
            ``report()["baseline"]`` is then the diff against it.
        max_bytes: the most bytes one file may hold, uncompressed (a gzip file is inflated
            no further): a number of bytes, or text such as ``"16GiB"`` or ``"500MB"``; None:
            ``$GPUPROFILE_MAX_BYTES``, else 4 GiB. A larger file raises TraceFormatError.

    Raises:
        TraceFormatError: a file is missing, unreadable (permission denied), not a regular
            file (a FIFO, a device), larger than ``max_bytes``, not a trace, or too deeply
            nested or too large for this machine's memory, or a job's files are not one job
            (a rank twice, different world sizes); the message names the file and the
            problem; wherever the file was read.
        OptionError: ``max_bytes`` is not a size.
        WorkerError: a worker process died, or the scheduler cannot be reached.
        HistoryError: a baseline the history does not hold.
    """
    with byte_limit(max_bytes), collector_paused():
        side = resolve_side(baseline) if baseline is not None else None
        job = {"rank_regex": rank_regex, "workers": workers, "scheduler": scheduler}
        given = path if isinstance(path, str | Path) else ", ".join(str(p) for p in path)
        with reading(given):
            if isinstance(path, str | Path) and os.path.lexists(path):
                trace = read_trace(Path(path), **job)
            else:  # a list of files or a glob: a job's Kineto traces
                trace = load_kineto(path, **job)
        if ncu is not None:
            from gpuprofile.importers.ncu import load_ncu
            from gpuprofile.importers.ncu_join import with_ncu

            with reading(ncu):
                check_file(Path(ncu))
                trace = with_ncu(trace, load_ncu(ncu))
    return Profile(trace, hardware=hardware, baseline=side)
