"""The quickstart notebook in real JupyterLab and headless Chromium.

Runs every cell of example_notebooks/quickstart.ipynb, then checks that the widget rendered, that
its counts match the ones the kernel printed (computed from gpuprofile.last().report(), not from
the widget), that the mouse wheel zooms the timeline and a drag pans it, and that hovering a box
shows a tooltip. Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.ui

NOTEBOOK = "quickstart.ipynb"
WIDGET = '.gpuprofile[data-gpuprofile="ready"]'
TIMELINE = ".gpuprofile .gp-timeline"
CANVAS = ".gpuprofile .gp-timeline canvas"
# Keep in step with js/views/timeline.js: axis height, lane padding, row height.
AXIS_H, LANE_PAD, ROW_H = 24, 3, 16


def _view(page) -> tuple[float, float]:
    el = page.locator(TIMELINE).first
    start = float(el.get_attribute("data-view-start-ns"))
    return start, float(el.get_attribute("data-view-end-ns"))


def _wait_view_change(page, before: tuple[float, float]) -> None:
    page.wait_for_function(
        """([sel, s, e]) => {
            const el = document.querySelector(sel);
            const d = el && el.dataset;
            return d && (Number(d.viewStartNs) !== s || Number(d.viewEndNs) !== e);
        }""",
        arg=[TIMELINE, before[0], before[1]],
        timeout=10_000,
    )


def test_quickstart_widget(page, run_notebook, artifacts_dir: Path) -> None:
    expected = run_notebook(NOTEBOOK)
    widget = page.locator(WIDGET)
    assert widget.count() == 1
    root = widget.first
    root.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts_dir / "quickstart-page.png"), full_page=False)
    root.screenshot(path=str(artifacts_dir / "quickstart-widget.png"))

    # The widget's counts equal the kernel's, which were computed without the widget.
    for key in ("ops", "kernels", "memcpy", "memset"):
        assert int(root.get_attribute(f"data-{key}")) == int(expected[key]), key
    assert expected["ops"] > 0, "the profiled cell recorded no ops"
    assert root.get_attribute("data-partial") == "false"
    timeline = page.locator(TIMELINE).first
    assert int(timeline.get_attribute("data-events")) >= expected["ops"]

    # The wheel over the canvas zooms in: the visible window narrows, around the cursor.
    canvas = page.locator(CANVAS).first
    box = canvas.bounding_box()
    assert box and box["width"] > 300 and box["height"] > 40, box
    start0, end0 = _view(page)
    assert end0 > start0 >= 0
    page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + AXIS_H + LANE_PAD + ROW_H / 2)
    page.mouse.wheel(0, -400)
    _wait_view_change(page, (start0, end0))
    start1, end1 = _view(page)
    assert end1 - start1 < 0.8 * (end0 - start0), (start0, end0, start1, end1)
    assert start1 > start0 and end1 < end0 + 1e-6  # zoomed at an interior cursor, not an edge

    # A drag to the left pans later in time, keeping the zoom.
    x0 = box["x"] + box["width"] * 0.7
    y0 = box["y"] + AXIS_H + 4
    page.mouse.move(x0, y0)
    page.mouse.down()
    page.mouse.move(x0 - 150, y0, steps=5)
    page.mouse.up()
    _wait_view_change(page, (start1, end1))
    start2, end2 = _view(page)
    assert start2 > start1
    assert abs((end2 - start2) - (end1 - start1)) < 1e-6 * (end1 - start1) + 1e-3

    # Hovering the first lane's top row finds a box somewhere and shows its tooltip.
    page.get_by_role("button", name="Reset zoom").click()
    tooltip = page.locator(".gpuprofile .gp-tooltip").first
    row_y = box["y"] + AXIS_H + LANE_PAD + ROW_H / 2
    label_w = min(220, max(110, round(box["width"] * 0.22)))
    shown = False
    for k in range(1, 40):
        page.mouse.move(box["x"] + label_w + (box["width"] - label_w) * k / 40, row_y)
        if tooltip.is_visible():
            shown = True
            break
    assert shown, "no tooltip anywhere along the first lane's top row"
    text = tooltip.inner_text()
    assert "duration:" in text and "lane:" in text, text
    assert re.search(r"duration: [\d.]+ (ns|µs|ms|s)$", text, re.M), text
    page.screenshot(path=str(artifacts_dir / "quickstart-tooltip.png"))
