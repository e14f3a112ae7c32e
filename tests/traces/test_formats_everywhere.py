"""A trace of every format goes through every view unchanged: the JSON report, the text report,
the widget's state and the CLI, each saying which tool wrote it.

The counts the views must show come from the raw files, read here with sqlite3, csv and json.
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

import gpuprofile
from gpuprofile.cli import main
from helpers.prerequisites import SHARED_TRACES, require_trace


def _nsys_kernels(path: Path) -> int:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return int(db.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0])


def _ncu_launches(path: Path) -> int:
    lines = path.read_text(encoding="utf-8-sig").splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    return len({row["ID"] for row in csv.DictReader(io.StringIO("\n".join(lines[header:])))})


def _trt_layers(path: Path) -> int:
    records = json.loads(path.read_text())
    return sum(1 for r in records if "name" in r)


# (fixture, format, the table the tool's events land in, their count read from the file)
CASES: dict[str, tuple[str, str, str, Callable[[Path], int]]] = {
    "nsys": (
        "nsys/pipit_perlmutter_a100_40gb_saxpy_mpi.sqlite",
        "nsys",
        "kernels",
        _nsys_kernels,
    ),
    "ncu": ("ncu/rtx5070_transpose_tiled.csv", "ncu", "kernels", _ncu_launches),
    "tensorrt": (
        "tensorrt/trex_rtx3090_tf_resnet_fp16.profile.json",
        "tensorrt",
        "ops",
        _trt_layers,
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_every_view_reads_the_format(case: str, capsys: pytest.CaptureFixture[str]) -> None:
    relative, fmt, table, count = CASES[case]
    path = require_trace(SHARED_TRACES / relative)
    expected = count(path)
    profile = gpuprofile.load(path)
    report = profile.report()
    assert report["source"]["format"] == fmt
    assert sum(r["counts"][table] for r in report["ranks"]) == expected
    assert json.loads(json.dumps(report)) == report  # plain JSON types throughout
    assert f"({fmt}: " in profile.text()
    widget = profile.widget()
    assert widget.total_events >= expected
    assert main(["report", str(path), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["source"]["format"] == fmt


@pytest.mark.parametrize("case", list(CASES))
def test_a_trace_without_flops_says_what_its_format_lacks(case: str) -> None:
    """Not "record input shapes" on a trace that has no shapes to record."""
    relative, _, _, _ = CASES[case]
    text = gpuprofile.load(require_trace(SHARED_TRACES / relative)).text()
    (line,) = [line for line in text.splitlines() if line.startswith("roofline:")]
    assert "input shapes" not in line and line.endswith(")")
