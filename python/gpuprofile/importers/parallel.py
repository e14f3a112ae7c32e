"""Per-rank work run in this process, in worker processes, or on a Dask cluster.

``map_files(fn, groups)`` calls ``fn(group)`` for each group of files (one rank's files) and
returns the results in order. ``fn`` must be a module-level function (it travels by name).

- In this process: ``workers=1``, or by default when the files are small (below
  ``IN_PROCESS_BELOW_BYTES`` of JSON in all, or one group), where starting processes costs more
  than it saves.
- Worker processes: ``concurrent.futures.ProcessPoolExecutor`` started by forkserver (spawn where
  there is none), never fork: a fork of a process that imported torch, or that runs Jupyter's or
  Dask's threads, copies locks other threads held and can hang the child. Each worker reads one
  rank at a time, so a worker's memory is bounded by the largest rank.
- A Dask cluster: ``scheduler`` an address (``tcp://host:8786``) or a ``distributed.Client``;
  one task per group (``pure=False``), results gathered here.

A ``TraceFormatError`` raised in a worker arrives as the same error naming the same file (not a
pickled traceback); so do an OSError, a RecursionError or a MemoryError met reading a file
(``source.reading``), wherever it ran. The byte limit of this process (``source.max_bytes``)
holds in the workers too. A worker that dies or a scheduler that cannot be reached raises
``WorkerError``.
"""

from __future__ import annotations

import multiprocessing
import os
import socket
import struct
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, TypeVar

from gpuprofile.errors import OptionError, TraceFormatError, WorkerError
from gpuprofile.importers.source import byte_limit, max_bytes, reading

T = TypeVar("T")
Group = Sequence[Path]

# Below this much JSON in all, the default reads in this process. Measured with bench/ranks.py
# on 2 busy cores: a cold forkserver pool costs about 1.3 s to start (0.3 s warm); 8 ranks read
# in 0.6 s here vs 2.2 s by 2 workers at 6 MB of JSON, 3.4 vs 5.6 s at 63 MB, about even at
# 132 MB (4.6-4.9 s here, 3.8-5.9 s by workers), 10.0 vs 7.4 s at 262 MB.
IN_PROCESS_BELOW_BYTES = 128 * 2**20
# How long a Dask scheduler may take to answer before the load gives up.
CONNECT_TIMEOUT_S = 10.0


def map_files(
    fn: Callable[[list[Path]], T],
    groups: Sequence[Group],
    *,
    workers: int | None = None,
    scheduler: Any = None,
) -> list[T]:
    """``[fn(list(group)) for group in groups]``, run where the arguments say.

    Parameters:
        fn: a module-level function of one rank's files.
        groups: the files of each rank.
        workers: worker processes; None: this machine's cores (in this process when the files
            are small); 1: in this process. With ``scheduler``, ignored (the cluster has its own).
        scheduler: a Dask scheduler address or a ``distributed.Client``; None: this machine.
    """
    parts = [list(group) for group in groups]
    if workers is not None and workers < 1:
        raise OptionError("workers", workers, "must be 1 or more")
    limit = max_bytes()
    if scheduler is not None:
        return _on_dask(fn, parts, scheduler, limit)
    count = _default_workers(parts) if workers is None else workers
    count = min(count, len(parts))
    if count <= 1:
        return [_unwrap(_guarded(fn, part, limit)) for part in parts]
    return _in_pool(fn, parts, count, limit)


def available_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def json_bytes(path: Path) -> int:
    """The JSON size of a trace file: a .gz file's recorded uncompressed size (its last four
    bytes, modulo 4 GiB), else its size on disk."""
    size = path.stat().st_size
    if size < 18 or not path.name.endswith(".gz"):
        return size
    with path.open("rb") as f:
        f.seek(-4, os.SEEK_END)
        (isize,) = struct.unpack("<I", f.read(4))
    return max(size, int(isize))


def _default_workers(parts: list[list[Path]]) -> int:
    try:
        total = sum(json_bytes(p) for part in parts for p in part)
    except OSError:
        return 1  # a missing or unreadable file: reading it here names it
    return 1 if total < IN_PROCESS_BELOW_BYTES else available_cores()


def _guarded(fn: Callable[[list[Path]], T], part: list[Path], limit: int) -> tuple[bool, Any]:
    """Runs in the worker: the result, or the TraceFormatError's file and problem as plain
    strings (the error's own pickling would lose its fields, and its traceback is noise). An
    unexpected error goes on, noted with the files it was reading."""
    try:
        with byte_limit(limit), reading(part[0] if len(part) == 1 else ", ".join(map(str, part))):
            return True, fn(part)
    except TraceFormatError as exc:
        return False, (exc.path, exc.problem)
    except Exception as exc:
        exc.add_note(f"gpuprofile: while reading {', '.join(map(str, part))}")
        raise


def _unwrap(outcome: tuple[bool, Any]) -> Any:
    ok, value = outcome
    if not ok:
        path, problem = value
        raise TraceFormatError(path, problem)
    return value


def _context() -> multiprocessing.context.BaseContext:
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    # The server imports the readers once; each worker forked from it starts with them loaded.
    # '__main__' is forkserver's own default preload, kept.
    ctx.set_forkserver_preload(["__main__", "gpuprofile.importers.kineto"])
    return ctx


def _in_pool(
    fn: Callable[[list[Path]], T], parts: list[list[Path]], count: int, limit: int
) -> list[T]:
    try:
        with ProcessPoolExecutor(max_workers=count, mp_context=_context()) as pool:
            outcomes = list(pool.map(_guarded, [fn] * len(parts), parts, [limit] * len(parts)))
    except BrokenProcessPool:
        raise WorkerError(
            f"a worker process stopped while reading {len(parts)} trace files (out of memory? "
            "a script that starts gpuprofile.load at import needs `if __name__ == "
            "'__main__':`); workers=1 reads in this process"
        ) from None
    return [_unwrap(outcome) for outcome in outcomes]


def _probe(address: str) -> None:
    """Fail soon, before any Client exists, when nothing answers at a TCP address."""
    from distributed.comm.addressing import parse_address, parse_host_port

    try:
        scheme, location = parse_address(address)
        if scheme != "tcp":
            return  # tls, ucx, inproc: the Client's own timeout applies
        host, port = parse_host_port(location)
    except ValueError:
        raise WorkerError(f"not a Dask scheduler address: {address!r}") from None
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as exc:
        if isinstance(exc, TimeoutError):
            why = f"no answer within {CONNECT_TIMEOUT_S:g} s"
        else:
            why = exc.strerror or type(exc).__name__
        raise WorkerError(f"cannot reach the Dask scheduler at {address}: {why}") from None


def _on_dask(
    fn: Callable[[list[Path]], T], parts: list[list[Path]], scheduler: Any, limit: int
) -> list[T]:
    try:
        from distributed import Client, KilledWorker
    except ImportError:
        raise WorkerError(
            "scheduler= needs dask.distributed: pip install 'gpuprofile[dask]'"
        ) from None
    own = not isinstance(scheduler, Client)
    if own:
        address = str(scheduler)
        _probe(address)
        # Made in two steps to keep hold of a Client whose start fails: left alone, it would
        # close itself when collected (at exit, say), waiting twice the timeout, and print a
        # traceback; marked closed, it goes quietly.
        client = Client.__new__(Client)
        try:
            Client.__init__(client, address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
        except Exception as exc:  # connected, but not to a scheduler that answers
            client.status = "closed"
            raise WorkerError(
                f"no Dask scheduler answered at {address} within {CONNECT_TIMEOUT_S:g} s "
                f"({type(exc).__name__})"
            ) from None
    else:
        client = scheduler
    try:
        try:
            client.wait_for_workers(1, timeout=CONNECT_TIMEOUT_S)
        except TimeoutError:
            address = client.scheduler_info().get("address", "?")
            raise WorkerError(
                f"the Dask scheduler at {address} has no workers (waited {CONNECT_TIMEOUT_S:g} s)"
            ) from None
        futures = [client.submit(_guarded, fn, part, limit, pure=False) for part in parts]
        try:
            outcomes = client.gather(futures)
        except KilledWorker:
            raise WorkerError(
                f"Dask workers died reading {len(parts)} trace files (out of memory?)"
            ) from None
        del futures
    finally:
        if own:
            client.close()
    for ok, value in outcomes:
        if not ok and value[1] == "no such file or directory" and Path(value[0]).exists():
            raise TraceFormatError(
                value[0], "not found on a Dask worker (its workers must see this folder)"
            )
    return [_unwrap(outcome) for outcome in outcomes]
