"""Analyses and hardware answer odd values with "unknown, because ...", never a crash (issue 16).

Each case is a small Kineto document built here: 12 aten::mm (256x512 @ 512x256, fp32) each
launching one 30 us kernel, on a device named as an A100 SXM4 80GB, with one value made odd:
a device property, an op's recorded shapes or types, a kernel's launch facts. The report and
its text view must come out, and the odd value must be unknown with its reason, not used.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import gpuprofile
from gpuprofile.analyses import recorded
from gpuprofile.trace import properties
from helpers.kineto_docs import cpu_op, document, kernel, runtime

# NVIDIA A100 Tensor Core GPU datasheet: FP32 19.5 TFLOPS, HBM2e 2,039 GB/s (80GB SXM).
A100_FP32 = 19.5e12
A100_DRAM = 2039e9
DEVICE = {
    "id": 0,
    "name": "NVIDIA A100-SXM4-80GB",
    "numSms": 108,
    "maxThreadsPerMultiprocessor": 2048,
    "computeMajor": 8,
    "computeMinor": 0,
    "totalGlobalMem": 85899345920,
}
M, K, N = 256, 512, 256
LAUNCHES = 12
# A stand-in for a value JSON can hold but Python's json cannot write (1e400): replaced in the
# text after json.dumps.
HUGE = "@HUGE@"


def events(dims: Any = None, types: Any = None, **kernel_args: Any) -> list[dict[str, Any]]:
    out = []
    for i in range(LAUNCHES):
        ts = i * 100.0
        recorded_inputs = {
            "Input Dims": [[M, K], [K, N]] if dims is None else dims,
            "Input type": ["float", "float"] if types is None else types,
        }
        out.append(cpu_op("aten::mm", ts, 40, ext=i, **recorded_inputs))
        out.append(runtime("cudaLaunchKernel", ts + 5, 10, corr=1000 + i))
        launch = {"External id": i, "grid": [4, 1, 1], "block": [128, 1, 1], **kernel_args}
        out.append(kernel("sgemm_128x64_nn", ts + 20, 30, 1000 + i, **launch))
    return out


def load(tmp_path: Path, trace_events: list[dict[str, Any]], **device: Any) -> Any:
    doc = document(trace_events, deviceProperties=[{**DEVICE, **device}])
    text = json.dumps(doc).replace(json.dumps(HUGE), "1e400")
    path = tmp_path / "trace.json"
    path.write_text(text)
    return gpuprofile.load(path)


def answered(profile: Any) -> dict[str, Any]:
    """The report and its text view, and what every report must satisfy: no gauge below zero."""
    report = profile.report()
    assert profile.text().startswith("gpuprofile report")
    for gauge in report["gauges"]:
        assert gauge["value"] is None or gauge["value"] >= 0, gauge
        assert gauge["roof"] is None or gauge["roof"] > 0, gauge
    for point in report["roofline"]["points"]:
        assert point["pct_of_roof"] is None or point["pct_of_roof"] >= 0, point
    return report


def gauge(report: dict[str, Any], key: str) -> dict[str, Any]:
    [found] = [g for g in report["gauges"] if g["key"] == key]
    return found


# --- device properties ---------------------------------------------------------------------


@pytest.mark.parametrize("value", [-106, True, 0, 1.5, "108", "1e400", "True", [108], {"n": 1}])
def test_an_unusable_sm_count_is_unknown_and_the_datasheet_stands(
    tmp_path: Path, value: Any
) -> None:
    """The name says A100 SXM4 80GB: its datasheet roofs hold, unscaled by a bogus SM count
    (a negative one gave "-106% of the roof", ``true`` one SM and 358%)."""
    report = answered(load(tmp_path, events(), numSms=value))
    hardware = report["hardware"]
    assert hardware["source"] == "datasheet"
    assert hardware["peak_flops"]["fp32"] == pytest.approx(A100_FP32)
    assert hardware["dram_bytes_per_s"] == pytest.approx(A100_DRAM)
    assert hardware["sm_count"] == 108  # the datasheet's, not the trace's
    assert said(report, "numSms")
    [device] = report["ranks"][0]["devices"]
    assert device["sm_count"] is None


def test_a_non_finite_sm_count_is_unknown() -> None:
    """(The Kineto reader refuses 1e400 in deviceProperties; other sources may not.)"""
    from gpuprofile.hardware import hardware_for_device

    for value in (float("inf"), float("nan"), 10**400):
        hardware = hardware_for_device("NVIDIA A100-SXM4-80GB", {"numSms": value})
        assert hardware.peak_flops["fp32"] == pytest.approx(A100_FP32)
        assert "numSms=" in hardware.notes


def said(report: dict[str, Any], key: str) -> bool:
    """The property is named as unusable: by the reader's notice (the Kineto boundary checks
    device properties with trace/properties.py) or by the hardware's notes (any other Trace)."""
    texts = [report["hardware"]["notes"], *(n["text"] for n in report["notices"])]
    return any(f"{key}=" in text for text in texts)


@pytest.mark.parametrize("value", [True, -1, "1e400"])
def test_an_unnamed_device_with_an_unusable_sm_count_has_unknown_roofs_with_the_reason(
    tmp_path: Path, value: Any
) -> None:
    report = answered(load(tmp_path, events(), name="", numSms=value))
    hardware = report["hardware"]
    assert hardware["source"] == "unknown"
    assert said(report, "numSms")
    assert "roofs unknown" in load(tmp_path, events(), name="", numSms=value).text()
    assert gauge(report, "compute")["roof"] is None


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("name", ["A100"]),
        ("name", 5),
        ("name", True),
        ("id", [0]),
        ("id", True),
        ("maxThreadsPerMultiprocessor", "True"),
        ("maxThreadsPerMultiprocessor", [1]),
        ("computeMajor", "True"),
        ("computeMajor", [8]),
        ("computeMajor", True),
        ("totalGlobalMem", "x"),
        ("totalGlobalMem", -1),
        ("clockRate", "x"),
    ],
)
def test_any_odd_device_property_leaves_the_report_standing(
    tmp_path: Path, key: str, value: Any
) -> None:
    report = answered(load(tmp_path, events(), **{key: value}))
    assert said(report, key) or key in ("name", "id")
    for device in report["ranks"][0]["devices"]:
        assert isinstance(device["name"], str)
        assert device["id"] is None or isinstance(device["id"], int)


def test_checked_properties_keep_good_figures_and_say_which_were_dropped() -> None:
    checked, reasons = properties.checked_properties(
        {"numSms": True, "totalGlobalMem": 8.0e10, "computeMinor": 0, "uuid": "GPU-1"}
    )
    assert checked == {"totalGlobalMem": 80_000_000_000, "computeMinor": 0, "uuid": "GPU-1"}
    assert reasons == ["numSms=True is not a whole number above zero"]
    assert [properties.count(v) for v in (108, 108.0, 0, -1, True, "108", float("inf"))] == [
        108, 108, None, None, None, None, None,
    ]  # fmt: skip
    assert properties.count(2**60) is None  # no device has that many of anything
    assert [properties.capability(v) for v in ("8.0", "9.4", "True", "0.1", "8", 8)] == [
        "8.0", "9.4", None, None, None, None,
    ]  # fmt: skip


# --- recorded shapes and types -------------------------------------------------------------


@pytest.mark.parametrize(
    "dims",
    [
        [[M, -K], [-K, N]],
        [[True, K], [K, N]],
        [[M, K], [K, 2**70]],
        [[2**62, 2**62], [2**62, 2]],
        [[M, 2.5], [K, N]],
        [[M, HUGE], [K, N]],
    ],
)
def test_dims_no_tensor_can_have_make_the_ops_flops_unknown(tmp_path: Path, dims: Any) -> None:
    profile = load(tmp_path, events(dims=dims))
    report = answered(profile)
    costs = profile.analysis.op_costs
    mm = costs[costs["name"] == "aten::mm"]
    assert len(mm) == LAUNCHES
    assert mm["flops"].isna().all()
    assert (mm["flops_source"] == "unknown").all()
    # The Kineto reader drops such dims at its boundary and says so; a Trace from elsewhere
    # reaches the analysis with them, which says why it has no FLOPs.
    reason = "not a JSON list" if HUGE in json.dumps(dims) else "not a tensor's shape"
    dropped = any("Input Dims" in n["text"] for n in report["notices"])
    assert dropped or mm["unknown_reason"].str.contains(reason).all()
    # Counted as time without FLOPs, not dropped: the coverage says so.
    assert report["roofline"]["coverage"] == 0.0


@pytest.mark.parametrize("types", [[["float"], "float"], "float", 1.5, [1, 2], [None, None]])
def test_input_types_that_are_no_names_do_not_crash(tmp_path: Path, types: Any) -> None:
    profile = load(tmp_path, events(types=types))
    answered(profile)
    costs = profile.analysis.op_costs
    assert not costs.loc[costs["name"] == "aten::mm", "flops_source"].eq("measured").any()


def test_a_formula_that_raises_makes_that_ops_flops_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Any exception from torch's formula (here a RuntimeError, as negative dims gave) is the
    op's reason, and the other ops keep theirs."""
    from gpuprofile.analyses import torch_flops

    def broken(*_args: Any, **_kwargs: Any) -> int:
        raise RuntimeError("boom\nException raised from somewhere in C++")

    formulas = {**torch_flops.registry(), "aten::mm": broken}
    monkeypatch.setattr(torch_flops, "registry", lambda: formulas)
    # No cache outlives an Analysis (flops describes each trace's ops afresh): nothing to clear.
    profile = load(tmp_path, events())
    answered(profile)
    costs = profile.analysis.op_costs
    reasons = costs.loc[costs["name"] == "aten::mm", "unknown_reason"]
    assert (reasons == "torch's formula rejected the recorded inputs: boom").all()


def test_a_convolution_with_stride_zero_is_unknown_not_a_division_by_zero(tmp_path: Path) -> None:
    # aten::convolution(input, weight, bias, stride, padding, dilation, transposed,
    # output_padding, groups)
    dims = [[8, 3, 32, 32], [16, 3, 3, 3], [16], [], [], [], [], [], []]
    types = ["float", "float", "float", "ScalarList", "ScalarList", "ScalarList", "Scalar",
             "ScalarList", "Scalar"]  # fmt: skip
    concrete = ["", "", "", "[0, 0]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"]
    op = cpu_op(
        "aten::convolution", 0, 50, ext=0,
        **{"Input Dims": dims, "Input type": types, "Concrete Inputs": concrete},
    )  # fmt: skip
    launch = [runtime("cudaLaunchKernel", 5, 5, corr=1), kernel("conv", 20, 20, 1)]
    profile = load(tmp_path, [op, *launch])
    answered(profile)
    costs = profile.analysis.op_costs
    [reason] = costs.loc[costs["name"] == "aten::convolution", "unknown_reason"]
    assert "division" in reason or "zero" in reason


def test_recorded_shapes_are_lists_of_whole_numbers_a_tensor_can_have() -> None:
    assert recorded.shape([2, 3]) == (2, 3)
    assert recorded.shape([]) == ()
    assert recorded.shape([0, 5]) == (0, 5)
    for bad in ([-1], [True, 2], [2.0], [2**40, 2**40], "x", None, [[2]]):
        assert recorded.shape(bad) is None, bad
    assert recorded.decode("[1, 2") is None
    assert recorded.decode("[" * 100_000 + "]" * 100_000) is None  # too deep: no RecursionError
    assert recorded.number(True) is None and recorded.number(10**400) is None


# --- kernel launch facts -------------------------------------------------------------------


@pytest.mark.parametrize(
    "launch",
    [
        {"grid": [2**62, 2**62, 2**62], "blocks per SM": 1.0},
        {"grid": [-5, 1, 1], "blocks per SM": 0.04},
        {"block": [-128, 1, 1], "blocks per SM": 0.04},
        {"blocks per SM": -1.0},
        {"blocks per SM": 1e-300},
        {"blocks per SM": 0.04, "est. achieved occupancy %": -5},
        {"blocks per SM": 0.04, "est. achieved occupancy %": 1e308},
        {"registers per thread": -3, "blocks per SM": 0.04},
    ],
)
def test_odd_launch_facts_do_not_crash_the_occupancy_detector(
    tmp_path: Path, launch: dict[str, Any]
) -> None:
    from gpuprofile.analyses.detectors import low_occupancy

    profile = load(tmp_path, events(**launch))
    answered(profile)
    table = low_occupancy.kernel_waves(profile.analysis, 0, 108)
    if len(table):
        assert (table["blocks"] >= 1).all() and (table["sms"] >= 1).all()
        assert ((table["idle"] >= 0) & (table["idle"] <= 1)).all()
