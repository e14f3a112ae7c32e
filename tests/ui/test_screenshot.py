"""The README's picture of the widget: the first profile of example_notebooks/attention_scaling
.ipynb (hand-written attention, before its fix) against this machine's measured roofs, from its
gauges to its timeline, as JupyterLab shows it.

The test writes docs/widget.png only when GPUPROFILE_UPDATE_SCREENSHOT=1 (so a run on a fresh
clone changes no committed file); else test-artifacts/widget.png. tests/unit/test_docs.py
checks the committed one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from widget_page import WIDGET, plot, run_expecting

pytestmark = pytest.mark.ui

DOCS = Path(__file__).resolve().parents[2] / "docs"
WIDTH = 1000  # px of the picture: the widget as laid out in a notebook this wide

NOTEBOOK = "attention_scaling.ipynb"
# Measured roofs first (cached per device after the first run; a capture on this CPU then uses
# them), so the roofline has its roofs on a machine that never calibrated.
CALIBRATE = "import gpuprofile\ngpuprofile.calibrate(seconds=1)"
DONE = 'print("GPUPROFILE_EXPECT", 1)'


def test_widget_screenshot(page, jupyterlab: str, notebook_dir: Path, artifacts_dir: Path) -> None:
    # Tall enough for the whole widget; the notebook's width leaves the widget ~WIDTH px wide.
    page.set_viewport_size({"width": WIDTH + 432, "height": 2600})
    notebook = json.loads((notebook_dir / NOTEBOOK).read_text())
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    sources = ["".join(c["source"]) for c in code]
    assert sources[0].startswith("%load_ext gpuprofile"), sources[0]
    run_expecting(
        page,
        jupyterlab,
        notebook_dir,
        "screenshot.ipynb",
        sources[0],
        CALIBRATE,
        *sources[1:],
        DONE,
    )
    root = page.locator(WIDGET).first  # the profile before the fix
    assert int(root.locator(".gp-hintlist").first.get_attribute("data-hints")) >= 1
    plot(page)  # the timeline painted and in view
    page.wait_for_timeout(300)
    # Five gauges share a row this narrow: each still shows its name whole.
    cut = root.locator(".gp-gauge-label").evaluate_all(
        "els => els.filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent)"
    )
    assert not cut, f"gauge names cut short: {cut}"
    top = root.locator(".gp-panels").first.bounding_box()
    bottom = root.locator(".gp-timeline").first.bounding_box()
    box = root.bounding_box()
    assert top and bottom and box
    clip = {
        "x": box["x"],
        "y": top["y"] - 4,
        "width": box["width"],
        "height": bottom["y"] + bottom["height"] - top["y"] + 8,
    }
    assert abs(clip["width"] - WIDTH) < 60, clip
    assert clip["y"] + clip["height"] <= 2600, "the widget is taller than the page"
    update = os.environ.get("GPUPROFILE_UPDATE_SCREENSHOT") == "1"
    out = DOCS / "widget.png" if update else artifacts_dir / "widget.png"
    out.parent.mkdir(exist_ok=True)
    page.screenshot(path=str(out), clip=clip)
    assert out.stat().st_size > 10_000
