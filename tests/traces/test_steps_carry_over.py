"""Carry-over (GPU work launched before recording began) and the per-step GPU spans on shared
Kineto traces, held to figures this test computes from the raw JSON alone (json + Decimal):

- carry-over: GPU events (kernel, gpu_memcpy, gpu_memset) whose correlation id is known, that
  no runtime call of the trace has, and that is below the first recorded call's id; its busy
  time is the union of their intervals;
- steps: per gpu_user_annotation ``ProfilerStep#N``, its span and the union of the GPU events'
  intervals clipped to it.

Times are whole ns the way the trace gives them: ts and dur (us, at most 3 decimals in these
files) times 1000, each rounded, then added.
"""

from __future__ import annotations

import gzip
import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from gpuprofile.analyses.carry_over import carry_over
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.gpu_steps import gpu_steps
from gpuprofile.importers.kineto import load_kineto
from gpuprofile.report.build import build_report
from gpuprofile.report.schema import report_json, to_report
from gpuprofile.report.text import render_text
from gpuprofile.units import format_count, format_time
from helpers.prerequisites import SHARED_TRACES, require_trace

KINETO = SHARED_TRACES / "kineto"
GPU_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"}
RUNTIME_CATEGORIES = {"cuda_runtime", "cuda_driver", "Runtime"}
STEP = re.compile(r"^ProfilerStep#\d+$")
# The issue's trace (509 events, 13.7 ms, before the step's first kernel); a ROCm training
# trace with three steps and carry-over; CUDA-graph replays (kernels share their
# hipGraphLaunch's id: none is carry-over); two small traces with one step each.
QWEN = "tracelens_h100_qwen1.5_0.5b_inference.json.gz"
CASES = (
    QWEN,
    "tracelens_mi300x_resnet_act_checkpoint_rank0_of8.json.gz",
    "tracelens_mi300x_vllm_cudagraph_decode_execution.json.gz",
    "hta_mi250_rocm6_minitoy_train.json.gz",
    "tracelens_h100_bert_small_inference.json.gz",
)


def ns(us: Any) -> int:
    return int((Decimal(us) * 1000).to_integral_value())


class Raw:
    """What the raw file says, read with json alone."""

    def __init__(self, path: Path) -> None:
        doc = json.loads(gzip.decompress(path.read_bytes()), parse_float=Decimal)
        events = doc["traceEvents"] if isinstance(doc, dict) else doc
        x = [e for e in events if e.get("ph") == "X"]
        self.gpu = [e for e in x if e.get("cat") in GPU_CATEGORIES]
        self.launched = {
            int(e["args"]["correlation"])
            for e in x
            if e.get("cat") in RUNTIME_CATEGORIES and "correlation" in (e.get("args") or {})
        } - {0}
        self.steps = [
            e for e in x if e.get("cat") == "gpu_user_annotation" and STEP.match(e["name"])
        ]
        self.host_steps = {
            e["name"]: self.interval(e)
            for e in x
            if e.get("cat") == "user_annotation" and STEP.match(e["name"])
        }
        self.launch_ns = {
            int(e["args"]["correlation"]): ns(e["ts"])
            for e in x
            if e.get("cat") in RUNTIME_CATEGORIES and "correlation" in (e.get("args") or {})
        }
        self.kernels = [e for e in x if e.get("cat") in ("kernel", "Kernel")]

    def markers_hold_their_work(self) -> bool:
        """Each GPU step marker spans at least half of the span of the kernels its host step
        launched (gpu_steps.py's rule, worked out from the raw events)."""
        for step in self.steps:
            if step["name"] not in self.host_steps:
                continue
            low, high = self.host_steps[step["name"]]
            inside = [
                self.interval(k)
                for k in self.kernels
                if low <= self.launch_ns.get(_corr(k), -1) < high
            ]
            if inside:
                work = max(e for _, e in inside) - min(s for s, _ in inside)
                start, end = self.interval(step)
                if (end - start) * 2 < work:
                    return False
        return True

    @staticmethod
    def interval(e: dict[str, Any]) -> tuple[int, int]:
        start = ns(e["ts"])
        return start, start + ns(e["dur"])

    def orphans(self) -> list[dict[str, Any]]:
        """GPU events whose launch is not in the trace (the issue's definition)."""
        return [e for e in self.gpu if _corr(e) not in self.launched]

    def carry_over(self) -> list[dict[str, Any]]:
        if not self.launched:
            return []
        first = min(self.launched)
        return [e for e in self.orphans() if 0 < _corr(e) < first]


def _corr(e: dict[str, Any]) -> int:
    return int((e.get("args") or {}).get("correlation", 0))


def union(intervals: list[tuple[int, int]]) -> int:
    total, reach = 0, None
    for start, end in sorted(intervals):
        if reach is None or start > reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


@pytest.fixture(scope="module", params=CASES)
def case(request: pytest.FixtureRequest) -> tuple[str, Raw, Any]:
    path = require_trace(KINETO / request.param)
    return request.param, Raw(path), load_kineto(path)


def test_carry_over_equals_the_raw_count_and_busy_time(case: tuple[str, Raw, Any]) -> None:
    name, raw, trace = case
    expected = raw.carry_over()
    found = carry_over(trace)
    if not expected:
        assert found == []
        return
    [ours] = found
    assert ours.events == len(expected)
    assert ours.busy_ns == union([raw.interval(e) for e in expected])
    if name == QWEN:
        # Here every GPU event without its launch in the trace is carry-over, and all of it
        # ran before the recorded step's first GPU work.
        assert len(expected) == len(raw.orphans()) > 0
        [step] = raw.steps
        assert max(raw.interval(e)[1] for e in expected) <= ns(step["ts"])


def test_steps_equal_the_raw_spans_and_clipped_busy(case: tuple[str, Raw, Any]) -> None:
    _, raw, trace = case
    intervals = [raw.interval(e) for e in raw.gpu]
    expected = []
    for step in raw.steps:
        start, end = raw.interval(step)
        clipped = [(max(s, start), min(e, end)) for s, e in intervals if s < end and e > start]
        busy = union(clipped)
        expected.append((step["name"], end - start, busy, end - start - busy))
    ours = [
        (s.name, s.window_ns, s.busy_ns, s.idle_ns)
        for s in gpu_steps(Analysis(trace), trace.ranks[0])
    ]
    # Markers far shorter than their steps' GPU work are not the steps: none is read.
    assert sorted(ours) == (sorted(expected) if raw.markers_hold_their_work() else [])


def test_markers_shorter_than_their_steps_work_are_no_steps() -> None:
    """The MI300X checkpointing trace marks 16-18 us on the GPU for host steps of about 16 ms
    whose kernels span milliseconds; the steps a diff or the CI gate compares are then the
    host's ProfilerStep ranges, not the markers."""
    from gpuprofile.report.build import build_report
    from gpuprofile.report.diff_side import step_times

    path = require_trace(KINETO / "tracelens_mi300x_resnet_act_checkpoint_rank0_of8.json.gz")
    raw = Raw(path)
    assert raw.steps and not raw.markers_hold_their_work()
    assert max(ns(e["dur"]) for e in raw.steps) < 100_000  # under 0.1 ms each
    trace = load_kineto(path)
    times, source = step_times(trace, build_report(Analysis(trace)))
    assert source == "host ProfilerStep ranges"
    assert sorted(times.tolist()) == sorted(float(b - a) for a, b in raw.host_steps.values())


def test_report_and_text_on_the_issue_trace() -> None:
    raw = Raw(require_trace(KINETO / QWEN))
    trace = load_kineto(KINETO / QWEN)
    report = report_json(build_report(Analysis(trace)))
    expected = raw.carry_over()
    busy = union([raw.interval(e) for e in expected])
    [notice] = [n for n in report["notices"] if n["kind"] == "carry-over"]
    assert notice["text"].startswith(
        f"{format_count(len(expected), 'GPU event')} ({format_time(busy)} of GPU busy time)"
    )
    [step] = raw.steps
    start, end = raw.interval(step)
    [ours] = report["ranks"][0]["gpu"]["steps"]
    assert (ours["name"], ours["window_ns"]) == (step["name"], end - start)
    text = render_text(to_report(report))
    assert text.count("CARRY-OVER: ") == 1
    assert f"    {step['name']}: window {format_time(end - start)}, busy " in text
