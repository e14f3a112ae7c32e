"""A job's folder whose traces do not all declare their rank (issue 16): declared ranks are
kept, the others come from the file name (with a notice) or, where a name and a declaration
claim one rank, the folder is refused with both named. Traces written here, by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

import gpuprofile
from gpuprofile.errors import TraceFormatError
from gpuprofile.importers.kineto import load_kineto
from helpers.kineto_docs import document, kernel, write

BASE = 1_700_000_000 * 10**9  # one run: every file shares a base time


def _rank_file(path: Path, rank: int | None, marker: str) -> Path:
    top = {"baseTimeNanoseconds": BASE}
    if rank is not None:
        top["distributedInfo"] = {"rank": rank, "world_size": 4}
    return write(path, document([kernel(marker, 0.0, 5.0, corr=1)], **top))


def _ranks_of(trace: gpuprofile.Trace) -> dict[str, int]:
    """kernel name (one per file) -> the rank its rows took."""
    names = trace.kernels["name"].astype(str)
    return dict(zip(names, trace.kernels["rank"].astype(int), strict=True))


def test_declared_ranks_kept_and_the_others_named_by_their_file(tmp_path: Path) -> None:
    _rank_file(tmp_path / "a.json", 3, "declares 3")
    _rank_file(tmp_path / "b.json", 2, "declares 2")
    _rank_file(tmp_path / "worker1.json", None, "named 1")
    trace = load_kineto(tmp_path)
    assert _ranks_of(trace) == {"declares 3": 3, "declares 2": 2, "named 1": 1}
    assert trace.meta.notes == (
        "rank of worker1.json (rank 1) taken from its file name: its trace declares none "
        "(distributedInfo.rank), while the other files' traces do",
    )
    notices = gpuprofile.load(tmp_path).report()["notices"]
    assert any(n["text"] == trace.meta.notes[0] for n in notices)


def test_declared_rank_kept_and_a_nameless_one_takes_a_free_rank(tmp_path: Path) -> None:
    _rank_file(tmp_path / "a.json", 0, "declares 0")
    _rank_file(tmp_path / "b.json", None, "says nothing")
    trace = load_kineto(tmp_path)
    assert _ranks_of(trace) == {"declares 0": 0, "says nothing": 1}
    assert any("taken from file order" in note for note in trace.meta.notes)


def test_a_name_and_a_declaration_claiming_one_rank_are_refused(tmp_path: Path) -> None:
    _rank_file(tmp_path / "rank0.json", 1, "declares 1")
    _rank_file(tmp_path / "rank1.json", None, "named 1")
    with pytest.raises(TraceFormatError) as info:
        load_kineto(tmp_path)
    assert str(info.value) == (
        f"{tmp_path / 'rank1.json'}: rank 1 appears twice: rank0.json and rank1.json "
        "(rank0.json by its trace (distributedInfo.rank), rank1.json by its name)"
    )


@pytest.mark.parametrize("declared", ["abc", -1, True, 10**30, [1]])
def test_a_declared_rank_that_is_no_rank_is_unknown(tmp_path: Path, declared: object) -> None:
    path = write(
        tmp_path / "rank2.json",
        document([kernel("k", 0.0, 5.0, corr=1)], distributedInfo={"rank": declared}),
    )
    trace = load_kineto([path, _rank_file(tmp_path / "other.json", 0, "declares 0")])
    assert _ranks_of(trace) == {"k": 2, "declares 0": 0}
    (reason,) = trace.meta.ranks[2].unknown
    assert reason.startswith("distributedInfo.rank") and reason.endswith(": not a rank")
