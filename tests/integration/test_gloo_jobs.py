"""The jobs tests/helpers/gloo_jobs.py records for the job analyses' tests: what each rank's
torch.profiler trace holds, read from the raw JSON."""

from __future__ import annotations

import collections
import json
from pathlib import Path
from typing import Any

from helpers import gloo_jobs


def events(path: Path) -> list[dict[str, Any]]:
    doc = json.loads(path.read_text())
    assert doc["distributedInfo"]["backend"] == "gloo"
    return [e for e in doc["traceEvents"] if e.get("ph") == "X"]


def names(evs: list[dict[str, Any]]) -> collections.Counter[str]:
    return collections.Counter(e["name"] for e in evs)


def test_the_data_parallel_job_has_one_slow_rank(tmp_path: Path) -> None:
    folder = gloo_jobs.data_parallel_job(tmp_path, world=2, slow_rank=1, steps=3)
    assert sorted(p.name for p in folder.iterdir()) == ["rank0.json", "rank1.json"]
    per_rank = [names(events(folder / f"rank{r}.json")) for r in range(2)]
    for rank, counted in enumerate(per_rank):
        # Three recorded steps, each one all-reduce; warmup step 0 not recorded.
        assert [counted[f"ProfilerStep#{s}"] for s in (1, 2, 3)] == [1, 1, 1]
        assert counted["c10d::allreduce_"] == 3
        assert counted["gloo_jobs::busy"] == 3 * gloo_jobs.COMPUTE * (3 if rank == 1 else 1)
    # The slow rank's compute takes about 3x as long (the busy ops hold it UNIT_MS each).
    busy = [
        sum(e["dur"] for e in events(folder / f"rank{r}.json") if e["name"] == "gloo_jobs::busy")
        for r in range(2)
    ]
    assert busy[1] > 2 * busy[0]


def test_the_pipeline_passes_every_microbatch_through_every_stage(tmp_path: Path) -> None:
    folder = gloo_jobs.pipeline_job(tmp_path, stages=3, microbatches=4, slow_stage=1, steps=2)
    per_rank = [names(events(folder / f"rank{r}.json")) for r in range(3)]
    sends = [c["c10d::send"] for c in per_rank]
    recvs = [c["c10d::recv_"] for c in per_rank]
    assert sends == [8, 8, 0] and recvs == [0, 8, 8]  # 2 steps x 4 microbatches
    units = [c["gloo_jobs::busy"] for c in per_rank]
    assert units == [8 * gloo_jobs.STAGE_COMPUTE * f for f in (1, 3, 1)]
    assert all(c["ProfilerStep#1"] == c["ProfilerStep#2"] == 1 for c in per_rank)
