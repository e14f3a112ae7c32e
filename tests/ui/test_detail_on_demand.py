"""A trace too big to send whole (~300k events, over the 200k threshold): the widget starts from
the merged overview, and zooming in fetches real events from the kernel, which can then be
picked one by one.

The trace is tests/synthetic.py's (100k kernels, each with its op and its launch call); the cell
counts its events and names from the Trace's tables.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from widget_page import (
    AXIS_H,
    DETAILS_TITLE,
    HEADER_H,
    TIMELINE,
    TOOLTIP,
    focus_plot,
    hover_find,
    plot,
    run_expecting,
    view,
    wait_data,
)

pytestmark = pytest.mark.ui

TESTS = Path(__file__).resolve().parents[1]
DETAIL_THRESHOLD = 200_000  # the contract: above this many events, `events` is an overview

SOURCE = """\
import json
import sys

sys.path.insert(0, {tests!r})
from helpers.reference import timeline_lanes
from helpers.synthetic import synthetic_trace

from gpuprofile.profiles import Profile

trace = synthetic_trace(100_000)
kinds = ('ops', 'runtime', 'kernels', 'memcpy', 'memset')
names = sorted({{str(n) for k in kinds for n in trace.table(k)['name'].astype(str).unique()}})
total = sum(len(trace.table(k)) for k in kinds)
lanes = timeline_lanes(trace)
memory_lanes = len(trace.memory[['rank', 'device']].drop_duplicates())
print('GPUPROFILE_EXPECT', json.dumps({{'total': total, 'names': names, 'lanes': lanes,
                                        'memory_lanes': memory_lanes}}))
Profile(trace)
"""


def _is_kernel_box(text: str) -> bool:
    lines = text.splitlines()
    return len(lines) > 1 and lines[1].startswith("kernel")


def test_zooming_in_fetches_real_events(
    page, jupyterlab: str, notebook_dir: Path, artifacts_dir: Path
) -> None:
    expected = run_expecting(
        page, jupyterlab, notebook_dir, "detail.ipynb", SOURCE.format(tests=str(TESTS))
    )
    assert expected["total"] > DETAIL_THRESHOLD
    timeline = page.locator(TIMELINE).first
    assert int(timeline.get_attribute("data-events")) == expected["total"]
    # Its allocator events make a memory counter lane, counted with the event lanes.
    assert expected["memory_lanes"] > 0
    assert int(timeline.get_attribute("data-lanes")) == expected["lanes"]

    # The whole trace is the overview: boxes stand for many events, and picking one says so.
    box = plot(page)
    page.screenshot(path=str(artifacts_dir / "detail-overview.png"))
    xs = [box.x_of_fraction(f) for f in (0.3, 0.5, 0.7)]
    found = hover_find(page, box, xs, lambda t: _is_kernel_box(t) and "merged" in t)
    assert found, "no merged kernel box in the overview"
    assert re.search(r"[\d,]+ events merged here", found[2]), found[2]
    page.mouse.click(found[0], found[1])
    wait_data(page, TIMELINE, "data-selected-id", "v === '-1'")
    assert "merged" in page.locator(".gpuprofile .gp-details").first.inner_text()
    # The overview is fine enough for the whole view: nothing was asked for yet.
    assert timeline.get_attribute("data-window-requests") == "0"

    # Zoom in with W: the widget asks the kernel for the events in view.
    focus_plot(page, box)
    page.mouse.move(box.x_of_fraction(0.5), box.y + AXIS_H + HEADER_H + 10)
    start0, end0 = view(page)
    for _ in range(14):
        page.keyboard.press("w")
    wait_data(page, TIMELINE, "data-window-requests", "Number(v) > 0")
    start1, end1 = view(page)
    assert end1 - start1 < 0.05 * (end0 - start0)

    # Once the window has come back, a click picks one real event, with its details.
    tooltip = page.locator(TOOLTIP).first
    selected = ""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        hit = hover_find(page, box, xs, lambda t: _is_kernel_box(t) and "merged" not in t)
        if hit:
            name = tooltip.inner_text().splitlines()[0]
            page.mouse.click(hit[0], hit[1])
            selected = str(timeline.get_attribute("data-selected-id"))
            if re.fullmatch(r"\d+", selected):
                break
        page.wait_for_timeout(300)
    assert re.fullmatch(r"\d+", selected), f"no real event picked (selected id {selected!r})"
    title = page.locator(DETAILS_TITLE).first
    title.wait_for(state="visible")
    assert title.text_content() == name and name in expected["names"], (name, title)
    # The kernel's details came from Python: its fields and the call that launched it.
    page.locator(".gpuprofile .gp-details .gp-details-fields").first.wait_for(state="visible")
    details = page.locator(".gpuprofile .gp-details").first.inner_text()
    assert "launched by" in details and "cudaLaunchKernel" in details, details
    plot(page)
    page.screenshot(path=str(artifacts_dir / "detail-zoomed.png"))
