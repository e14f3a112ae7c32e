"""The job view of the shared 8-rank DLRM run against HTA and against the raw JSON.

- comm/compute overlap per rank equals HTA's get_comm_comp_overlap (percent, two decimals);
- the straggler we name first is among HTA's get_potential_stragglers candidates (HTA ranks
  by collective kernel time, we by the wait a rank causes, so only the top one is compared);
- which rank arrives last at each collective, and the wait it causes, recomputed here from the
  raw JSON: the i-th NCCL kernel of a kind on each rank is one instance (the DLRM ranks record
  the same collectives), arrival its ts, wait the last arrival minus each rank's. These traces
  carry absolute timestamps and no base time, and their clocks stay as recorded (the report
  says so), so raw ts compare directly.
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

import gpuprofile
from helpers.prerequisites import SHARED_TRACES, require_trace

pytestmark = pytest.mark.traces

DLRM = SHARED_TRACES / "kineto-distributed" / "param_dlrm_8xV100"
_NCCL = re.compile(r"^ncclKernel_(\w+?)_")


@pytest.fixture(scope="module")
def dlrm_report() -> dict:
    return gpuprofile.load(require_trace(DLRM)).report()


def test_overlap_equals_hta(dlrm_report: dict) -> None:
    hta = pytest.importorskip("hta.trace_analysis")
    logging.disable(logging.WARNING)
    try:
        analysis = hta.TraceAnalysis(trace_dir=str(DLRM))
        theirs = analysis.get_comm_comp_overlap(visualize=False)
        candidates = analysis.get_potential_stragglers()
    finally:
        logging.disable(logging.NOTSET)
    expected = dict(zip(theirs["rank"], theirs["comp_comm_overlap_pctg"], strict=True))
    ours = {r["rank"]: r["distributed"]["comm_compute_overlap"] for r in dlrm_report["ranks"]}
    assert set(ours) == set(expected)
    for rank, pct in expected.items():
        assert round(100 * ours[rank], 2) == pytest.approx(pct, abs=0.011), rank
    assert dlrm_report["distributed"]["stragglers"][0]["rank"] in list(candidates)


def test_arrivals_and_waits_from_raw_json(dlrm_report: dict, traces: Any) -> None:
    starts: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for path in sorted(Path(DLRM).iterdir()):
        doc = traces.read_json(path)
        rank = doc["distributedInfo"]["rank"]
        for e in traces.trace_events(doc):
            match = _NCCL.match(e.get("name", ""))
            if e.get("cat") == "kernel" and match:
                starts[match.group(1)][rank].append(float(e["ts"]))
    caused: dict[int, float] = defaultdict(float)
    last_count: dict[int, int] = defaultdict(int)
    for per_rank in starts.values():
        count = len(next(iter(per_rank.values())))
        assert all(len(ts) == count for ts in per_rank.values())
        for i in range(count):
            arrivals = {rank: sorted(ts)[i] for rank, ts in per_rank.items()}
            last = max(arrivals, key=lambda r: (arrivals[r], r))
            last_count[last] += 1
            caused[last] += sum(max(arrivals.values()) - a for a in arrivals.values())
    job = dlrm_report["distributed"]
    assert job["clock"]["method"] == "trace clocks"
    ours = {s["rank"]: s for s in job["stragglers"]}
    assert set(ours) == {r for r, v in caused.items() if v > 0}
    for rank, us in caused.items():
        assert ours[rank]["wait_caused_ns"] == pytest.approx(us * 1000, abs=8 * 1000)
        assert ours[rank]["arrived_last"] == last_count[rank]
    order = sorted(caused, key=lambda r: -caused[r])
    assert [s["rank"] for s in job["stragglers"]] == order
