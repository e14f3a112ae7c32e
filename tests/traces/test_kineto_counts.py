"""gpuprofile.load on every shared Kineto trace agrees with a plain json/gzip reading of the file.

For each file in ../shared/traces/kineto/ and each run directory in kineto-distributed/, the
test reads the raw JSON itself (numbers as Decimal, so nothing is lost to float64) and checks,
per rank: the ranks, the event counts of every table and of report()["ranks"][i]["counts"],
the op categories, the summed durations, every start time, and the GPU window and busy time.
"""

from __future__ import annotations

import re
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from helpers.reference import union_length

pytestmark = pytest.mark.traces

# The tables of gpuprofile's Trace, and which of them hold GPU activity.
INTERVAL_TABLES = ("ops", "kernels", "memcpy", "memset", "runtime")
GPU_TABLES = ("kernels", "memcpy", "memset")
REPORT_COUNTS = ("kernels", "memcpy", "memset", "ops", "runtime")

# HTA's names for the kernels that are not compute (utils.is_compute_kernel/get_kernel_type).
NOT_COMPUTE = re.compile(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)|(^dma)")


class Case:
    def __init__(self, traces: Any, path: Path) -> None:
        from gpuprofile import load

        self.path = path
        self.docs = traces.rank_files(path)  # [(rank, file, exact JSON document)]
        self.facts = {rank: traces.rank_facts(rank, doc) for rank, _, doc in self.docs}
        self.origin_ns = traces.trace_origin_ns(self.facts.values())
        self.profile = load(path)
        self.trace = self.profile.trace
        self.report: dict[str, Any] = self.profile.report()
        self.rank_reports = {r["rank"]: r for r in self.report["ranks"]}

    def rows(self, table: str, rank: int) -> pd.DataFrame:
        frame = getattr(self.trace, table)
        return frame[frame["rank"] == rank]


@pytest.fixture(scope="module")
def case(traces: Any, kineto_path: Path) -> Case:
    return Case(traces, kineto_path)


# Ranks that PROVENANCE.md records for some traces, as a check on the raw reading itself.
PROVENANCE_RANKS = {
    "hta_a100_train_rank3_of8_async_cpu_to_gpu.json.gz": [3],
    "hta_v100_32gb_memory_rank1_of2.json.gz": [1],
    "hta_legacy_inference_rank1_no_devprops.json.gz": [1],
    "hta_cpu_only_gloo_rank34.pt.trace.json.gz": [34],
    "tracelens_h100_owlv2_large_inference.json.gz": [0],  # no distributedInfo
    "hta_sampled_128rank": [0, 1],
    "param_dlrm_8xV100": list(range(8)),
}


def test_ranks(case: Case) -> None:
    expected = sorted(case.facts)
    if case.path.name in PROVENANCE_RANKS:
        assert expected == PROVENANCE_RANKS[case.path.name]
    assert [r["rank"] for r in case.report["ranks"]] == expected
    assert case.trace.ranks == expected
    for table in (*INTERVAL_TABLES, "memory"):
        frame = getattr(case.trace, table)
        assert frame["rank"].dtype == np.int32, table
        assert set(frame["rank"].unique()) <= set(expected), table
    assert case.report["schema"] == "gpuprofile.report/1"
    assert case.report["source"]["format"] == "kineto"
    assert case.report["partial"] is False


def test_counts(case: Case) -> None:
    for rank, facts in case.facts.items():
        expected = {t: facts.counts[t] for t in REPORT_COUNTS}
        assert case.rank_reports[rank]["counts"] == expected, f"rank {rank}"
        for table in (*INTERVAL_TABLES, "memory"):
            assert len(case.rows(table, rank)) == facts.counts[table], f"rank {rank} {table}"
    # Nothing lands in a table without a rank that the files declare.
    total = Counter[str]()
    for facts in case.facts.values():
        total.update(facts.counts)
    for table in (*INTERVAL_TABLES, "memory"):
        assert len(getattr(case.trace, table)) == total[table], table


def test_op_categories(case: Case) -> None:
    """Old "Operator" events become cpu_op; annotations and python functions keep their cat."""
    for rank, facts in case.facts.items():
        got = case.rows("ops", rank)["category"].astype(str).value_counts().to_dict()
        assert got == dict(facts.op_categories), f"rank {rank}"


def test_durations(case: Case) -> None:
    """Summed dur per table equals the file's dur (us) * 1000, within 1 ns per event."""
    for rank, facts in case.facts.items():
        for table in INTERVAL_TABLES:
            rows = case.rows(table, rank)
            ours = int(rows["dur_ns"].sum())
            assert abs(ours - facts.dur_ns[table]) <= len(rows), f"rank {rank} {table}"
            assert (rows["dur_ns"] >= 0).all()


def test_start_times(case: Case) -> None:
    """Every start is ns from the trace's earliest event, within 1 ns of the exact value."""
    earliest = []
    for rank, facts in case.facts.items():
        for table in (*INTERVAL_TABLES, "memory"):
            column = "time_ns" if table == "memory" else "start_ns"
            raw = facts.memory_abs_ns if table == "memory" else facts.abs_start_ns[table]
            ours = np.sort(case.rows(table, rank)[column].to_numpy())
            if not len(raw):
                assert not len(ours), f"rank {rank} {table}"
                continue
            exact = sorted(s - case.origin_ns for s in raw)
            worst = max(abs(Decimal(int(o)) - e) for o, e in zip(ours, exact, strict=True))
            assert worst <= 1, f"rank {rank} {table}: a start is off by {worst} ns"
            earliest.append(int(ours[0]))
    assert min(earliest) == 0


def test_gpu_window_and_busy(case: Case) -> None:
    """report gpu: None without GPU activity, else window/busy/compute as the file says."""
    by_rank = _gpu_intervals(case)
    for rank, facts in case.facts.items():
        gpu = case.rank_reports[rank]["gpu"]
        if not facts.has_gpu:
            assert gpu is None, f"rank {rank}"
            continue
        assert gpu is not None, f"rank {rank}"
        intervals, compute = by_rank[rank]
        window = max(e for _, e in intervals) - min(s for s, _ in intervals)
        busy = union_length(intervals)
        tolerance = 2 * len(intervals)  # start and end each rounded to whole ns
        assert abs(gpu["window_ns"] - window) <= 2, f"rank {rank}"
        assert abs(gpu["busy_ns"] - busy) <= tolerance, f"rank {rank}"
        assert abs(gpu["compute_ns"] - union_length(compute)) <= tolerance, f"rank {rank}"
        assert gpu["idle_ns"] == gpu["window_ns"] - gpu["busy_ns"]
        assert gpu["non_compute_ns"] == gpu["busy_ns"] - gpu["compute_ns"]
        assert gpu["busy_pct"] == pytest.approx(100 * gpu["busy_ns"] / gpu["window_ns"], abs=1e-3)


def _gpu_intervals(case: Case) -> dict[int, tuple[list[Any], list[Any]]]:
    """Per rank, exact (start, end) of every kernel/memcpy/memset, and of compute kernels."""
    out = {}
    gpu_cats = {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"}
    for rank, _, doc in case.docs:
        base = Decimal(doc.get("baseTimeNanoseconds") or 0) if isinstance(doc, dict) else 0
        intervals, compute = [], []
        events = doc["traceEvents"] if isinstance(doc, dict) else doc
        for e in events:
            if e.get("ph") == "X" and e.get("cat") in gpu_cats:
                start = base + Decimal(e["ts"]) * 1000
                interval = (start, start + Decimal(e["dur"]) * 1000)
                intervals.append(interval)
                if e["cat"] in ("kernel", "Kernel") and not NOT_COMPUTE.match(e["name"]):
                    compute.append(interval)
        out[rank] = (intervals, compute)
    return out


# --- the negative cases the brief names ----------------------------------------------------


def test_cupti_range_profiler_trace_has_no_kernels(traces: Any) -> None:
    path = traces.require_trace(traces.KINETO / "hta_a100_cupti_range_profiler.json.gz")
    events = traces.trace_events(traces.read_json(path))
    # It is a real GPU profile: CUPTI range-profiler records stand in for the kernel timeline.
    assert sum(e.get("cat") == "cuda_profiler_range" for e in events) > 0
    assert not any(e.get("cat") in ("kernel", "Kernel") for e in events)
    from gpuprofile import load

    profile = load(path)
    assert len(profile.trace.kernels) == 0
    (rank,) = profile.report()["ranks"]
    assert rank["counts"]["kernels"] == 0
    assert rank["top_kernels"] == []


def test_cpu_only_trace_has_no_gpu_section(traces: Any) -> None:
    path = traces.require_trace(traces.KINETO / "hta_cpu_only_gloo_rank34.pt.trace.json.gz")
    doc = traces.read_json(path)
    from gpuprofile import load

    report = load(path).report()
    (rank,) = report["ranks"]
    assert rank["rank"] == doc["distributedInfo"]["rank"] == 34
    assert rank["gpu"] is None
    expected_ops = sum(
        e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation", "python_function")
        for e in traces.trace_events(doc)
    )
    assert rank["counts"]["ops"] == expected_ops > 0
