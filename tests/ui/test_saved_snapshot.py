"""A profiled notebook saved, closed and reopened in real JupyterLab without re-running: the
snapshot stands in for the widget, whose model died with the kernel.

Live, the cell shows the widget and the snapshot's output is hidden (no duplicate). After save,
close, kernel shut down and reopen, the page shows the snapshot's summary, hints and pictures,
and not the widget's "model not found" line. The expected text comes from the kernel's own
report, printed by a later cell.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
from widget_page import WIDGET, notebook_json, open_notebook, printed

pytestmark = pytest.mark.ui

NAME = "saved_snapshot.ipynb"
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
    "print('GPUPROFILE_EXPECT', json.dumps({'wall': format_time(r['ranks'][0]['wall_ns']),"
    " 'hints': [h['title'] for h in r['hints']], 'kinds': [h['kind'] for h in r['hints']],"
    " 'points': len([p for p in r['roofline']['points'] if p.get('intensity')])}))",
)
SNAPSHOT = ".gpuprofile-snapshot"
DEAD = "model not found"


def _visible_text(page) -> str:  # type: ignore[no-untyped-def]
    # innerText leaves out what CSS hides: what a reader sees.
    return str(page.evaluate("() => document.querySelector('.jp-Notebook').innerText"))


def _saved(path: Path, timeout: float = 30.0) -> dict:
    """The notebook on disk, once it holds the snapshot output."""
    deadline = time.monotonic() + timeout
    while True:
        if path.exists():
            notebook = json.loads(path.read_text())
            outputs = [o for c in notebook["cells"] for o in c.get("outputs", [])]
            if any("gpuprofile" in o.get("metadata", {}) for o in outputs):
                return notebook
        assert time.monotonic() < deadline, "the notebook was not saved with its snapshot"
        time.sleep(0.3)


def test_reopened_notebook_shows_the_snapshot(
    page, jupyterlab: str, notebook_dir: Path, tmp_path: Path
) -> None:
    path = notebook_dir / NAME
    path.write_text(json.dumps(notebook_json(*CELLS)))
    outputs = open_notebook(page, jupyterlab, NAME, marker="GPUPROFILE_EXPECT")
    expected = printed(outputs, "GPUPROFILE_EXPECT")
    assert "attention-unfused" in expected["kinds"], expected

    # Live: the widget is rendered and the snapshot, in the DOM, is hidden.
    assert page.locator(WIDGET).count() == 1
    assert page.locator(SNAPSHOT).count() == 1
    page.wait_for_function(
        "s => { const e = document.querySelector(s); return e && e.offsetParent === null; }",
        arg=SNAPSHOT,
    )
    visible = _visible_text(page)
    assert "Static snapshot" not in visible  # the widget alone shows the profile
    assert "Static snapshot" in page.locator(SNAPSHOT).first.text_content()
    page.screenshot(path=str(tmp_path / "live.png"), full_page=True)

    page.evaluate("() => { window.jupyterapp.commands.execute('docmanager:save'); }")
    saved = _saved(path)
    sizes = [len(json.dumps(o)) for c in saved["cells"] for o in c.get("outputs", [])]
    assert max(sizes) < 300_000, sizes
    # Close everything and shut the kernel down: the widget's model is gone for good.
    page.evaluate(
        "async () => { await window.jupyterapp.commands.execute('application:close-all');"
        " await window.jupyterapp.serviceManager.sessions.shutdownAll(); }"
    )

    # Reopen in a fresh workspace, without running anything.
    page.goto(f"{jupyterlab}/lab/workspaces/r{uuid.uuid4().hex[:12]}/tree/{NAME}")
    snapshot = page.locator(SNAPSHOT)
    snapshot.first.wait_for(state="visible", timeout=60_000)
    # The widget manager says "model not found" once it has restored (a kernel answered).
    page.wait_for_function(
        "m => [...document.querySelectorAll('.jp-OutputArea-output')]"
        ".some(o => o.textContent.includes(m))",
        arg=DEAD,
        timeout=60_000,
    )
    page.screenshot(path=str(tmp_path / "reopened.png"), full_page=True)
    visible = _visible_text(page)
    assert DEAD not in visible
    assert f"Wall: {expected['wall']}" in visible
    for title in expected["hints"]:
        assert title in visible
    assert page.locator(WIDGET).count() == 0

    # The pictures are drawn: images decoded, laid out with a size, the timeline's lanes
    # shaded (a canvas reads its pixels back; the lane labels take the first 170 px).
    for name in ("timeline", "roofline"):
        if name == "roofline" and not expected["points"]:
            continue
        image = page.locator(f"{SNAPSHOT} img.gp-snapshot-{name}")
        image.scroll_into_view_if_needed()
        assert image.evaluate("i => i.complete && i.naturalWidth") > 300
        box = image.bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 30, (name, box)
    coloured = page.evaluate(
        """s => {
            const img = document.querySelector(s);
            const c = document.createElement("canvas");
            c.width = img.naturalWidth; c.height = img.naturalHeight;
            const g = c.getContext("2d");
            g.drawImage(img, 0, 0);
            const d = g.getImageData(0, 0, c.width, c.height).data;
            let n = 0;
            // The first lane's band, right of the labels: any pixel not white is a box.
            for (let y = 4; y < 12; y++)
                for (let x = 180; x < c.width - 20; x++)
                    if (d[4 * (y * c.width + x)] < 250) n++;
            return n;
        }""",
        f"{SNAPSHOT} img.gp-snapshot-timeline",
    )
    assert coloured > 100, coloured

    # The same notebook, changed outside JupyterLab, is untrusted: its HTML is sanitized
    # (no <style>, no inline <svg>) and the widget output shows its text line. The pictures,
    # images of data URIs, survive; the hints are there.
    copy = json.loads(path.read_text())
    copy["cells"][1]["outputs"][1]["data"]["text/plain"] = ["edited elsewhere"]
    (notebook_dir / "untrusted_copy.ipynb").write_text(json.dumps(copy))
    page.goto(f"{jupyterlab}/lab/workspaces/u{uuid.uuid4().hex[:12]}/tree/untrusted_copy.ipynb")
    page.locator(SNAPSHOT).first.wait_for(state="visible", timeout=60_000)
    image = page.locator(f"{SNAPSHOT} img.gp-snapshot-timeline")
    image.scroll_into_view_if_needed()
    page.wait_for_function("i => i.complete && i.naturalWidth > 300", arg=image.element_handle())
    assert page.locator(f"{SNAPSHOT} style").count() == 0  # sanitized indeed
    visible = _visible_text(page)
    assert "gpuprofile widget (interactive while its kernel runs" in visible
    for title in expected["hints"]:
        assert title in visible
    page.screenshot(path=str(tmp_path / "untrusted.png"), full_page=True)
