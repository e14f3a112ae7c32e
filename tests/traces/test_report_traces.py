"""Reports of real traces are plain JSON with datasheet roofs and roofline points."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import gpuprofile
from helpers.prerequisites import SHARED_TRACES, require_trace

pytestmark = pytest.mark.traces


@pytest.mark.parametrize(
    "trace", ["hta_a100_nccl_2rank_rank0.json.gz", "tracelens_h100_qwen1.5_0.5b_inference.json.gz"]
)
def test_real_traces_report_as_plain_json(trace: str) -> None:
    report = gpuprofile.load(require_trace(SHARED_TRACES / "kineto" / trace)).report()
    assert json.loads(json.dumps(report, allow_nan=False)) == report
    assert report["hardware"]["source"] == "datasheet"
    assert report["roofline"]["points"]


def test_every_shared_trace_renders_as_text(kineto_path: Path) -> None:
    profile = gpuprofile.load(kineto_path)
    text = profile.text()
    report = profile.report()
    assert text.startswith("gpuprofile report (kineto:")
    for rank in report["ranks"]:
        assert f"rank {rank['rank']} " in text
    for hint in report["hints"][:5]:
        assert hint["title"] in text
