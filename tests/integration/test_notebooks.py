"""Example notebooks run headless (nbclient), as nbconvert and CI would run them."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]


def test_quickstart_runs_and_reads_without_a_widget(tmp_path: Path) -> None:
    notebook = nbformat.read(ROOT / "example_notebooks/quickstart.ipynb", as_version=4)
    NotebookClient(notebook, timeout=300, resources={"metadata": {"path": str(tmp_path)}}).execute()
    profiled = next(c for c in notebook.cells if c.source.startswith("%%gpuprofile"))
    # The widget, then the snapshot a saved notebook keeps, which carries the text report.
    widget, snapshot = [o for o in profiled.outputs if o.output_type == "display_data"]
    assert "application/vnd.jupyter.widget-view+json" in widget.data
    assert snapshot.metadata["gpuprofile"]["snapshot"] is True
    text = snapshot.data["text/plain"]
    assert text.startswith("gpuprofile report (capture)")
    printed = "".join(o.get("text", "") for o in notebook.cells[-1].outputs)
    line = next(x for x in printed.splitlines() if x.startswith("GPUPROFILE_COUNTS "))
    counts = json.loads(line.removeprefix("GPUPROFILE_COUNTS "))
    assert counts["ops"] > 0
    # The plain text says the same numbers the report holds.
    assert f"{counts['kernels']} kernels, {counts['memcpy']} memcpy" in text
    assert f"{counts['ops']} ops" in text
