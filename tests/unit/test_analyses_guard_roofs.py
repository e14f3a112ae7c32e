"""No gauge or percent of roof is shown past what the device can do, or below zero (issue 16).

Small Kineto documents built here; every expected figure is worked out in the test from the
shapes it writes and the A100 SXM4 80GB datasheet (NVIDIA A100 Tensor Core GPU datasheet:
FP32 19.5 TFLOPS, BF16 tensor core 312 TFLOPS, HBM2e 2,039 GB/s, 80 GB).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import gpuprofile
from gpuprofile.analyses.roofline import OVER_ROOF
from gpuprofile.hardware import Hardware
from helpers.kineto_docs import cpu_op, document, kernel, memory, runtime, write

A100_FP32 = 19.5e12
A100_BF16 = 312e12
DEVICE = {
    "id": 0,
    "name": "NVIDIA A100-SXM4-80GB",
    "numSms": 108,
    "computeMajor": 8,
    "computeMinor": 0,
    "totalGlobalMem": 85899345920,
}


def launch(op: str, i: int, ts: float, dur: float, dims: Any, types: Any) -> list[dict[str, Any]]:
    """One op with its recorded inputs, its launch and its kernel (dur us long)."""
    args = {"Input Dims": dims, "Input type": types}
    return [
        cpu_op(op, ts, dur + 30, ext=i, **args),
        runtime("cudaLaunchKernel", ts + 5, 5, corr=1000 + i),
        kernel(f"{op}_kernel", ts + 20, dur, 1000 + i, **{"External id": i}),
    ]


def profile(tmp_path: Path, events: list[dict[str, Any]], **kwargs: Any) -> Any:
    path = write(tmp_path / "trace.json", document(events, deviceProperties=[DEVICE]))
    return gpuprofile.load(path, **kwargs)


def gauge(report: dict[str, Any], key: str) -> dict[str, Any]:
    [found] = [g for g in report["gauges"] if g["key"] == key]
    return found


def test_work_far_past_its_roof_is_not_shown_as_a_percent_of_it(tmp_path: Path) -> None:
    """A 4096^3 fp32 matmul (2 * 4096^3 FLOPs) in 30 us is 4.58 PFLOP/s: 235x the fp32 roof.
    Not a figure against that roof; the notices say why."""
    n, dur_us = 4096, 30.0
    events = [
        e
        for i in range(4)
        for e in launch("aten::mm", i, i * 200.0, dur_us, [[n, n], [n, n]], ["float", "float"])
    ]
    p = profile(tmp_path, events)
    report = p.report()
    achieved = 2 * n**3 / (dur_us * 1e-6)
    assert achieved / A100_FP32 > OVER_ROOF  # the case is one
    compute = gauge(report, "compute")
    assert compute["value"] is None and compute["fraction"] is None
    assert compute["roof"] == pytest.approx(A100_FP32)
    assert "not shown" in compute["note"] and "4.58 PFLOP/s" in compute["note"]
    points = report["roofline"]["points"]
    assert points and all(pt["pct_of_roof"] is None for pt in points)
    assert all(pt["saved_ns"] is None for pt in points)
    assert all(pt["achieved_flops_per_s"] == pytest.approx(achieved) for pt in points)
    [notice] = [n for n in report["notices"] if n["kind"] == "roofline"]
    assert f"{len(points)} roofline points" in notice["text"]
    text = p.text()
    assert "far past the fp32 roof" in text
    assert "4.58 PFLOP/s" in text


def test_work_within_twice_its_roof_keeps_its_percent(tmp_path: Path) -> None:
    """1.5x the roof stays a figure (caches, boost clocks and FLOP conventions explain it):
    a 1024^3 fp32 matmul at 1.5 x 19.5 TFLOP/s takes 2 * 1024^3 / 29.25e12 s."""
    n = 1024
    dur_us = 2 * n**3 / (1.5 * A100_FP32) * 1e6
    events = launch("aten::mm", 0, 0.0, round(dur_us, 3), [[n, n], [n, n]], ["float", "float"])
    report = profile(tmp_path, events).report()
    [point] = [pt for pt in report["roofline"]["points"] if pt["level"] == "kernel"]
    assert point["pct_of_roof"] == pytest.approx(150, rel=1e-3)
    assert gauge(report, "compute")["fraction"] == pytest.approx(1.5, rel=1e-3)
    assert not [n for n in report["notices"] if n["kind"] == "roofline"]


def test_the_compute_gauge_holds_each_precision_to_its_own_peak(tmp_path: Path) -> None:
    """A bf16 matmul (tensor cores) and an fp32 add (vector units): the roof is the rate of
    both done at their own peaks, never the fp32 peak for the bf16 FLOPs (that gave 302%)."""
    m = k = n = 2048
    elements = 4096 * 4096
    events = [
        *launch("aten::mm", 0, 0.0, 100.0, [[m, k], [k, n]], ["c10::BFloat16"] * 2),
        *launch("aten::add", 1, 500.0, 200.0, [[4096, 4096], [4096, 4096], []],
                ["float", "float", "Scalar"]),
    ]  # fmt: skip
    report = profile(tmp_path, events).report()
    mm_flops, add_flops = 2 * m * k * n, elements  # add: one FLOP per output element
    roof = (mm_flops + add_flops) / (mm_flops / A100_BF16 + add_flops / A100_FP32)
    value = (mm_flops + add_flops) / 300e-6
    compute = gauge(report, "compute")
    assert compute["roof"] == pytest.approx(roof, rel=1e-9)
    assert compute["value"] == pytest.approx(value, rel=1e-9)
    assert compute["fraction"] == pytest.approx(value / roof, rel=1e-9)
    assert "bf16 and fp32 peaks, weighted by FLOPs" in compute["roof_label"]


def test_a_user_roof_far_below_the_work_flags_the_gauges(tmp_path: Path) -> None:
    n = 1024
    events = launch("aten::mm", 0, 0.0, 100.0, [[n, n], [n, n]], ["float", "float"])
    tiny = Hardware(name="tiny", source="user", peak_flops={"fp32": 1e9}, dram_bytes_per_s=1e9)
    report = profile(tmp_path, events, hardware=tiny).report()
    for key in ("compute", "dram-bandwidth"):
        assert gauge(report, key)["value"] is None, key
        assert "more than the device can do" in gauge(report, key)["note"]


@pytest.mark.parametrize("rate", [-1.0, 0.0, float("inf"), float("nan"), True])
def test_a_roof_is_a_rate_above_zero(rate: Any) -> None:
    with pytest.raises(ValueError, match="no rate above 0"):
        Hardware(name="mine", source="user", peak_flops={"fp32": rate})
    with pytest.raises(ValueError, match="no rate above 0"):
        Hardware(name="mine", source="user", dram_bytes_per_s=rate)


@pytest.mark.parametrize("size", [-1, 0, True, 1.5, "80"])
def test_a_hardware_size_is_a_count_above_zero(size: Any) -> None:
    for field in ("sm_count", "memory_bytes", "l2_bytes"):
        with pytest.raises(ValueError, match="no count above 0"):
            Hardware(name="mine", source="user", **{field: size})


def memory_event(ts: float, total: int) -> dict[str, Any]:
    return memory(ts, allocated=total, reserved=max(total, 0), nbytes=1024)


def test_memory_past_the_capacity_is_not_shown(tmp_path: Path) -> None:
    """The device has 80 GiB (totalGlobalMem): 200 GiB allocated on it says the counts (or
    the capacity) are wrong."""
    events = [
        *launch("aten::mm", 0, 0.0, 100.0, [[64, 64], [64, 64]], ["float", "float"]),
        memory_event(10.0, 200 * 2**30),
    ]
    memory = gauge(profile(tmp_path, events).report(), "memory")
    assert memory["value"] is None
    assert memory["roof"] == 85899345920
    assert "not shown" in memory["note"] and "2.5x the roof" in memory["note"]


@pytest.mark.parametrize("totals", [[-1], [-1, -(2**30)]])
def test_allocator_events_without_totals_tell_no_peak(tmp_path: Path, totals: list[int]) -> None:
    """Total Allocated -1 is the reader's "not written" (a shared V100 trace has only those:
    its peak read -1 B), and below zero no total at all."""
    events = [
        *launch("aten::mm", 0, 0.0, 100.0, [[64, 64], [64, 64]], ["float", "float"]),
        *(memory_event(10.0 + i, total) for i, total in enumerate(totals)),
    ]
    memory = gauge(profile(tmp_path, events).report(), "memory")
    assert memory["value"] is None
    assert "carry no totals" in memory["note"]


def test_a_collective_far_past_its_link_has_no_percent_of_it() -> None:
    from gpuprofile.report.distributed import _pct_of_link

    nvlink = 450e9  # H100 NVLink, one direction
    assert _pct_of_link(405e9, nvlink) == pytest.approx(90)
    assert _pct_of_link(3 * nvlink, nvlink) is None  # 300%: the byte counts are wrong
    assert _pct_of_link(-1.0, nvlink) is None
    assert _pct_of_link(405e9, None) is None


def test_a_cpu_trace_past_its_roof_is_not_told_of_tensor_cores(tmp_path: Path) -> None:
    """The same matmuls as host ops alone, held to a CPU's roof: the notice gives no TF32
    explanation (a CPU has no tensor cores); the GPU trace's notice does."""
    n, dur_us = 4096, 30.0
    cpu = [
        cpu_op("aten::mm", i * 200.0, dur_us, **{"Input Dims": [[n, n], [n, n]],
                                                 "Input type": ["float", "float"]})
        for i in range(4)
    ]  # fmt: skip
    cpu_roofs = Hardware(name="a CPU", source="user", peak_flops={"fp32": 1e12},
                         dram_bytes_per_s=50e9)  # fmt: skip
    report = profile(tmp_path, cpu, hardware=cpu_roofs).report()
    [notice] = [n for n in report["notices"] if n["kind"] == "roofline"]
    assert "other units than that roof's, or its" in notice["text"]
    assert "TF32" not in notice["text"]
    gpu = [
        e
        for i in range(4)
        for e in launch("aten::mm", i, i * 200.0, dur_us, [[n, n], [n, n]], ["float", "float"])
    ]
    [notice] = [n for n in profile(tmp_path, gpu).report()["notices"] if n["kind"] == "roofline"]
    assert "(fp32 matmuls on TF32 tensor cores)" in notice["text"]
