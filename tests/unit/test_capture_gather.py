"""capture/distributed.py without a job: the ranks' agreement on an in-process store (torch's
HashStore, as the job's TCPStore behaves), and rank 0's merge of the parts it gathered. The
real jobs are in tests/integration/test_capture_distributed.py."""

from __future__ import annotations

import pickle
import threading
import zlib
from datetime import timedelta

import pytest
import torch.distributed as dist

from gpuprofile.capture.distributed import Job, Part, _merged, job_part
from gpuprofile.errors import GpuprofileError
from gpuprofile.trace.meta import Source
from gpuprofile.trace.model import TIMELINE_TABLES, Trace
from helpers.synthetic import synthetic_trace


def jobs(world: int, timeout_s: float = 0.3) -> list[Job]:
    store = dist.HashStore()
    return [
        Job(
            rank=r,
            world_size=world,
            store=store,
            timeout=timedelta(seconds=timeout_s),
            prefix="gpuprofile/capture/0",
        )
        for r in range(world)
    ]


def each(action: str, ranks: list[Job], **kwargs: bool) -> None:
    """Every rank's ``action`` at once, as the ranks' processes would (``finished=False``:
    rank 1's block raised)."""
    threads = [
        threading.Thread(
            target=getattr(j, action),
            kwargs={k: v or j.rank != 1 for k, v in kwargs.items()},
        )
        for j in ranks
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_ranks_that_all_end_agree_to_gather() -> None:
    ranks = jobs(3)
    each("started", ranks)
    each("ended", ranks, finished=True)
    assert [j.decision for j in ranks] == ["gather"] * 3


def test_a_rank_that_raised_is_gathered_with_the_others() -> None:
    ranks = jobs(2)
    each("ended", ranks, finished=False)  # rank 1's block raised: it still ends it
    assert [j.decision for j in ranks] == ["gather", "gather"]
    assert ranks[0].store.get("gpuprofile/capture/0/end/1") == b"raised"


def test_a_rank_that_ends_too_late_follows_the_decision_made_without_it() -> None:
    ranks = jobs(2)
    ranks[1].ended(finished=True)  # waits the timeout for rank 0, then decides
    expected = "ranks [0] had not ended the profiled block after 0.3 s (the job's timeout)"
    assert ranks[1].decision == expected
    # Rank 0 ends afterwards and sees every rank ended, yet follows the first decision: it
    # does not wait in a gather that rank 1 will never join.
    ranks[0].ended(finished=True)
    assert ranks[0].decision == expected


def test_a_rank_that_never_starts_is_named() -> None:
    ranks = jobs(3)
    with pytest.raises(GpuprofileError, match=r"rank 0: ranks \[1, 2\] did not start profiling"):
        ranks[0].started()


def test_a_rank_that_cannot_start_stops_the_others_waiting() -> None:
    ranks = jobs(2, timeout_s=30)
    failing = threading.Timer(0.1, ranks[1].abort, [GpuprofileError("a profiler already runs")])
    failing.start()
    with pytest.raises(GpuprofileError) as raised:
        ranks[0].started()  # at once, not after the 30 s timeout
    failing.join()
    assert str(raised.value) == (
        "rank 0 cannot profile the job: rank 1 could not start profiling (GpuprofileError: a "
        "profiler already runs)"
    )
    # A rank already past the start learns it at the end, without the timeout.
    ranks[0].ended(finished=True)
    assert ranks[0].decision is not None and ranks[0].decision.startswith("rank 1 could not")


def test_a_trace_without_a_decision_to_gather_keeps_its_own_rank() -> None:
    (job,) = jobs(1)[:1]
    job.decision = "ranks [1] had not ended the profiled block after 5 s (the job's timeout)"
    trace = synthetic_trace(10)
    kept = job.gathered(trace)
    assert kept.ranks == [0] and len(kept.ops) == len(trace.ops)
    assert kept.meta.errors == (
        "the job's ranks were not gathered (ranks [1] had not ended the profiled block after "
        "5 s (the job's timeout)): this profile holds rank 0 only",
    )


def one_rank(n: int, seed: int, **meta: object) -> Trace:
    return synthetic_trace(n, seed=seed).with_meta(**meta)


def packed(rank: int, trace: Trace) -> Part:
    return rank, zlib.compress(pickle.dumps(trace)), None


def test_rank_0_merges_what_arrived_and_says_what_did_not() -> None:
    own = one_rank(40, 0, source=Source(format="capture", path="/run/export/rank0.json.gz"))
    second = one_rank(25, 1, errors=("samples not written",))
    parts: list[Part] = [
        (0, None, None),  # rank 0's own part does not travel
        packed(1, job_part(second)),
        (2, None, "MemoryError: "),
        (3, b"not zlib", None),
    ]
    job = _merged(parts, own)
    assert job.ranks == [0, 1]
    for table in TIMELINE_TABLES:
        frame = job.table(table)
        assert (frame["rank"] == 0).sum() == len(own.table(table)), table
        assert (frame["rank"] == 1).sum() == len(second.table(table)), table
    # Allocator events stay with each rank; gauge readings travel.
    assert len(own.memory) and not len(job.memory)
    assert job.meta.source.path == "/run/export"
    assert job.meta.errors[0] == "rank 1: samples not written"
    assert job.meta.errors[1] == "rank 2 sent no trace: MemoryError: "
    assert job.meta.errors[2].startswith("rank 3's trace could not be read: error: ")
