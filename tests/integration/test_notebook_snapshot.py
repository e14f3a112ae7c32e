"""A profiled notebook executed headless (nbclient) and converted to HTML (nbconvert), as CI and
notebook viewers do: the snapshot carries the profile, each saved output stays bounded."""

from __future__ import annotations

import base64
import html
import json
import re
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from gpuprofile.profiles import WIDGET_TEXT

CELLS = (
    "%load_ext gpuprofile",
    # Hand-written attention over 256 keys: the attention detector knows it by its ops and
    # shapes alone, so the cell provokes its hint however busy the machine (a hint that needs
    # an op to run slowly, as a memory-bound one, went missing on a loaded machine).
    "%%gpuprofile\nimport torch\ntorch.set_num_threads(1)\nq = torch.randn(4, 256, 64)\n"
    "for _ in range(5):\n    scores = torch.softmax(q @ q.transpose(-2, -1) / 8, dim=-1)\n"
    "    y = scores @ q",
    "import json\nimport gpuprofile\nfrom gpuprofile.units import format_time\n"
    "r = gpuprofile.last().report()\n"
    "print('EXPECT', json.dumps({'wall': format_time(r['ranks'][0]['wall_ns']),"
    " 'hints': [h['title'] for h in r['hints']], 'kinds': [h['kind'] for h in r['hints']]}))",
)
BOUND = 300_000


def test_executed_notebook_converts_with_its_snapshot(tmp_path: Path) -> None:
    from nbconvert import HTMLExporter

    notebook = nbformat.v4.new_notebook()
    notebook.cells.extend(nbformat.v4.new_code_cell(source) for source in CELLS)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    NotebookClient(notebook, timeout=180, resources={"metadata": {"path": str(tmp_path)}}).execute()
    path = tmp_path / "run.ipynb"
    nbformat.write(notebook, path)

    printed = "".join(o.get("text", "") for o in notebook.cells[2].outputs)
    expected = json.loads(re.search(r"^EXPECT (.*)$", printed, re.M).group(1))  # type: ignore[union-attr]
    assert "attention-unfused" in expected["kinds"], expected

    saved = json.loads(path.read_text())
    outputs = saved["cells"][1]["outputs"]
    assert [o["output_type"] for o in outputs] == ["display_data", "display_data"]
    widget, snapshot = outputs
    assert "application/vnd.jupyter.widget-view+json" in widget["data"]
    # Shown so from the cell's start (the live widget's output is never updated): one line for
    # text readers, the report being the next output.
    assert "".join(widget["data"]["text/plain"]) == WIDGET_TEXT
    # The run the history recorded (tests/conftest.py gives the suite its own history).
    meta = snapshot["metadata"]["gpuprofile"]
    assert meta["snapshot"] is True and re.fullmatch(r"[0-9a-f]{8}", meta["run_id"])
    for output in outputs:
        assert len(json.dumps(output)) <= BOUND

    page, _ = HTMLExporter().from_filename(str(path))
    assert "model not found" not in page
    text = html.unescape(re.sub(r"<[^>]+>", " ", page))
    assert "Static snapshot of this profile" in text
    assert f"Wall: {expected['wall']}" in text
    for title in expected["hints"]:
        assert title in text
    # The pictures are in the page as images of SVG, the timeline with its lanes' PNG.
    found = re.search(r'class="gp-snapshot-timeline"[^>]*base64,([^"]+)"', page)
    assert found, "no timeline picture"
    assert 'href="data:image/png;base64,' in base64.b64decode(found.group(1)).decode()
    assert 'class="gp-snapshot-roofline"' in page
