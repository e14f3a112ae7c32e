"""The gauges on small traces built here; every expected number is recomputed from the events."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.gauges import Gauge
from gpuprofile.hardware.model import UNKNOWN, Hardware
from gpuprofile.importers.kineto import load_kineto
from helpers.kineto_docs import cpu_op, document, kernel, memcpy, runtime, write

BF16 = "c10::BFloat16"
HARDWARE = Hardware(
    name="test GPU",
    source="user",
    peak_flops={"fp16": 1e15, "bf16": 1e15, "fp32": 6e13},  # fp16 and bf16 tie, as on most GPUs
    dram_bytes_per_s=2e12,
    link_bytes_per_s=25e9,
    memory_bytes=80 * 2**30,
)
MM_DIMS = [[1024, 2048], [2048, 512]]


def events() -> list[dict]:
    return [
        cpu_op("aten::mm", 0, 20, **{"Input Dims": MM_DIMS, "Input type": [BF16, BF16]}),
        runtime("cudaLaunchKernel", 5, 2, corr=1),
        kernel("gemm", 100, 40, corr=1),  # 40 us
        cpu_op("aten::mm", 30, 20, **{"Input Dims": MM_DIMS, "Input type": [BF16, BF16]}),
        runtime("cudaLaunchKernel", 35, 2, corr=2),
        kernel("gemm", 150, 60, corr=2),  # 60 us, then idle until the copies
        memcpy("HtoD", 300, 10, 1_000_000, pinned=True),
        memcpy("DtoH", 320, 30, 500_000),
    ]


def gauges_of(tmp_path: Path, hardware: Hardware = HARDWARE) -> dict[str, Gauge]:
    trace = load_kineto(write(tmp_path / "t.json", document(events())))
    return {g.key: g for g in Analysis(trace, hardware).gauges}


def test_rates_against_their_roofs(tmp_path: Path) -> None:
    g = gauges_of(tmp_path)
    m, k, n = 1024, 2048, 512
    flops = 2 * (2 * m * k * n)
    nbytes = 2 * 2 * (m * k + k * n + m * n)  # bf16, two matmuls, minimal traffic
    seconds = (40 + 60) * 1e-6
    assert g["compute"].value == pytest.approx(flops / seconds)
    assert g["compute"].roof == 1e15 and "bf16" in g["compute"].roof_label
    assert g["compute"].fraction == pytest.approx(flops / seconds / 1e15)
    assert g["dram-bandwidth"].value == pytest.approx(nbytes / seconds)
    assert g["dram-bandwidth"].roof == 2e12
    link = (1_000_000 + 500_000) / ((10 + 30) * 1e-6)
    assert g["host-link"].value == pytest.approx(link)
    assert g["host-link"].roof == 25e9 and g["host-link"].roof_source == "user"
    # GPU window: first kernel start (100 us) to the last copy's end (350 us); busy 100 + 40 us.
    assert g["gpu-busy"].value == pytest.approx(100 * 140 / 250)
    assert g["gpu-busy"].unit == "%"


def test_unknowns_are_stated_not_faked(tmp_path: Path) -> None:
    g = gauges_of(tmp_path, UNKNOWN)
    for key in ("compute", "dram-bandwidth", "host-link"):
        assert g[key].roof is None and g[key].fraction is None
        assert "unknown" in g[key].roof_label
    assert g["compute"].value is not None  # the rate is known without a roof
    memory = g["memory"]
    assert memory.value is None and memory.roof is None
    assert "no GPU allocator events" in memory.note


def test_report_carries_one_gauge_per_key_and_rank(tmp_path: Path) -> None:
    import gpuprofile

    report = gpuprofile.load(write(tmp_path / "t.json", document(events()))).report()
    keys = [(g["key"], g["rank"]) for g in report["gauges"]]
    assert sorted(keys) == sorted(
        (k, 0) for k in ("gpu-busy", "dram-bandwidth", "compute", "host-link", "memory")
    )
    fields = {"value", "roof", "roof_label", "unit", "fraction"}
    assert all(set(g) >= fields for g in report["gauges"])
