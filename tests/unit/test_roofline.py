"""The roofline on small traces built here, every expected number from the roofline's formulas."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.roofline import Roofline
from gpuprofile.hardware.model import UNKNOWN, Hardware
from gpuprofile.importers.kineto import load_kineto
from helpers.kineto_docs import cpu_op, document, kernel, runtime, write

BF16, F32 = "c10::BFloat16", "float"
PEAK_BF16, PEAK_TF32, PEAK_FP32, DRAM = 1e15, 5e14, 6e13, 2e12
HARDWARE = Hardware(
    name="test GPU",
    source="user",
    peak_flops={"bf16": PEAK_BF16, "tf32": PEAK_TF32, "fp32": PEAK_FP32},
    dram_bytes_per_s=DRAM,
)


def launched(
    name: str, ts: float, dims: list, types: list, kernel_name: str, dur: float, corr: int
) -> list[dict]:
    """An op with shapes, its launch call and its kernel (durations in us)."""
    return [
        cpu_op(name, ts, 20, **{"Input Dims": dims, "Input type": types}),
        runtime("cudaLaunchKernel", ts + 5, 2, corr=corr),
        kernel(kernel_name, 10_000 + ts, dur, corr=corr),
    ]


def events() -> list[dict]:
    return [
        *launched("aten::mm", 0, [[4096, 4096], [4096, 4096]], [BF16, BF16], "gemm", 200, 1),
        *launched("aten::mm", 100, [[4096, 4096], [4096, 4096]], [BF16, BF16], "gemm", 300, 2),
        *launched(
            "aten::add",
            200,
            [[1024, 1024], [1024, 1024], []],
            [BF16, BF16, "Scalar"],
            "add_kernel",
            10,
            3,
        ),
        *launched("aten::mm", 300, [[2048, 2048], [2048, 2048]], [F32, F32], "sgemm", 500, 4),
        *launched(
            "aten::cat", 400, [[[8, 8], [8, 8]], []], ["TensorList", "Scalar"], "cat_kernel", 5, 5
        ),
    ]


def analyse(tmp_path: Path, hardware: Hardware = HARDWARE, evs: list | None = None) -> Analysis:
    return Analysis(load_kineto(write(tmp_path / "t.json", document(evs or events()))), hardware)


def point(roofline: Roofline, key: str) -> Any:
    rows = roofline.points[roofline.points["key"] == key]
    assert len(rows) == 1, f"{key} in {roofline.points['key'].tolist()}"
    return rows.iloc[0]


def test_compute_bound_bf16_matmul(tmp_path: Path) -> None:
    roofline = analyse(tmp_path).roofline
    p = point(roofline, "op:aten::mm|[[4096, 4096], [4096, 4096]]")
    flops = 2 * 2 * 4096**3  # two ops
    nbytes = 2 * 3 * 4096 * 4096 * 2
    seconds = (200 + 300) * 1e-6
    intensity = flops / nbytes
    assert p["count"] == 2 and p["time_ns"] == 500_000
    assert p["flops"] == flops and p["bytes"] == nbytes
    assert p["intensity"] == pytest.approx(intensity)
    assert intensity > PEAK_BF16 / DRAM
    assert p["bound"] == "compute" and p["roof"] == "bf16" and p["tensor_cores"]
    assert p["precision"] == "bf16" and p["flops_source"] == "computed"
    assert p["attainable_flops_per_s"] == pytest.approx(PEAK_BF16)
    assert p["achieved_flops_per_s"] == pytest.approx(flops / seconds)
    assert p["pct_of_roof"] == pytest.approx(flops / seconds / PEAK_BF16 * 100)
    assert p["time_at_roof_ns"] == pytest.approx(flops / PEAK_BF16 * 1e9)
    assert p["saved_ns"] == pytest.approx(500_000 - flops / PEAK_BF16 * 1e9)
    assert p["ridge_intensity"] == pytest.approx(PEAK_BF16 / DRAM)


def test_memory_bound_elementwise_add(tmp_path: Path) -> None:
    roofline = analyse(tmp_path).roofline
    p = point(roofline, "op:aten::add|[[1024, 1024], [1024, 1024], []]")
    flops, nbytes, seconds = 1024 * 1024, 3 * 1024 * 1024 * 2, 10e-6
    intensity = flops / nbytes
    attainable = intensity * DRAM
    # Elementwise bf16 math runs on the fp32 vector units: its compute roof is fp32's.
    assert intensity < PEAK_FP32 / DRAM
    assert p["bound"] == "memory" and p["roof"] == "dram" and not p["tensor_cores"]
    assert p["attainable_flops_per_s"] == pytest.approx(attainable)
    assert p["achieved_bytes_per_s"] == pytest.approx(nbytes / seconds)
    assert p["pct_of_roof"] == pytest.approx(flops / seconds / attainable * 100)
    assert p["time_at_roof_ns"] == pytest.approx(flops / attainable * 1e9)
    assert p["saved_ns"] == pytest.approx(seconds * 1e9 - nbytes / DRAM * 1e9)


def test_fp32_matmul_is_held_to_the_fp32_roof(tmp_path: Path) -> None:
    # TF32 is off by default for matmuls: the roof is fp32's even though the GPU lists tf32.
    p = point(analyse(tmp_path).roofline, "op:aten::mm|[[2048, 2048], [2048, 2048]]")
    flops = 2 * 2048**3
    assert p["bound"] == "compute" and p["roof"] == "fp32" and not p["tensor_cores"]
    assert p["time_at_roof_ns"] == pytest.approx(flops / PEAK_FP32 * 1e9)
    assert p["pct_of_roof"] == pytest.approx(flops / 500e-6 / PEAK_FP32 * 100)


def test_unknown_flops_and_coverage(tmp_path: Path) -> None:
    roofline = analyse(tmp_path).roofline
    cat = point(roofline, "op:aten::cat|[[[8, 8], [8, 8]], []]")
    assert cat["flops_source"] == "unknown" and cat["bound"] == "unknown"
    assert cat["time_ns"] == 5_000 and math.isnan(cat["flops"]) and math.isnan(cat["pct_of_roof"])
    known = 200 + 300 + 10 + 500
    assert roofline.coverage == pytest.approx(known / (known + 5))
    assert roofline.time_basis == "gpu"


def test_kernel_points_inherit_their_ops_costs(tmp_path: Path) -> None:
    analysis = analyse(tmp_path)
    roofline = analysis.roofline
    gemm = point(roofline, "kernel:gemm")
    assert gemm["level"] == "kernel" and gemm["count"] == 2 and gemm["time_ns"] == 500_000
    assert gemm["flops"] == 2 * 2 * 4096**3
    assert gemm["bound"] == "compute" and gemm["roof"] == "bf16"
    ids = analysis.trace.kernels.set_index("name")["id"]
    heaviest_first = tuple(ids["gemm"].sort_values(ascending=False).tolist())  # 300 us is later
    assert gemm["event_ids"] == heaviest_first
    assert point(roofline, "kernel:cat_kernel")["bound"] == "unknown"


def test_unknown_hardware_leaves_the_roofs_unknown(tmp_path: Path) -> None:
    roofline = analyse(tmp_path, UNKNOWN).roofline
    points = roofline.points
    assert (points["bound"] == "unknown").all()
    assert not points["tensor_cores"].any()
    for column in ("attainable_flops_per_s", "pct_of_roof", "time_at_roof_ns", "saved_ns"):
        assert points[column].isna().all(), column
    mm = point(roofline, "op:aten::mm|[[4096, 4096], [4096, 4096]]")
    assert mm["intensity"] == pytest.approx(2 * 4096 / (3 * 2))  # still measured
    assert roofline.hardware is UNKNOWN


def test_a_gpu_without_the_tensor_core_precision_falls_back_to_fp32(tmp_path: Path) -> None:
    v100_like = Hardware("old", "user", {"fp16": 1.2e14, "fp32": 1.5e13}, dram_bytes_per_s=9e11)
    p = point(analyse(tmp_path, v100_like).roofline, "op:aten::mm|[[4096, 4096], [4096, 4096]]")
    assert p["roof"] == "fp32" and not p["tensor_cores"]
    assert p["time_at_roof_ns"] == pytest.approx(2 * 2 * 4096**3 / 1.5e13 * 1e9)


def test_columns_the_detectors_read(tmp_path: Path) -> None:
    points = analyse(tmp_path).roofline.points
    expected = [
        "key", "level", "name", "shapes", "rank", "count", "time_ns", "flops", "bytes",
        "flops_source", "precision", "tensor_cores", "intensity", "achieved_flops_per_s",
        "achieved_bytes_per_s", "bound", "roof", "attainable_flops_per_s", "pct_of_roof",
        "time_at_roof_ns", "saved_ns", "event_ids",
    ]  # fmt: skip
    assert set(expected) <= set(points.columns)
    assert points["key"].is_unique
    assert set(points["level"]) == {"op", "kernel"}
    assert (points["saved_ns"].dropna() >= 0).all()
    assert all(isinstance(ids, tuple) and 0 < len(ids) <= 50 for ids in points["event_ids"])


def test_cpu_only_trace_uses_the_ops_durations(tmp_path: Path) -> None:
    evs = [
        cpu_op(
            "aten::mm", 0, 100, **{"Input Dims": [[64, 64], [64, 64]], "Input type": [F32, F32]}
        ),
        cpu_op("aten::view", 200, 10, **{"Input Dims": [[8], []], "Input type": [F32, "Scalar"]}),
    ]
    roofline = analyse(tmp_path, evs=evs).roofline
    assert roofline.time_basis == "cpu"
    assert roofline.points["key"].tolist() == ["op:aten::mm|[[64, 64], [64, 64]]"]
    p = roofline.points.iloc[0]
    assert p["time_ns"] == 100_000
    assert p["achieved_flops_per_s"] == pytest.approx(2 * 64**3 / 100e-6)
    assert roofline.coverage == pytest.approx(100 / 110)


def test_ranks_get_their_own_points(tmp_path: Path) -> None:
    for rank in (0, 1):
        doc = document(events()[:3], distributedInfo={"rank": rank, "world_size": 2})
        write(tmp_path / f"rank{rank}.json", doc)
    points = Analysis(load_kineto(tmp_path), HARDWARE).roofline.points
    assert points["key"].is_unique
    mm = points[points["name"] == "aten::mm"]
    assert sorted(mm["rank"].tolist()) == [0, 1]
    assert all(key.endswith(f"|rank={r}") for key, r in zip(mm["key"], mm["rank"]))
    assert np.array_equal(mm["flops"].to_numpy(), np.full(2, 2 * 4096**3))
