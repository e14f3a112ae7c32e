"""Reports of real traces are plain JSON with datasheet roofs and roofline points."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import gpuprofile
from gpuprofile.report.build import plain_report
from gpuprofile.report.schema import report_json, to_report
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


def test_a_multi_rank_roofline_shows_the_ops_it_can_place() -> None:
    # DLRM on 8 ranks: the heaviest points are NCCL collectives, which have no FLOPs; the ops
    # whose FLOPs are counted (their shapes were recorded) must still make the roofline.
    profile = gpuprofile.load(
        require_trace(SHARED_TRACES / "kineto-distributed" / "param_dlrm_8xV100")
    )
    trace = profile.trace
    # The premise, from the kernels themselves: the heaviest kernels by total time are NCCL's.
    totals = trace.kernels.groupby("name", observed=True)["dur_ns"].sum().sort_values()
    assert all(name.startswith("ncclKernel") for name in totals.index[-2:].astype(str))
    # Independently: which recorded ops have matmul input shapes (what a FLOP formula needs).
    mm = trace.ops[trace.ops["name"].astype(str).isin(["aten::mm", "aten::addmm", "aten::bmm"])]
    assert (mm["input_dims"].astype(str) != "None").any()
    points = profile.report()["roofline"]["points"]
    placed = [p for p in points if p["flops"]]
    assert placed and len(points) <= 50
    text = profile.text()
    assert "has a FLOP count" not in text
    # The text's roofline lines (the only ones with an intensity) list the placed points.
    lines = [line for line in text.splitlines() if "FLOP/B" in line]
    assert len(lines) == min(5, len(placed))
    assert f"x{placed[0]['count']}" in lines[0]


def test_the_contract_keeps_every_key_the_report_gathers(kineto_path: Path) -> None:
    """What build_report gathers and what the Structs give back as JSON are the same text: no
    key dropped (a field a detector added but report/schema.py lacks), no int made a float."""
    analysis = gpuprofile.load(kineto_path).analysis
    plain = plain_report(analysis)
    assert json.dumps(report_json(to_report(plain))) == json.dumps(plain)


def test_no_findings_says_what_was_looked_at() -> None:
    """vLLM decoding from CUDA graphs on an MI300X: the GPU is never idle and the graphs
    replay its launches, so nothing is found; the report says so, with the busy share read
    from the raw JSON (the union of the GPU's kernels and copies over their window), and says
    that the roofs are not judged (the graph-replayed kernels have no shapes)."""
    from traces.conftest import read_json, trace_events

    path = require_trace(
        SHARED_TRACES / "kineto" / "tracelens_mi300x_vllm_cudagraph_decode_execution.json.gz"
    )
    gpu = [
        (float(e["ts"]), float(e["ts"]) + float(e["dur"]))
        for e in trace_events(read_json(path))
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
    ]
    busy, end = 0.0, -1.0
    for start, stop in sorted(gpu):
        busy += max(0.0, stop - max(start, end))
        end = max(end, stop)
    window = max(s for _, s in gpu) - min(s for s, _ in gpu)
    report = gpuprofile.load(path).report()
    assert report["hints"] == []
    why = report["no_findings"]
    assert why.startswith(f"The GPU was busy {100 * busy / window:.1f}% of its window")
    assert "replay CUDA graphs" in why and "is not judged" in why
    assert why in gpuprofile.load(path).text()


def test_copies_without_sizes_read_bytes_unknown() -> None:
    """minitoy's two HtoD copies carry no "bytes" argument in the raw JSON: the copy table
    says their size is unknown, not 0 B at 0 B/s."""
    from traces.conftest import read_json, trace_events

    path = require_trace(SHARED_TRACES / "kineto" / "hta_mi250_rocm6_minitoy_train.json.gz")
    copies = [e for e in trace_events(read_json(path)) if e.get("cat") == "gpu_memcpy"]
    assert len(copies) == 2 and not any("bytes" in e.get("args", {}) for e in copies)
    profile = gpuprofile.load(path)
    (row,) = profile.report()["ranks"][0]["copies"]
    assert (row["count"], row["bytes"], row["gbps"]) == (2, None, None)
    assert "bytes unknown" in profile.text() and " 0 B " not in profile.text()


def test_a_device_without_a_name_reads_as_its_properties() -> None:
    """vLLM's MI300X trace lists eight deviceProperties with empty names beside their compute
    units and memory (read from the raw JSON), the rank using one: the rank line says so
    instead of 'no device info'."""
    from gpuprofile.units import format_bytes
    from traces.conftest import read_json

    path = require_trace(
        SHARED_TRACES / "kineto" / "tracelens_mi300x_vllm_cudagraph_decode_execution.json.gz"
    )
    listed = read_json(path)["deviceProperties"]
    assert len(listed) == 8 and not any(p["name"] for p in listed)
    props = listed[0]
    assert all((p["numSms"], p["totalGlobalMem"]) == (304, 206141652992) for p in listed)
    expected = (
        f"unnamed GPU: {props['numSms']} compute units, {format_bytes(props['totalGlobalMem'])}"
    )
    assert f"rank 0 ({expected});" in gpuprofile.load(path).text()
