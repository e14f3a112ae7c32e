"""A notebook run headless (nbclient) records its profiled cells in the history, and a cell with
``--baseline`` says it is slower than the labelled one; the CLI reads the same history."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

SETUP = """
import time

import gpuprofile
import torch

torch.manual_seed(0)
w = torch.randn(128, 128)
x = torch.randn(64, 128)


def work(pause_s):
    for _ in range(4):
        torch.tanh(x @ w)
    time.sleep(pause_s)
"""

# 7 steps: 1 skipped, 1 warm-up, 5 recorded. B pauses 10 ms a step more than A: about 1.5 times
# slower, never 11 times (A's 20 ms pause bounds the ratio), so a 1000% limit lets it pass.
CELL_A = """%%gpuprofile --steps 1,5 --label quick
for _ in range(7):
    work(0.020)
    gpuprofile.step()"""
CELL_B = """%%gpuprofile --steps 1,5 --baseline quick
for _ in range(7):
    work(0.030)
    gpuprofile.step()"""


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The console command, in a fresh process with this test's environment (its history)."""
    return subprocess.run(
        [sys.executable, "-m", "gpuprofile", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_labelled_cell_then_slower_cell_with_baseline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    history = tmp_path / "history.sqlite"
    monkeypatch.setenv("GPUPROFILE_HISTORY", str(history))
    # What jupyter_server tells the kernels it starts: the notebook's path.
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "habit.ipynb"))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("%load_ext gpuprofile"),
        nbformat.v4.new_code_cell(SETUP),
        nbformat.v4.new_code_cell(CELL_A),
        nbformat.v4.new_code_cell(CELL_B),
    ]
    cell_a, cell_b = notebook.cells[2], notebook.cells[3]
    NotebookClient(
        notebook,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    ).execute()

    # The history file, read with sqlite3 rather than through gpuprofile.
    with sqlite3.connect(history) as db:
        rows = db.execute("SELECT id, label, cell_id, notebook FROM runs ORDER BY time").fetchall()
    assert len(rows) == 2
    (a_id, a_label, a_cell, a_notebook), (b_id, b_label, b_cell, _) = rows
    assert (a_label, b_label) == ("quick", None)
    # JupyterLab sends each cell's id with its execute request (metadata.cellId); nbclient 0.11
    # sends none, so here the id is unknown, and never another cell's.
    assert a_cell in (None, cell_a.id)
    assert b_cell in (None, cell_b.id)
    assert a_notebook == str(tmp_path / "habit.ipynb")

    # The widget, then the snapshot: the text report is the snapshot's plain text.
    (snapshot,) = [o for o in cell_b.outputs if o.get("metadata", {}).get("gpuprofile")]
    text = snapshot.data["text/plain"]
    assert "Against baseline" in text
    assert "slower" in text
    assert "within noise" not in text

    listed = _cli("history", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    assert {run["id"] for run in json.loads(listed.stdout)} == {a_id, b_id}

    gate = _cli("check", b_id, "--baseline", "quick")
    assert gate.returncode == 1, gate.stdout + gate.stderr
    loose = _cli("check", b_id, "--baseline", "quick", "--max-regression", "1000%")
    assert loose.returncode == 0, loose.stdout + loose.stderr
