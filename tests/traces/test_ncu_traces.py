"""The shared Nsight Compute CSVs (../shared/traces/ncu): every launch, its time, DRAM bytes and
FLOPs, and the device, against a reading of each file with the csv module alone."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

import gpuprofile
from gpuprofile.cli import main
from gpuprofile.hardware.match import hardware_for_trace
from helpers.prerequisites import SHARED_TRACES, require_trace

NCU = SHARED_TRACES / "ncu"
FILES = (
    "rtx5070_gemm_naive.csv", "rtx5070_gemm_tiled.csv", "rtx5070_gemm_register_blocked.csv",
    "rtx5070_gemm_vectorized.csv", "rtx5070_saxpy.csv", "rtx5070_transpose_naive.csv",
    "rtx5070_transpose_tiled.csv",
)  # fmt: skip
TIME_UNITS = {"ns": 1, "nsecond": 1, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6}
BYTE_UNITS = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}
SASS = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum"


def _rows(path: Path) -> list[dict[str, str]]:
    """The metric rows: the BOM dropped, program output before the header skipped."""
    text = path.read_bytes().decode("utf-8")
    text = text[1:] if text.startswith("\ufeff") else text
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID",'))
    return list(csv.DictReader(lines[start:]))


def _value(row: dict[str, str]) -> float:
    return float(row["Metric Value"].replace(",", ""))


def _expected(path: Path) -> dict[str, dict[str, float]]:
    """Per launch ID: time (ns), DRAM bytes, FLOPs (add + mul + 2 fma, NaN without counts)."""
    launches: dict[str, dict[str, float]] = {}
    for row in _rows(path):
        metrics = launches.setdefault(row["ID"], {})
        unit, name = row["Metric Unit"], row["Metric Name"]
        if name == "gpu__time_duration.sum":
            metrics["time"] = _value(row) * TIME_UNITS[unit]
        elif name.startswith("dram__bytes_") and name.endswith(".sum"):
            metrics["bytes"] = metrics.get("bytes", 0.0) + _value(row) * BYTE_UNITS[unit]
        elif name.startswith("smsp__sass_thread_inst_executed_op_"):
            weight = 2 if "fma_pred_on" in name else 1
            metrics["flops"] = metrics.get("flops", 0.0) + weight * _value(row)
    return launches


@pytest.fixture(params=FILES)
def ncu_file(request: pytest.FixtureRequest) -> Path:
    return require_trace(NCU / request.param)


def test_launches_times_bytes_and_flops(ncu_file: Path) -> None:
    expected = _expected(ncu_file)
    profile = gpuprofile.load(ncu_file)
    trace = profile.trace
    kernels = trace.kernels.sort_values("id")
    assert trace.meta.source.format == "ncu"
    assert len(kernels) == len(expected) > 0
    ids = sorted(expected, key=int)
    assert kernels["dur_ns"].tolist() == [round(expected[i]["time"]) for i in ids]
    assert kernels["bytes"].tolist() == [expected[i]["bytes"] for i in ids]
    for flops, launch in zip(kernels["flops"], ids, strict=True):
        want = expected[launch].get("flops", math.nan)
        assert flops == want or (math.isnan(flops) and math.isnan(want))
    names = {row["Kernel Name"] for row in _rows(ncu_file)}
    assert set(kernels["name"].astype(str)) == names


def test_device_named_in_the_file(ncu_file: Path) -> None:
    preamble = ncu_file.read_bytes().decode("utf-8-sig").splitlines()
    line = next(text for text in preamble if text.startswith("device: "))
    name = line.removeprefix("device: ").split(" (")[0]
    sms = int(line.split(", ")[1].split()[0])
    capability = _rows(ncu_file)[0]["CC"]
    trace = gpuprofile.load(ncu_file).trace
    device = trace.devices(0)[0]
    assert (device["name"], device["sm_count"], device["compute_capability"]) == (
        name, sms, capability
    )  # fmt: skip
    hardware = hardware_for_trace(trace)
    assert hardware.name == name and hardware.source in ("datasheet", "estimated")
    assert hardware.peak_flops.get("fp32", 0) > 0


def test_report_json_has_measured_kernel_points(
    ncu_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = _expected(ncu_file)
    assert main(["report", str(ncu_file), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["source"]["format"] == "ncu"
    points = [p for p in report["roofline"]["points"] if p["level"] == "kernel"]
    assert sum(p["count"] for p in points) == len(expected)
    assert sum(p["time_ns"] for p in points) == sum(round(e["time"]) for e in expected.values())
    measured = all("flops" in e for e in expected.values())
    # These files carry no SASS op counts: their points' FLOPs are unknown, not invented.
    assert {p["flops_source"] for p in points} == {"measured" if measured else "unknown"}


def _metric(path: Path, name: str) -> float:
    (row,) = [r for r in _rows(path) if r["Metric Name"] == name]
    return _value(row)


def test_every_view_shows_what_ncu_measured(ncu_file: Path) -> None:
    """The report's top kernel, its text line and the widget's kernel details carry the
    launch's DRAM bytes and speed-of-light figures as the CSV writes them."""
    from gpuprofile.widget.requests import Source, handle
    from gpuprofile.widget.timeline import timeline_data

    (launch,) = _expected(ncu_file).values()
    sm = _metric(ncu_file, "sm__throughput.avg.pct_of_peak_sustained_elapsed")
    profile = gpuprofile.load(ncu_file)
    (top,) = profile.report()["ranks"][0]["top_kernels"]
    measured = top["measured"]
    assert measured["launches"] == 1 and measured["flops"] is None
    assert measured["bytes"] == pytest.approx(launch["bytes"])
    assert measured["bytes_per_s"] == pytest.approx(launch["bytes"] / (launch["time"] * 1e-9))
    assert measured["sm_throughput_pct"] == pytest.approx(sm)
    assert f"SM throughput {sm:.1f}%" in profile.text()
    trace = profile.trace
    reply, _ = handle(
        Source(data=timeline_data(trace), trace=trace), {"request": 1, "type": "details", "id": 0}
    )
    fields = dict(reply["details"]["fields"])
    assert fields["SM throughput (measured)"] == f"{sm:.1f}%"
    assert "DRAM bytes (measured)" in fields


def test_a_kineto_trace_has_no_measured_kernels() -> None:
    path = require_trace(SHARED_TRACES / "kineto" / "hta_a100_triton_kernel.json.gz")
    assert all(
        k["measured"] is None for k in gpuprofile.load(path).report()["ranks"][0]["top_kernels"]
    )


def test_the_naive_transpose_writes_uncoalesced() -> None:
    """rtx5070_transpose_naive: loads take 4 sectors a request, stores 32 (a column written
    per warp); the tiled kernel, 4 and 4, gets no such finding. Figures from the CSV by hand."""
    from gpuprofile.analyses.context import Analysis
    from gpuprofile.analyses.detectors import uncoalesced
    from gpuprofile.importers.ncu import load_ncu

    def counts(path: Path) -> dict[str, float]:
        return {r["Metric Name"]: _value(r) for r in _rows(path)}

    naive = require_trace(NCU / "rtx5070_transpose_naive.csv")
    raw = counts(naive)
    sectors = {d: raw[f"l1tex__t_sectors_pipe_lsu_mem_global_op_{d}.sum"] for d in ("ld", "st")}
    requests = {d: raw[f"l1tex__t_requests_pipe_lsu_mem_global_op_{d}.sum"] for d in ("ld", "st")}
    assert sectors["ld"] / requests["ld"] == 4 and sectors["st"] / requests["st"] == 32
    excess = sectors["st"] - 4 * requests["st"]
    share = excess / (sectors["ld"] + sectors["st"])
    trace = load_ncu(naive)
    [hint] = uncoalesced.detect(Analysis(trace, hardware_for_trace(trace)))
    assert hint.numbers["heaviest_excess_sector_share"] == round(share, 3)
    assert hint.gain_ns == round(raw["gpu__time_duration.sum"] * share / 2)
    assert "stores 32 sectors a request" in hint.explanation
    tiled = load_ncu(require_trace(NCU / "rtx5070_transpose_tiled.csv"))
    assert uncoalesced.detect(Analysis(tiled, hardware_for_trace(tiled))) == []


def test_saxpy_without_findings_says_what_it_measured() -> None:
    """saxpy gives no finding: the report says the kernels were replayed alone (no idle to
    judge) and gives the DRAM rate, its bytes and time read from the CSV by hand."""
    from gpuprofile.units import format_bytes_per_s

    path = require_trace(NCU / "rtx5070_saxpy.csv")
    (launch,) = _expected(path).values()
    report = gpuprofile.load(path).report()
    assert report["hints"] == []
    why = report["no_findings"]
    assert why.startswith("Nsight Compute replayed each kernel alone")
    assert (
        f"DRAM traffic ran at {format_bytes_per_s(launch['bytes'] / launch['time'] * 1e9)}" in why
    )
