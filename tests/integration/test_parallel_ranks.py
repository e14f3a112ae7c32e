"""The ranks of a job read in worker processes and on a real Dask cluster give the Trace and the
report that reading them here gives; a bad file, a dead worker and a scheduler that is not there
give clear errors on every path.

One ``distributed.LocalCluster`` (2 worker processes on 127.0.0.1) serves the module."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import gpuprofile
from gpuprofile.cli import main
from gpuprofile.errors import TraceFormatError, WorkerError
from gpuprofile.importers import parallel
from helpers.prerequisites import SHARED_TRACES, missing, require_trace

TABLES = ("ops", "kernels", "memcpy", "memset", "runtime", "memory", "counters")


@pytest.fixture(scope="module")
def dlrm() -> Path:
    return require_trace(SHARED_TRACES / "kineto-distributed" / "param_dlrm_8xV100")


@pytest.fixture(scope="module")
def distributed() -> Any:
    try:
        import distributed
    except ImportError:
        missing("dask.distributed is not installed: pip install -e '.[dev,dask]' (make setup)")
    return distributed


@pytest.fixture(scope="module")
def cluster(distributed: Any) -> Iterator[Any]:
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
    ) as running:
        yield running


@pytest.fixture(scope="module")
def here(dlrm: Path) -> gpuprofile.Profile:
    """The job read in this process: what every other path must equal."""
    return gpuprofile.load(dlrm, workers=1)


@pytest.fixture(scope="module")
def here_report(here: gpuprofile.Profile) -> dict[str, Any]:
    return here.report()


def assert_same_trace(a: gpuprofile.Profile, b: gpuprofile.Profile) -> None:
    for table in TABLES:
        pd.testing.assert_frame_equal(getattr(a.trace, table), getattr(b.trace, table))
    assert a.trace.meta == b.trace.meta


def test_the_folder_is_eight_ranks_read_here(dlrm: Path, here: gpuprofile.Profile) -> None:
    # The comparisons below mean something only if the job read is the whole job.
    assert sorted(here.trace.meta.ranks) == list(range(8))
    assert len(here.trace.kernels) > 0


def test_worker_processes_read_what_this_process_reads(
    dlrm: Path, here: gpuprofile.Profile, here_report: dict[str, Any]
) -> None:
    pooled = gpuprofile.load(dlrm, workers=2)
    assert_same_trace(pooled, here)
    assert pooled.report() == here_report


def test_a_list_or_glob_of_files_goes_to_the_workers_too(dlrm: Path, cluster: Any) -> None:
    files = sorted(dlrm.glob("rank*.json.gz"))
    pattern = str(dlrm / "rank*.json.gz")
    assert len(files) == 8
    listed = gpuprofile.load(files, workers=1)
    assert_same_trace(gpuprofile.load(files, workers=2), listed)
    assert_same_trace(gpuprofile.load(files, scheduler=cluster.scheduler_address), listed)
    assert_same_trace(gpuprofile.load(pattern, workers=2), gpuprofile.load(pattern, workers=1))


def test_a_dask_cluster_reads_what_this_process_reads(
    dlrm: Path, cluster: Any, here: gpuprofile.Profile, here_report: dict[str, Any]
) -> None:
    on_dask = gpuprofile.load(dlrm, scheduler=cluster.scheduler_address)
    assert_same_trace(on_dask, here)
    assert on_dask.report() == here_report


def test_a_given_client_is_used_and_left_open(
    dlrm: Path, distributed: Any, cluster: Any, here_report: dict[str, Any]
) -> None:
    with distributed.Client(cluster, set_as_default=False) as client:
        assert gpuprofile.load(dlrm, scheduler=client).report() == here_report
        assert client.status == "running"
        # Nothing of ours stays on the cluster once the results are here.
        assert client.who_has() == {}


def test_the_cli_reads_on_the_cluster(
    dlrm: Path, cluster: Any, here_report: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    argv = ["report", str(dlrm), "--format", "json", "--scheduler", cluster.scheduler_address]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out) == here_report
    assert main(["report", str(dlrm), "--format", "json", "--workers", "2"]) == 0
    assert json.loads(capsys.readouterr().out) == here_report


@pytest.fixture(scope="module")
def with_bad_file(dlrm: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The eight ranks and a ninth file cut off mid-event."""
    folder = tmp_path_factory.mktemp("bad-job")
    for f in sorted(dlrm.iterdir()):
        shutil.copyfile(f, folder / f.name)
    (folder / "rank8.pt.trace.json").write_text('{"traceEvents": [{"ph": "X", "name": "a"')
    return folder


@pytest.mark.parametrize("where", ["here", "workers", "dask"])
def test_a_bad_file_is_named_on_every_path(
    with_bad_file: Path, cluster: Any, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    options: dict[str, Any] = {
        "here": {"workers": 1},
        "workers": {"workers": 2},
        "dask": {"scheduler": cluster.scheduler_address},
    }[where]
    bad = with_bad_file / "rank8.pt.trace.json"
    with pytest.raises(TraceFormatError) as caught:
        gpuprofile.load(with_bad_file, **options)
    assert type(caught.value) is TraceFormatError
    assert caught.value.path == str(bad)
    assert "truncated" in caught.value.problem or "line 1" in caught.value.problem
    assert caught.value.__cause__ is None

    flags = {"here": ["--workers", "1"], "workers": ["--workers", "2"]}.get(
        where, ["--scheduler", cluster.scheduler_address]
    )
    assert main(["report", str(with_bad_file), *flags]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"gpuprofile: error: {bad}: ")
    assert "Traceback" not in err


def _closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def test_an_unreachable_scheduler_is_a_clear_error_soon(
    dlrm: Path,
    distributed: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(parallel, "CONNECT_TIMEOUT_S", 2.0)
    address = f"tcp://127.0.0.1:{_closed_port()}"
    started = time.monotonic()
    with pytest.raises(WorkerError, match=f"cannot reach the Dask scheduler at {address}"):
        gpuprofile.load(dlrm, scheduler=address)
    assert time.monotonic() - started < 10
    assert main(["report", str(dlrm), "--scheduler", address]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"gpuprofile: error: cannot reach the Dask scheduler at {address}")
    assert "Traceback" not in err


def test_a_scheduler_address_that_is_not_one_is_a_clear_error(dlrm: Path, distributed: Any) -> None:
    with pytest.raises(WorkerError, match="not a Dask scheduler address: 'ranks please'"):
        gpuprofile.load(dlrm, scheduler="ranks please")


def test_a_listener_that_is_not_a_scheduler_is_a_clear_error_and_a_quiet_exit(
    dlrm: Path, distributed: Any
) -> None:
    """Something answers the TCP connection, but not as Dask does (here: an HTTP reply). The
    command says so on one line and exits, with no traceback from the half-made Client."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    accepted: list[socket.socket] = []

    def answer() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            accepted.append(conn)
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    address = f"tcp://127.0.0.1:{port}"
    try:
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "gpuprofile", "report", str(dlrm), "--scheduler", address],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        took = time.monotonic() - started
    finally:
        # close() alone leaves accept() blocked on Linux: the thread would outlive the test.
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        thread.join(timeout=5)
        for conn in accepted:
            conn.close()
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"gpuprofile: error: no Dask scheduler answered at {address}")
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    assert took < 2 * parallel.CONNECT_TIMEOUT_S
