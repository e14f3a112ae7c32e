"""The Makefile caps torch's threads for the tests and benchmarks only: `make lab` starts
JupyterLab with the user's environment, so their kernel keeps its threads."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# A prerequisite added to the target asked for: it inherits the target's exported variables and,
# marked `+`, runs even under `make -n`, which only prints every other recipe.
PROBE = ("--eval", 'gp-probe: ; +@echo "OMP=[$$OMP_NUM_THREADS]"')


def thread_cap(target: str, **env: str) -> str:
    """OMP_NUM_THREADS as `make TARGET`'s recipes see it ("" when unset)."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    environ = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"} | env
    out = subprocess.run(
        ["make", "-n", "--no-print-directory", "--eval", f"{target}: gp-probe", *PROBE, target],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    (cap,) = re.findall(r"^OMP=\[(.*)\]$", out, re.M)
    return cap


def test_lab_passes_no_thread_cap() -> None:
    assert thread_cap("lab") == ""
    assert thread_cap("lab", OMP_NUM_THREADS="2") == "2"  # the user's own setting goes through


@pytest.mark.parametrize("target", ["test", "unit", "bench"])
def test_tests_and_benchmarks_run_on_one_thread_unless_told(target: str) -> None:
    assert thread_cap(target) == "1"
    assert thread_cap(target, OMP_NUM_THREADS="4") == "4"
