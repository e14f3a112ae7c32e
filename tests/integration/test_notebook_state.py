"""A notebook saved with the widget's state stays small on a million-kernel trace: the state holds
the overview, not every event."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import nbformat
from nbclient import NotebookClient

TESTS = Path(__file__).resolve().parents[1]
BOUND = 8 * 2**20
N_KERNELS = 1_000_000

CELL = f"""\
import sys
sys.path.insert(0, {str(TESTS)!r})
from helpers.synthetic import synthetic_trace
from gpuprofile.profiles import Profile

Profile(synthetic_trace({N_KERNELS}))
"""


def test_saved_notebook_with_widget_state_is_bounded(tmp_path: Path) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.cells.append(nbformat.v4.new_code_cell(CELL))
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    client = NotebookClient(
        notebook,
        timeout=120,
        store_widget_state=True,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    path = tmp_path / "saved.ipynb"
    nbformat.write(notebook, path)

    size = path.stat().st_size
    assert size < BOUND, f"{size / 2**20:.1f} MiB saved for {N_KERNELS} kernels"
    saved = json.loads(path.read_text())
    states = saved["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    ours = [s for s in states.values() if "total_events" in s.get("state", {})]
    assert len(ours) == 1, "the widget's state was not saved"
    state = ours[0]
    # 1M kernels + 1M launches + 1M ops + 1000 steps, too many to hold: the overview is saved.
    assert state["state"]["total_events"] == 3 * N_KERNELS + N_KERNELS // 1000
    assert state["state"]["complete"] is False
    events = next(b for b in state.get("buffers", []) if b["path"] == ["events"])
    raw = base64.b64decode(events["data"])
    assert raw[:4] == b"GPT1"
    header = json.loads(raw[8 : 8 + int.from_bytes(raw[4:8], "little")])
    assert header["meta"]["merged"] is True
    assert 0 < header["n"] < 200_000
    # The report came along too (its text view is what a notebook without widgets shows).
    assert state["state"]["summary"]["ranks"][0]["counts"]["kernels"] == N_KERNELS
