"""parallel.map_files: where per-rank work runs, and how its errors arrive. The real readers on
real folders, worker pools and a Dask cluster: tests/integration/test_parallel_ranks.py."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from gpuprofile.errors import OptionError, TraceFormatError, WorkerError
from gpuprofile.importers import parallel
from gpuprofile.importers.parallel import json_bytes, map_files


def _pid(part: list[Path]) -> tuple[int, list[str]]:
    return os.getpid(), [p.name for p in part]


def _die(part: list[Path]) -> None:
    os._exit(3)


def _bad(part: list[Path]) -> None:
    raise TraceFormatError(part[0], "not a trace")


def _files(tmp_path: Path, n: int, size: int) -> list[list[Path]]:
    out = []
    for i in range(n):
        path = tmp_path / f"rank{i}.json"
        path.write_bytes(b" " * size)
        out.append([path])
    return out


def test_json_bytes_reads_the_gzip_trailer(tmp_path: Path) -> None:
    payload = b'{"traceEvents": []}' * 1000
    gz = tmp_path / "t.json.gz"
    gz.write_bytes(gzip.compress(payload))
    plain = tmp_path / "t.json"
    plain.write_bytes(payload)
    assert json_bytes(gz) == len(payload) > gz.stat().st_size
    assert json_bytes(plain) == len(payload)


def test_small_folders_are_read_here_by_default(tmp_path: Path) -> None:
    groups = _files(tmp_path, 3, 10)
    assert map_files(_pid, groups) == [(os.getpid(), [f"rank{i}.json"]) for i in range(3)]


def test_large_folders_go_to_workers_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parallel, "IN_PROCESS_BELOW_BYTES", 25)
    monkeypatch.setattr(parallel, "available_cores", lambda: 2)
    results = map_files(_pid, _files(tmp_path, 3, 10))
    assert [names for _, names in results] == [[f"rank{i}.json"] for i in range(3)]
    assert os.getpid() not in {pid for pid, _ in results}


def test_one_worker_reads_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "IN_PROCESS_BELOW_BYTES", 0)
    assert {pid for pid, _ in map_files(_pid, _files(tmp_path, 2, 10), workers=1)} == {os.getpid()}


def test_workers_below_one_is_an_option_error(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match="workers=0"):
        map_files(_pid, _files(tmp_path, 2, 10), workers=0)


def test_a_worker_error_names_the_file_once(tmp_path: Path) -> None:
    groups = _files(tmp_path, 3, 10)
    with pytest.raises(TraceFormatError) as caught:
        map_files(_bad, groups, workers=2)
    assert caught.value.path == str(groups[0][0])
    assert caught.value.problem == "not a trace"
    # Raised here afresh: no remote traceback chained to it.
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__ or caught.value.__context__ is None


def test_a_dead_worker_is_a_worker_error(tmp_path: Path) -> None:
    with pytest.raises(WorkerError, match="workers=1 reads in this process"):
        map_files(_die, _files(tmp_path, 2, 10), workers=2)
