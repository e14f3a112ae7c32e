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


# Appended in memory: each profile's hints of the three hand-written-code kinds, as JSON.
_CUSTOM_BLOCK_READ_BACK = """
import json
kinds = ('python-loop', 'data-dependent-routing', 'unfused-elementwise')
print('CUSTOM_BLOCK ' + json.dumps({
    label: [h for h in profile.report()['hints'] if h['kind'] in kinds]
    for label, profile in (('before', before), ('after', after))
}))
# The truth for the paths: the model's own named_modules(), by class.
named = {}
for name, module in Block().named_modules():
    named.setdefault(type(module).__name__, []).append(f"Block.{name}" if name else "Block")
print('CUSTOM_BLOCK_NAMES ' + json.dumps(named))
"""


def test_custom_block_names_its_loops_routing_and_norm(tmp_path: Path) -> None:
    notebook = nbformat.read(ROOT / "example_notebooks/custom_block.ipynb", as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell(_CUSTOM_BLOCK_READ_BACK))
    NotebookClient(notebook, timeout=300, resources={"metadata": {"path": str(tmp_path)}}).execute()
    printed = "".join(o.get("text", "") for o in notebook.cells[-1].outputs)
    line = next(x for x in printed.splitlines() if x.startswith("CUSTOM_BLOCK "))
    hints = json.loads(line.removeprefix("CUSTOM_BLOCK "))
    line = next(x for x in printed.splitlines() if x.startswith("CUSTOM_BLOCK_NAMES "))
    named = json.loads(line.removeprefix("CUSTOM_BLOCK_NAMES "))
    (attention,), (moe,), norms = named["Attention"], named["MoE"], named["RMSNorm"]
    before = {(h["kind"], h["title"].split(" in ", 1)[1].split(" ")[0]): h for h in hints["before"]}
    # The notebook's loops: one over 4 heads in the attention, one over 4 experts in the MoE
    # (a CPU run: its sizes), each named by its module's path, though the cell runs --stack
    # (torch's own module events, named by the capture) and --steps (a map per window).
    loops = {path: h for (kind, path), h in before.items() if kind == "python-loop"}
    assert sorted(loops) == sorted([attention, moe])
    assert all("Python loop of 4 iterations" in h["title"] for h in loops.values())
    assert loops[moe]["modules"][0] == moe
    assert ("data-dependent-routing", moe) in before
    [norm] = [h for (kind, _), h in before.items() if kind == "unfused-elementwise"]
    assert norm["title"].startswith(f"Hand-written RMSNorm in {', '.join(norms)}")
    # Each loop names a line of its loop's body in the notebook's cell (the operators' own
    # lines, from the capture's line ranges), not its forward's def line. Truth: the cell's text.
    model_cell = next(c.source for c in notebook.cells if "class Attention" in c.source)
    rows = model_cell.splitlines()
    for path, loop_text in ((attention, "for h in range(heads)"), (moe, "for e, expert in")):
        (at,) = [i for i, row in enumerate(rows, 1) if loop_text in row]
        source = loops[path]["sources"][0]
        assert source["file"].startswith("cell [") and at < source["line"] <= at + 3, source
    assert hints["after"] == []
