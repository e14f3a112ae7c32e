"""The job view of real gloo jobs (tests/helpers/gloo_jobs.py), each rank recorded by plain
torch.profiler, against figures recomputed here from the raw JSON by the definitions in
docs/report.md: a data-parallel job with one slow rank, and a pipeline with one slow stage.

The ranks run on one host, so their trace clocks agree and raw timestamps compare directly
(the report says "one host's clock").
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

import gpuprofile
from helpers import gloo_jobs

_COMM = re.compile(r"c10d|^nccl:|^gloo:|record_param_comms|ProcessGroup")
_STEP = re.compile(r"^ProfilerStep#(\d+)$")


def _events(folder: Path) -> dict[int, list[dict[str, Any]]]:
    out = {}
    for path in sorted(folder.glob("rank*.json")):
        doc = json.loads(path.read_text())
        out[doc["distributedInfo"]["rank"]] = [
            e for e in doc["traceEvents"] if e.get("ph") == "X" and "ts" in e
        ]
    return out


def _ns(us: float) -> int:
    return round(us * 1000)


def _raw_waits(events: dict[int, list[dict[str, Any]]], name: str) -> dict[int, float]:
    """Per rank, the wait it caused: per instance (i-th call of ``name`` on each rank), the
    last arrival minus every rank's arrival, credited to the last arriver."""
    starts = {r: sorted(e["ts"] for e in evs if e["name"] == name) for r, evs in events.items()}
    caused: dict[int, float] = defaultdict(float)
    for i in range(min(len(s) for s in starts.values())):
        arrivals = {r: s[i] for r, s in starts.items()}
        last = max(arrivals, key=lambda r: (arrivals[r], r))
        caused[last] += sum(arrivals[last] - a for a in arrivals.values())
    return caused


def _raw_bubbles(events: dict[int, list[dict[str, Any]]]) -> dict[int, dict[int, float]]:
    """Per step N, per rank: 1 - (union of its compute in the job's window) / window, where
    compute is cpu_op events that do not communicate, placed in the step they start in."""
    spans = {
        r: {
            int(m.group(1)): (e["ts"], e["ts"] + e["dur"])
            for e in evs
            if (m := _STEP.match(e["name"]))
        }
        for r, evs in events.items()
    }
    compute: dict[int, dict[int, list[tuple[float, float]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for r, evs in events.items():
        for e in evs:
            if e.get("cat") != "cpu_op" or _COMM.search(e["name"]):
                continue
            for step, (a, b) in spans[r].items():
                if a <= e["ts"] < b:
                    compute[step][r].append((e["ts"], e["ts"] + e["dur"]))
    out = {}
    for step, per_rank in compute.items():
        start = min(a for iv in per_rank.values() for a, _ in iv)
        end = max(b for iv in per_rank.values() for _, b in iv)
        out[step] = {r: 1 - _union(per_rank.get(r, []), start, end) / (end - start) for r in events}
    return out


def _union(intervals: list[tuple[float, float]], lo: float, hi: float) -> float:
    total, reach = 0.0, lo
    for a, b in sorted(intervals):
        a, b = max(a, reach), min(b, hi)
        if b > a:
            total += b - a
            reach = b
    return total


def test_data_parallel_job_names_the_slow_rank(tmp_path: Path) -> None:
    folder = gloo_jobs.data_parallel_job(tmp_path, world=3, slow_rank=2, steps=3)
    report = gpuprofile.load(folder).report()
    job = report["distributed"]
    assert job["world_size"] == 3 and job["missing_ranks"] == []
    assert job["clock"]["method"] == "one host's clock"
    expected = _raw_waits(_events(folder), "c10d::allreduce_")
    top = max(expected, key=lambda r: expected[r])
    assert top == 2
    straggler = job["stragglers"][0]
    assert straggler["rank"] == 2
    # Ours also counts the waits in other collectives (barriers): at least the all-reduces'.
    assert straggler["wait_caused_ns"] >= _ns(expected[2]) - 1000
    assert "gloo_jobs::busy" in straggler["cause"]
    assert "straggler" in [h["kind"] for h in report["hints"]]
    raw = _raw_bubbles(_events(folder))
    for step in job["steps"]:
        for r in step["ranks"]:
            assert r["bubble_fraction"] == pytest.approx(raw[step["step"]][r["rank"]], abs=1e-6)
    # The slow rank computes most: its bubble is the smallest in every step.
    for step in job["steps"]:
        bubbles = {r["rank"]: r["bubble_fraction"] for r in step["ranks"]}
        assert min(bubbles, key=lambda r: bubbles[r]) == 2


def test_pipeline_with_a_slow_stage(tmp_path: Path) -> None:
    stages, microbatches = 3, 4
    folder = gloo_jobs.pipeline_job(
        tmp_path, stages=stages, microbatches=microbatches, slow_stage=1, steps=2
    )
    report = gpuprofile.load(folder).report()
    job = report["distributed"]
    pipe = job["pipeline"]
    assert pipe is not None
    assert pipe["stages"] == stages and pipe["stage_ranks"] == [0, 1, 2]
    assert pipe["microbatches"] == microbatches
    assert pipe["theoretical_bubble_fraction"] == pytest.approx(
        (stages - 1) / (microbatches + stages - 1)
    )
    assert pipe["bottleneck_rank"] == 1
    raw = _raw_bubbles(_events(folder))
    for step in job["steps"]:
        for r in step["ranks"]:
            assert r["bubble_fraction"] == pytest.approx(raw[step["step"]][r["rank"]], abs=1e-6)
    mean = sum(r["bubble_fraction"] for s in job["steps"] for r in s["ranks"]) / (
        len(job["steps"]) * stages
    )
    assert pipe["bubble_fraction"] == pytest.approx(mean)
    assert pipe["excess_bubble_fraction"] == pytest.approx(
        mean - pipe["theoretical_bubble_fraction"]
    )
    # The stage after the slow one waits for it in its receives.
    assert job["stragglers"][0]["rank"] == 1
