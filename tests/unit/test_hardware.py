"""Datasheet tables, device-name matching, estimates for unknown devices, user roofs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import gpuprofile
from gpuprofile.hardware.match import hardware_for_device, hardware_for_trace, identify
from gpuprofile.hardware.tables import datasheet, specs, user_hardware
from gpuprofile.trace.precisions import PRECISIONS
from helpers.kineto_docs import document, kernel, write

T = 1e12
G = 1e9
GIB = 2**30

# The devices the issue asks the tables to hold.
REQUIRED = [
    "h100_sxm",
    "h100_pcie",
    "h200_sxm",
    "h800_sxm",
    "b200",
    "a100_sxm_40gb",
    "a100_sxm_80gb",
    "a100_pcie_40gb",
    "a100_pcie_80gb",
    "a10",
    "a10g",
    "l4",
    "l40s",
    "t4",
    "v100_sxm2",
    "v100_pcie",
    "rtx_2080_ti",
    "rtx_3090",
    "rtx_4090",
    "mi210",
    "mi250",
    "mi250x",
    "mi300x",
]


def test_the_tables_hold_every_required_device() -> None:
    assert set(REQUIRED) <= set(specs())


@pytest.mark.parametrize("key", list(specs()))
def test_every_entry_cites_its_datasheet_and_has_sane_magnitudes(key: str) -> None:
    spec = specs()[key]
    assert spec.sources
    for source in spec.sources:
        assert source.url.startswith("https://")
        assert source.table and source.document and source.figures
    hw = spec.hardware()
    assert hw.source == "datasheet"
    assert hw.citation is not None and spec.sources[0].url in hw.citation
    assert set(hw.peak_flops) <= set(PRECISIONS)
    flops = hw.peak_flops
    assert 1 * T <= flops["fp32"] <= 200 * T
    assert hw.dram_bytes_per_s is not None and 100 * G <= hw.dram_bytes_per_s <= 10_000 * G
    assert hw.link_bytes_per_s is not None and 8 * G <= hw.link_bytes_per_s <= 500 * G
    assert hw.memory_bytes is not None and 8 * GIB <= hw.memory_bytes <= 300 * GIB
    if hw.sm_count is not None:
        assert 20 <= hw.sm_count <= 400
    if hw.l2_bytes is not None:
        assert 2**20 <= hw.l2_bytes <= 256 * 2**20
    # Every tabled device has tensor/matrix cores: half precision beats the vector FP32 rate.
    assert flops["fp16"] > flops["fp32"]
    if "bf16" in flops:
        assert flops["bf16"] > flops["fp32"]
    if "tf32" in flops:
        assert flops["fp32"] <= flops["tf32"] < flops["fp16"]
    if "fp8" in flops:
        assert flops["fp8"] >= flops["fp16"]
    if "fp64" in flops:
        assert flops["fp64"] <= flops["fp32"]
    if "int8" in flops:
        assert flops["int8"] >= flops["fp16"]


@pytest.mark.parametrize(
    ("key", "precision", "expected"),
    [
        # Transcribed from the datasheets again here, independently of specs.json.
        ("a100_sxm_80gb", "bf16", 312 * T),  # dense, as listed
        ("a100_sxm_80gb", "tf32", 156 * T),
        ("h100_sxm", "bf16", 1979 * T / 2),  # listed with sparsity only
        ("h100_pcie", "fp8", 3026 * T / 2),
        ("v100_sxm2", "fp16", 125 * T),
        ("rtx_4090", "fp16", 165.2 * T),  # FP32 accumulate
        ("mi300x", "fp8", 2614.9 * T),
        ("mi250x", "bf16", 383 * T / 2),  # per package of 2 GCDs
        ("mi250", "fp32", 45.3 * T / 2),
        ("t4", "fp16", 65 * T),
    ],
)
def test_spot_figures_match_the_datasheets(key: str, precision: str, expected: float) -> None:
    assert datasheet(key).peak_flops[precision] == pytest.approx(expected)


def test_bandwidths_memory_and_counts_are_in_bytes_and_per_device() -> None:
    a100 = datasheet("a100_sxm_80gb")
    assert a100.dram_bytes_per_s == pytest.approx(2039 * G)
    assert a100.link_bytes_per_s == pytest.approx(64 * G / 2)  # "PCIe Gen4: 64GB/s" both ways
    assert a100.memory_bytes == 80 * GIB
    assert a100.l2_bytes == 40 * 2**20
    gcd = datasheet("mi250x")
    assert gcd.sm_count == 220 // 2
    assert gcd.memory_bytes == 128 * GIB // 2
    assert gcd.dram_bytes_per_s == pytest.approx(3200 * G / 2)
    assert "GCD" in gcd.name


PG509_PROPS = {"totalGlobalMem": 42297524224, "numSms": 108, "computeMajor": 8, "computeMinor": 0}
MI250_GCD = {"numSms": 104, "totalGlobalMem": 68702699520, "computeMajor": 9, "computeMinor": 0}
MI300X = {"numSms": 304, "totalGlobalMem": 206141652992, "computeMajor": 9, "computeMinor": 4}


@pytest.mark.parametrize(
    ("name", "props", "key"),
    [
        ("NVIDIA A100-SXM4-80GB", None, "a100_sxm_80gb"),
        ("NVIDIA A100-SXM4-40GB", None, "a100_sxm_40gb"),
        ("A100-PG509-200", PG509_PROPS, "a100_sxm_40gb"),
        ("NVIDIA A100-PG509-200", None, "a100_sxm_40gb"),
        ("NVIDIA A100 80GB PCIe", None, "a100_pcie_80gb"),
        ("NVIDIA A100-PCIE-40GB", None, "a100_pcie_40gb"),
        ("Tesla V100-SXM2-16GB", None, "v100_sxm2"),
        ("Tesla V100-SXM2-32GB", None, "v100_sxm2"),
        ("Tesla V100-DGXS-32GB", None, "v100_sxm2"),
        ("Tesla V100-PCIE-32GB", None, "v100_pcie"),
        ("Tesla V100S-PCIE-32GB", None, "v100s_pcie"),
        ("NVIDIA H100 80GB HBM3", None, "h100_sxm"),
        ("NVIDIA H100 PCIe", None, "h100_pcie"),
        ("NVIDIA H100 NVL", None, "h100_nvl"),
        ("NVIDIA H100", {"numSms": 114}, "h100_pcie"),
        ("NVIDIA H100", {"numSms": 132, "totalGlobalMem": 102085492736}, "h100_sxm"),
        ("NVIDIA H100", None, "h100_sxm"),
        ("NVIDIA H200", None, "h200_sxm"),
        ("NVIDIA H200 NVL", None, "h200_nvl"),
        ("NVIDIA H800", None, "h800_sxm"),
        ("NVIDIA H800 PCIe", None, "h800_pcie"),
        ("NVIDIA B200", None, "b200"),
        ("NVIDIA GH200 480GB", None, "gh200_96gb"),
        ("NVIDIA GeForce RTX 4090", None, "rtx_4090"),
        ("NVIDIA GeForce RTX 3090", None, "rtx_3090"),
        ("NVIDIA GeForce RTX 2080 Ti", None, "rtx_2080_ti"),
        ("Tesla T4", None, "t4"),
        ("NVIDIA L4", None, "l4"),
        ("NVIDIA L40S", None, "l40s"),
        ("NVIDIA A10G", None, "a10g"),
        ("NVIDIA A10", None, "a10"),
        ("AMD Instinct MI300X", None, "mi300x"),
        ("AMD Instinct MI300X VF", None, "mi300x"),
        ("AMD Instinct MI250X", None, "mi250x"),
        ("AMD Instinct MI210", None, "mi210"),
        ("AMD Radeon Graphics", MI250_GCD, "mi250"),
        ("AMD Radeon Graphics", {**MI250_GCD, "numSms": 110}, "mi250x"),
        ("AMD Radeon Graphics", {**MI250_GCD, "gcnArchName": "gfx90a:sramecc+:xnack-"}, "mi250"),
        ("", {**MI300X, "warpSize": 64}, "mi300x"),
        ("", {"numSms": 108, "totalGlobalMem": 84990623744, "computeMajor": 8}, "a100_sxm_80gb"),
    ],
)
def test_naming_variants_resolve_to_their_table_entry(
    name: str, props: dict[str, Any] | None, key: str
) -> None:
    assert identify(name, props)[0] == key
    hw = hardware_for_device(name, props)
    assert hw.source == "datasheet"
    assert hw.name == specs()[key].device_name


@pytest.mark.parametrize(
    "name",
    [
        "NVIDIA GeForce RTX 3090 Ti",
        "NVIDIA GeForce RTX 4090 D",
        "NVIDIA L40",
        "NVIDIA H20",
        "NVIDIA A800-SXM4-80GB",
        "AMD Instinct MI325X",
        "AMD Radeon Graphics",  # no properties: nothing to tell which Radeon
        "",
    ],
)
def test_lookalike_and_generic_names_do_not_resolve(name: str) -> None:
    assert identify(name)[0] is None


def test_a_named_model_outside_the_tables_is_estimated_even_if_it_looks_like_one() -> None:
    # An RTX 6000 Ada has an L40S's SM count, capability and memory, but it is not an L40S.
    props = {"numSms": 142, "computeMajor": 8, "computeMinor": 9, "totalGlobalMem": 48 * GIB}
    assert identify("NVIDIA RTX 6000 Ada Generation", props)[0] is None
    assert hardware_for_device("NVIDIA RTX 6000 Ada Generation", props).source == "estimated"
    assert identify("", props)[0] == "l40s"  # a nameless device is matched by its properties


def test_notes_say_how_an_ambiguous_device_was_decided() -> None:
    pg509 = hardware_for_device("A100-PG509-200", PG509_PROPS)
    assert "PG509" in pg509.notes and "SXM4" in pg509.notes
    h100 = hardware_for_device("NVIDIA H100", {"numSms": 132, "totalGlobalMem": 102085492736})
    assert "132 SMs" in h100.notes
    assert "95.1 GiB" in h100.notes  # 102085492736 / 2**30, a memory variant of the SXM board
    assert "assumed" in hardware_for_device("NVIDIA H100").notes
    gcd = hardware_for_device("AMD Radeon Graphics", MI250_GCD)
    assert "MI210" in gcd.notes  # same per-device roofs, said so
    assert "virtual function" in hardware_for_device("AMD Instinct MI300X VF").notes


def test_reported_properties_override_the_table() -> None:
    hw = hardware_for_device("Tesla V100-SXM2-16GB", {"totalGlobalMem": 16945512448})
    assert hw.memory_bytes == 16945512448
    assert hw.peak_flops["fp16"] == pytest.approx(125 * T)


def test_a_mig_slice_scales_compute_by_its_share_of_sms() -> None:
    hw = hardware_for_device(
        "NVIDIA A100-SXM4-40GB MIG 3g.20gb",
        {"multi_processor_count": 42, "total_memory": 20 * GIB},
    )
    assert hw.peak_flops["bf16"] == pytest.approx(312 * T * 42 / 108)
    assert hw.sm_count == 42
    assert "MIG" in hw.notes
    assert "memory variant" not in hw.notes


def test_an_unknown_nvidia_device_gets_an_fp32_estimate_from_its_properties() -> None:
    props = {
        "numSms": 48,
        "computeMajor": 12,
        "computeMinor": 0,
        "clockRate": 2_625_000,  # kHz
        "memoryClockRate": 14_001_000,  # kHz
        "memoryBusWidth": 192,
    }
    hw = hardware_for_device("NVIDIA GeForce RTX 5070", props)
    assert hw.source == "estimated"
    # 128 FP32 lanes per SM on compute capability 12.x, 2 FLOP per FMA.
    assert hw.peak_flops == {"fp32": pytest.approx(48 * 128 * 2 * 2.625e9)}
    assert hw.dram_bytes_per_s == pytest.approx(2 * 14.001e9 * 192 / 8)
    assert "calibrate()" in hw.notes


def test_the_estimate_reproduces_a_known_datasheet_figure() -> None:
    # An A100-class board under another name: 108 SMs x 64 lanes x 2 x 1.41 GHz = 19.5 TFLOP/s.
    hw = hardware_for_device(
        "NVIDIA A800-SXM4-80GB",
        {"numSms": 108, "computeMajor": 8, "computeMinor": 0, "clockRate": 1_410_000},
    )
    assert hw.source == "estimated"
    assert hw.peak_flops["fp32"] == pytest.approx(19.5 * T, rel=0.01)
    assert hw.dram_bytes_per_s is None
    assert not hw.known


def test_an_unknown_amd_device_is_estimated_with_cdna3_rates() -> None:
    props = {
        "numSms": 304,
        "gcnArchName": "gfx942:sramecc+:xnack-",
        "totalGlobalMem": 256 * GIB,
        "clock_rate": 2_100_000,
    }
    hw = hardware_for_device("AMD Instinct MI325X", props)
    assert hw.source == "estimated"
    # 304 CUs x 128 lanes x 2 x 2.1 GHz: the MI300X datasheet's 163.4 TFLOP/s vector FP32.
    assert hw.peak_flops["fp32"] == pytest.approx(163.4 * T, rel=0.01)


def test_without_a_clock_the_estimate_says_it_assumed_one() -> None:
    hw = hardware_for_device("NVIDIA Mystery", {"numSms": 10, "computeMajor": 8, "computeMinor": 9})
    assert hw.peak_flops["fp32"] == pytest.approx(10 * 128 * 2 * 1.5e9)
    assert "assumed 1.5 GHz" in hw.notes


@pytest.mark.parametrize(
    ("name", "props"),
    [("Mystery Accelerator", None), ("", None), ("NVIDIA Thing", {"totalGlobalMem": 8 * GIB})],
)
def test_a_device_without_usable_properties_is_unknown(
    name: str, props: dict[str, Any] | None
) -> None:
    hw = hardware_for_device(name, props)
    assert hw.source == "unknown"
    assert not hw.peak_flops
    assert "gpuprofile.calibrate()" in hw.notes


def test_user_hardware_in_datasheet_units() -> None:
    mine = user_hardware("my board", bf16_tflops=100, dram_gb_per_s=1000, notes="from a vendor")
    assert mine.source == "user"
    assert mine.peak_flops == {"bf16": 100 * T}
    assert mine.dram_bytes_per_s == 1000 * G
    based = user_hardware("A100 at low clock", based_on="a100_sxm_80gb", bf16_tflops=265)
    assert based.source == "user"
    assert based.peak_flops["bf16"] == 265 * T
    assert based.peak_flops["fp32"] == pytest.approx(19.5 * T)  # kept from the table
    assert based.dram_bytes_per_s == pytest.approx(2039 * G)
    with pytest.raises(TypeError):
        user_hardware("x", bf16=1)
    with pytest.raises(TypeError):
        user_hardware("x", fp4_tflops=1)


A100 = {
    "id": 0,
    "name": "NVIDIA A100-SXM4-80GB",
    "totalGlobalMem": 84990623744,
    "computeMajor": 8,
    "computeMinor": 0,
    "numSms": 108,
}
T4 = {**A100, "id": 1, "name": "Tesla T4", "totalGlobalMem": 15_843_721_216, "numSms": 40}


def _trace(tmp_path: Path, devices: list[dict[str, Any]], kernel_device: int) -> Any:
    doc = document([kernel("gemm", 10, 5, corr=1, device=kernel_device)], deviceProperties=devices)
    return gpuprofile.load(write(tmp_path / "t.json", doc)).trace


def test_hardware_for_trace_prefers_the_device_the_kernels_ran_on(tmp_path: Path) -> None:
    trace = _trace(tmp_path, [A100, T4], kernel_device=1)
    assert hardware_for_trace(trace).name == specs()["t4"].device_name
    trace = _trace(tmp_path, [A100, T4], kernel_device=0)
    assert hardware_for_trace(trace, rank=0).name == specs()["a100_sxm_80gb"].device_name


def test_hardware_for_trace_falls_back_to_a_listed_device(tmp_path: Path) -> None:
    hw = hardware_for_trace(_trace(tmp_path, [A100], kernel_device=5))
    assert hw.name == specs()["a100_sxm_80gb"].device_name
    assert "device 5" in hw.notes


def test_hardware_for_trace_without_device_properties_is_unknown(tmp_path: Path) -> None:
    hw = hardware_for_trace(_trace(tmp_path, [], kernel_device=0))
    assert hw.source == "unknown"
    assert "deviceProperties" in hw.notes
    with pytest.raises(KeyError):
        hardware_for_trace(_trace(tmp_path, [A100], kernel_device=0), rank=3)
