from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import gpuprofile
from gpuprofile.cli import main
from helpers.kineto_docs import cpu_op, document, kernel, memcpy, runtime, write


def small_trace(tmp_path: Path) -> Path:
    return write(
        tmp_path / "t.json.gz",
        document(
            [
                cpu_op("aten::mm", 0, 40, ext=1),
                runtime("cudaLaunchKernel", 5, 5, corr=1),
                kernel("gemm", 20, 10, corr=1),
                kernel("gemm", 40, 10, corr=2),
                kernel("ncclKernel_AllReduce", 45, 20, corr=3, stream=9),
                memcpy("HtoD", 70, 2, 2_000_000),
            ]
        ),
        gz=True,
    )


def test_report_json_is_the_profile_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = small_trace(tmp_path)
    assert main(["report", str(path), "--format", "json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == gpuprofile.load(path).report()
    (rank,) = printed["ranks"]
    # Kernels [20,30) [40,50) [45,65) and the copy [70,72) in microseconds:
    assert rank["gpu"]["window_ns"] == 52_000
    assert rank["gpu"]["busy_ns"] == 10_000 + 25_000 + 2_000
    assert rank["gpu"]["idle_ns"] == 15_000
    assert rank["gpu"]["compute_ns"] == 20_000  # the gemms; nccl and the copy are not compute
    assert rank["gpu"]["non_compute_ns"] == 17_000
    # A tie in total time goes to the name launched more often.
    assert rank["top_kernels"] == [
        {
            "name": "gemm",
            "count": 2,
            "total_ns": 20_000,
            "class": "compute",
            "measured": None,
            "class_reason": "no copy, wait or communication in its name, launching op or stream",
            "label": "gemm",  # the name as printed: nothing else reads alike
        },
        {
            "name": "ncclKernel_AllReduce",
            "count": 1,
            "total_ns": 20_000,
            "class": "communication",
            "measured": None,  # nothing measured on the launches (Nsight Compute would)
            "class_reason": "its name says all-reduce",
            "label": "ncclKernel_AllReduce",
        },
    ]
    assert rank["copies"] == [
        {"kind": "HtoD", "count": 1, "bytes": 2_000_000, "total_ns": 2_000, "gbps": 1000.0}
    ]
    assert printed["schema"] == "gpuprofile.report/1"


def test_report_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(small_trace(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "3 kernels, 1 memcpy, 0 memset, 1 ops" in out
    assert "busy 37.0 µs (71.2%), idle 15.0 µs" in out
    assert "HtoD" in out and "1e+03 GB/s" not in out


def test_console_script_and_module_demo() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gpuprofile", "demo", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["source"]["format"] == "capture"
    names = {row["name"] for row in report["ranks"][0]["top_ops"]}
    assert report["ranks"][0]["counts"]["ops"] > 100
    assert names & {"aten::linear", "aten::addmm", "aten::mm", "train_step"}
    script = Path(sys.executable).with_name("gpuprofile")
    assert script.exists()
    done = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "report" in done.stdout and "demo" in done.stdout
