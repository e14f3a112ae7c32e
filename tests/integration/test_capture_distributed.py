"""``profile(distributed=True)`` and ``%%gpuprofile --distributed`` in real gloo jobs on
127.0.0.1 (tests/helpers/gloo_jobs.py): a data-parallel job whose rank 1 computes 3x, each rank
a process of its own. Each rank writes what its Profile holds to ``result{R}.json``; what each
rank recorded is counted here from the raw Chrome trace it exported, by hand."""

from __future__ import annotations

import collections
import gzip
import json
from pathlib import Path
from typing import Any

import gpuprofile
from helpers import gloo_jobs

# Chrome-trace categories of the events that become rows of the ops table (Kineto's CPU side).
OP_CATEGORIES = {"cpu_op", "user_annotation", "python_function"}
STEPS = 3


def results(folder: Path, world: int) -> list[dict[str, Any]]:
    return [json.loads((folder / f"result{r}.json").read_text()) for r in range(world)]


def recorded_ops(path: Path) -> collections.Counter[str]:
    """The complete ("X") CPU events of one exported rank, counted by name."""
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    return collections.Counter(
        e["name"]
        for e in doc["traceEvents"]
        if e.get("ph") == "X" and e.get("cat") in OP_CATEGORIES
    )


def test_rank_0_holds_every_rank_as_each_recorded_it(tmp_path: Path) -> None:
    world = 3
    gloo_jobs.run_ranks("capture_dp", world, tmp_path, ["1", str(STEPS), "3"])
    got = results(tmp_path, world)
    # Rank 0's profile covers the job, the others their own rank.
    assert got[0]["ranks"] == [0, 1, 2]
    assert [g["ranks"] for g in got[1:]] == [[1], [2]]
    assert not any(g["partial"] or g["errors"] for g in got)

    export = tmp_path / "export"
    assert got[0]["source"] == str(export)
    assert got[2]["source"] == str(export / "rank2.json.gz")
    assert sorted(p.name for p in export.iterdir()) == [
        "rank0.json.gz", "rank1.json.gz", "rank2.json.gz",
    ]  # fmt: skip
    for rank in range(world):
        recorded = recorded_ops(export / f"rank{rank}.json.gz")
        gathered = got[0]["per_rank"][str(rank)]
        # Every op the rank recorded reached rank 0, and no other rank's.
        assert gathered["op_names"] == dict(recorded), rank
        assert gathered["ops"] == sum(recorded.values())
        # As the rank's own profile holds it.
        own = got[rank]["per_rank"][str(rank)]
        assert gathered == own
    # The slow rank did 3x the units of compute: gloo_jobs.COMPUTE per step, 3 steps.
    busy = [got[0]["per_rank"][str(r)]["op_names"]["gloo_jobs::busy"] for r in range(world)]
    assert busy == [gloo_jobs.COMPUTE * STEPS * f for f in (1, 3, 1)]
    # The job's analysis finds the slow rank (the others wait for it in every all-reduce).
    assert got[0]["world_size"] == world and got[0]["stragglers"][0] == 1
    # The job view carries each rank's gauges, not its allocator events (rank 1 recorded some).
    assert got[0]["counter_ranks"] == [0, 1, 2]
    assert got[0]["memory_rows"] == 0 and got[1]["memory_rows"] > 0

    # The export folder reads back as the same job.
    loaded = gpuprofile.load(export).trace
    assert loaded.ranks == [0, 1, 2]
    for rank in range(world):
        ops = loaded.ops[loaded.ops["rank"] == rank]
        assert len(ops) == got[0]["per_rank"][str(rank)]["ops"]


def test_a_rank_that_raises_is_still_gathered_and_the_job_is_partial(tmp_path: Path) -> None:
    # Rank 1 raises inside the block after its last all-reduce: the others end normally.
    gloo_jobs.run_ranks("capture_dp", 2, tmp_path, ["1", "2", "3", "1", "after"])
    got = results(tmp_path, 2)
    assert got[1]["raised"] == "rank failed inside the block" and got[1]["partial"]
    assert got[0]["raised"] is None
    assert got[0]["ranks"] == [0, 1] and got[0]["partial"]
    assert got[0]["per_rank"]["1"] == got[1]["per_rank"]["1"]


def test_a_rank_that_never_ends_costs_the_job_timeout_not_a_hang(tmp_path: Path) -> None:
    # Rank 1 raises before its second all-reduce: rank 0 waits in it for the job's timeout
    # (5 s here), then raises too. Neither waits longer than the timeout at the end; what
    # rank 0 then holds depends on which of them gave up first, and says so.
    gloo_jobs.run_ranks(
        "capture_dp",
        2,
        tmp_path,
        ["1", "2", "3", "1", "before"],
        env={"GLOO_JOB_TIMEOUT_S": "5"},
        timeout_s=45,
    )
    got = results(tmp_path, 2)
    assert got[1]["raised"] == "rank failed inside the block" and got[1]["partial"]
    assert got[0]["raised"] and got[0]["partial"]  # its all-reduce timed out
    if got[0]["ranks"] == [0, 1]:
        assert got[0]["per_rank"]["1"] == got[1]["per_rank"]["1"]
    else:
        assert got[0]["ranks"] == [0]
        assert any(e.endswith("this profile holds rank 0 only") for e in got[0]["errors"])


def test_a_rank_that_cannot_start_stops_the_others_at_once(tmp_path: Path) -> None:
    # Rank 1 runs its own torch.profiler, so gpuprofile cannot record it; rank 0 learns so at
    # the start barrier, not after the job's timeout (120 s, past this test's 60 s).
    gloo_jobs.run_ranks(
        "capture_dp",
        2,
        tmp_path,
        ["1", "2", "3", "1", "busy"],
        env={"GLOO_JOB_TIMEOUT_S": "120"},
        timeout_s=60,
    )
    got = results(tmp_path, 2)
    assert got[1]["raised"].startswith("a torch.profiler session is already recording")
    assert got[0]["raised"].startswith(
        "GpuprofileError: rank 0 cannot profile the job: rank 1 could not start profiling "
        "(ProfilerBusyError: a torch.profiler session is already recording"
    )


def test_the_magic_records_every_rank_of_a_job(tmp_path: Path) -> None:
    # Each rank's process runs the cell in an IPython InteractiveShell (not a Jupyter
    # kernel: the magic shows the text report, gpuprofile.last() holds the Profile).
    gloo_jobs.run_ranks("capture_magic", 2, tmp_path, ["1", "2", "3"])
    got = results(tmp_path, 2)
    assert got[0]["ranks"] == [0, 1] and got[1]["ranks"] == [1]
    assert got[0]["per_rank"]["1"] == got[1]["per_rank"]["1"]
    busy = [got[0]["per_rank"][str(r)]["op_names"]["gloo_jobs::busy"] for r in range(2)]
    assert busy == [gloo_jobs.COMPUTE * 2, gloo_jobs.COMPUTE * 2 * 3]
