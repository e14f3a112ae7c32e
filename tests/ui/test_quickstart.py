"""The quickstart notebook in real JupyterLab and headless Chromium.

Runs every cell of example_notebooks/quickstart.ipynb, then checks that the widget rendered, that
its counts match the ones the kernel printed (computed from gpuprofile.last().report(), not from
the widget), that ctrl+wheel zooms the timeline, a drag on the time axis pans it, a drag in the
plot selects a range, and that hovering a box shows a tooltip. Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from widget_page import AXIS_H, HEADER_H, TIMELINE, WIDGET, hover_find, plot, view, wait_view_change

pytestmark = pytest.mark.ui

NOTEBOOK = "quickstart.ipynb"


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

    # What the program is comes first in the summary: the notebook's cell is an SGD training
    # step, run eagerly, on this machine's device (the notebook picks CUDA where there is one).
    import torch

    first = root.locator(".gp-summary > *").first
    assert first.get_attribute("class") == "gp-workload"
    device = "cuda" if torch.cuda.is_available() else "cpu"
    line = f"workload: training · parallelism none seen · eager · {device}"
    assert first.locator("summary").text_content() == line
    assert "optimizer step (Optimizer.step#SGD.step)" in (first.text_content() or "")

    # Ctrl+wheel over the plot zooms in: the visible window narrows, around the cursor.
    box = plot(page)
    start0, end0 = view(page)
    assert end0 > start0 >= 0
    page.mouse.move(box.x_of_fraction(0.6), box.y + AXIS_H + 10)
    page.keyboard.down("Control")
    page.mouse.wheel(0, -400)
    page.keyboard.up("Control")
    start1, end1 = wait_view_change(page, (start0, end0))
    assert end1 - start1 < 0.8 * (end0 - start0), (start0, end0, start1, end1)
    assert start1 > start0 and end1 < end0 + 1e-6  # zoomed at an interior cursor, not an edge

    # A drag to the left on the time axis pans later in time, keeping the zoom.
    x0 = box.x_of_fraction(0.7)
    y0 = box.y + AXIS_H / 2
    page.mouse.move(x0, y0)
    page.mouse.down()
    page.mouse.move(x0 - 150, y0, steps=5)
    page.mouse.up()
    start2, end2 = wait_view_change(page, (start1, end1))
    assert start2 > start1
    assert abs((end2 - start2) - (end1 - start1)) < 1e-6 * (end1 - start1) + 1e-3

    # A drag in the plot selects that stretch of time (the range panel opens) and keeps the view.
    # It is made over the whole trace: which events a zoomed window holds depends on how long
    # each op took on this machine (a loaded one stretches the optimizer step over all of it).
    page.get_by_role("button", name="Show the whole trace (0)").click()
    whole = wait_view_change(page, (start2, end2))
    panel = page.locator(".gpuprofile .gp-range-panel").first
    ya = box.y + AXIS_H + HEADER_H + 8  # in the first lane, under its group's header
    page.mouse.move(box.x_of_fraction(0.02), ya)
    page.mouse.down()
    page.mouse.move(box.x_of_fraction(0.98), ya, steps=5)
    page.mouse.up()
    panel.wait_for(state="visible", timeout=10_000)
    assert view(page) == whole
    # Its top tables: one row per name, each shown apart from the others and not cut short
    # (names that share a long prefix, as autograd's, once read as one repeated row).
    panel.locator(".gp-range-top").first.wait_for(timeout=30_000)
    tables = panel.locator(".gp-range-top").evaluate_all(
        "ts => ts.map(t => [...t.querySelectorAll('.gp-name')].map(e =>"
        " [e.textContent, e.title, e.scrollWidth > e.clientWidth + 1]))"
    )
    assert tables and all(tables), tables
    for rows in tables:
        assert len({shown for shown, _, _ in rows}) == len(rows), rows
        assert len({full for _, full, _ in rows}) == len(rows), rows
        assert not any(cut for _, _, cut in rows), rows
    page.keyboard.press("Escape")
    panel.wait_for(state="hidden", timeout=10_000)

    # Hovering somewhere in the first lanes finds a box and shows its tooltip.
    found = hover_find(page, box, [box.x_of_fraction(k / 40) for k in range(1, 40)], bool, 16.0)
    assert found, "no tooltip anywhere in the visible lanes"
    lines = found[2].splitlines()
    # name, "kind · duration", "start …", lane
    assert len(lines) >= 4 and lines[0].strip(), lines
    assert re.search(r"^(op|runtime|kernel|memcpy|memset) · [\d.]+ (ns|µs|ms|s)$", lines[1]), lines
    assert lines[2].startswith("start "), lines
    page.screenshot(path=str(artifacts_dir / "quickstart-tooltip.png"))
