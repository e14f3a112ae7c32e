"""The report as data and as text: plain JSON, hints ranked by gain, text leading with them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import gpuprofile
from gpuprofile.analyses.hints import KINDS
from gpuprofile.hardware.model import Hardware
from helpers.kineto_docs import cpu_op, document, kernel, runtime, write


def idle_heavy_trace(tmp_path: Path) -> Path:
    """Kernels separated by host syncs: the GPU idles most of its window."""
    events = []
    for i in range(20):
        t = i * 100.0
        events += [
            cpu_op("aten::add", t, 5, ext=i),
            runtime("cudaLaunchKernel", t + 1, 2, corr=i),
            kernel("add_kernel", t + 4, 4, corr=i),
            cpu_op("aten::item", t + 10, 80, ext=1000 + i),
            runtime("cudaStreamSynchronize", t + 12, 76, corr=5000 + i),
        ]
    return write(tmp_path / "idle.json", document(events))


def test_report_is_plain_json(tmp_path: Path) -> None:
    report = gpuprofile.load(idle_heavy_trace(tmp_path)).report()
    assert json.loads(json.dumps(report, allow_nan=False)) == report
    for key in ("schema", "source", "partial", "hardware", "hints", "idle_by_cause", "roofline"):
        assert key in report
    assert set(report["roofline"]) == {"coverage", "points", "missing_flops"}
    assert report["hardware"]["source"] in ("datasheet", "estimated", "unknown", "user")


def test_hints_are_ranked_by_gain_and_carry_their_evidence(tmp_path: Path) -> None:
    report = gpuprofile.load(idle_heavy_trace(tmp_path)).report()
    hints = report["hints"]
    assert hints, "a GPU idle 90% of its window must give a hint"
    gains = [h["gain_ns"] for h in hints]
    assert gains == sorted(gains, reverse=True)
    for hint in hints:
        assert hint["kind"] in KINDS
        assert hint["fix"] and hint["explanation"] and hint["gain_method"]
        assert all(e["windows"] or e["event_ids"] for e in hint["evidence"])
    # Idle by cause adds up to the rank's idle time.
    (rank,) = report["ranks"]
    assert sum(rank["idle_by_cause"].values()) == rank["gpu"]["idle_ns"]


def test_text_leads_with_the_hints(tmp_path: Path) -> None:
    profile = gpuprofile.load(idle_heavy_trace(tmp_path))
    text = profile.text()
    first = profile.report()["hints"][0]
    assert text.index("What to fix first:") < text.index(first["title"]) < text.index("rank 0")
    assert text.index("rank 0") < text.index("roofline:")
    assert "GPU idle by cause:" in text


def test_unknown_roofs_point_to_calibrate(tmp_path: Path) -> None:
    path = write(tmp_path / "t.json", document([kernel("k", 0, 5, corr=1)]))
    profile = gpuprofile.load(path)
    assert profile.report()["hardware"]["source"] == "unknown"
    assert "gpuprofile.calibrate()" in profile.text()


def test_user_hardware_replaces_the_datasheet(tmp_path: Path) -> None:
    path = idle_heavy_trace(tmp_path)
    mine = Hardware(name="my box", source="user", peak_flops={"fp32": 1e13}, dram_bytes_per_s=1e12)
    report = gpuprofile.load(path, hardware=mine).report()
    assert report["hardware"]["name"] == "my box"
    assert report["hardware"]["source"] == "user"
    again = gpuprofile.load(path).with_hardware(mine).report()
    assert again["hardware"] == report["hardware"]


def test_a_point_above_the_dram_roof_says_caches_served_part_of_it(tmp_path: Path) -> None:
    # 64x64 fp32 matmuls moving 3 x 64 x 64 x 4 = 49,152 bytes each in 1 us against a
    # 32.768 GB/s roof: 150% of it (past twice the roof it would be no figure at all).
    shapes = {"Input Dims": [[64, 64], [64, 64]], "Input type": ["float", "float"]}
    events = [cpu_op("aten::mm", 10 * i, 1, ext=i, **shapes) for i in range(3)]
    path = write(tmp_path / "mm.json", document(events))
    roof = 49_152 / 1e-6 / 1.5
    slow = Hardware(name="slow", source="user", peak_flops={"fp32": 1e15}, dram_bytes_per_s=roof)
    profile = gpuprofile.load(path, hardware=slow)
    (point,) = profile.report()["roofline"]["points"]
    assert point["roof"] == "dram" and point["pct_of_roof"] == pytest.approx(150)
    (line,) = [x for x in profile.text().splitlines() if "aten::mm" in x and "roof" in x]
    assert "of the dram roof; above DRAM bandwidth: caches served part of the traffic" in line
    # Below the roof, no such words.
    fast = Hardware(name="fast", source="user", peak_flops={"fp32": 1e15}, dram_bytes_per_s=1e12)
    assert "caches served" not in gpuprofile.load(path, hardware=fast).text()
