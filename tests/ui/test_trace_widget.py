"""A real GPU trace (A100 training step, ~75k events, CPU threads and 4 CUDA streams) in the widget:
counts, lanes, keyboard and ctrl+wheel navigation, name search.

The notebook is written by the test into the served temporary copy (not the repository); the
trace is read from ../shared/traces, and the test skips when that is absent. Its cell works out
the expected values from the Trace's tables with plain pandas (not from the widget's data), and
all tests of this module share its page.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from widget_page import (
    AXIS_H,
    DETAILS_TITLE,
    HEADER_H,
    TIMELINE,
    TOOLTIP,
    WIDGET,
    focus_plot,
    plot,
    run_expecting,
    view,
    wait_data,
    wait_view_change,
)

from helpers.prerequisites import SHARED_TRACES, require_trace

pytestmark = [pytest.mark.ui, pytest.mark.traces]

TRACE = SHARED_TRACES / "kineto" / "hta_a100_train_rank3_of8_async_cpu_to_gpu.json.gz"
SUBSTRING = "MemCpy"  # mixed case: substring search ignores case
REGEX = r"^(cudaMemcpyAsync|Memcpy HtoD)"  # as a plain substring it would match nothing

TESTS = Path(__file__).resolve().parents[1]
SOURCE = """\
import json
import sys

sys.path.insert(0, {tests!r})
from helpers.reference import timeline_lanes

import gpuprofile

p = gpuprofile.load({trace!r})
report = p.report()
kinds = ('ops', 'runtime', 'kernels', 'memcpy', 'memset')
tables = {{k: p.trace.table(k) for k in kinds}}
counts = {{k: sum(r['counts'][k] for r in report['ranks']) for k in kinds}}
counts['lanes'] = timeline_lanes(p.trace)
memory, counters = p.trace.memory, p.trace.counters
ends = [float((t['start_ns'] + t['dur_ns']).max()) for t in tables.values() if len(t)]
ends += [float(t['time_ns'].max()) for t in (memory, counters) if len(t)]
counts['span_ns'] = max(ends)

def matches(pattern, regex):
    starts = []
    for t in tables.values():
        names = t['name'].astype('string').fillna('')
        hit = names.str.contains(pattern, case=regex, regex=regex).to_numpy(bool)
        starts += t['start_ns'][hit].astype(float).tolist()
    return {{'count': len(starts), 'first_starts': sorted(starts)[:2]}}

counts['substring'] = matches({substring!r}, False)
counts['regex'] = matches({regex!r}, True)
counts['regex_as_text'] = matches({regex!r}, False)['count']
print('GPUPROFILE_EXPECT', json.dumps(counts))
p
"""


@pytest.fixture(scope="module")
def expected(module_page, jupyterlab: str, notebook_dir: Path) -> dict:
    require_trace(TRACE)
    source = SOURCE.format(tests=str(TESTS), trace=str(TRACE), substring=SUBSTRING, regex=REGEX)
    values: dict = run_expecting(module_page, jupyterlab, notebook_dir, "trace.ipynb", source)
    return values


def _close(a: float, b: float, scale: float) -> bool:
    return abs(a - b) <= 1e-9 * abs(scale) + 1e-3


def test_gpu_trace_widget(module_page, expected: dict, artifacts_dir: Path) -> None:
    page = module_page
    root = page.locator(WIDGET).first
    timeline = page.locator(TIMELINE).first
    for key in ("ops", "kernels", "memcpy", "memset"):
        assert int(root.get_attribute(f"data-{key}")) == expected[key], key
    assert expected["kernels"] > 0 and expected["memcpy"] > 0
    # Every op, runtime call, kernel, copy and memset is one event of the timeline.
    total = sum(expected[k] for k in ("ops", "runtime", "kernels", "memcpy", "memset"))
    assert int(timeline.get_attribute("data-events")) == total
    assert int(timeline.get_attribute("data-lanes")) == expected["lanes"]
    # Drawing every event at the full view stays interactive.
    draw_ms = float(timeline.get_attribute("data-draw-ms"))
    print(f"full-view draw of {total} events: {draw_ms} ms")
    assert draw_ms < 250
    # The first view is the whole trace.
    span = expected["span_ns"]
    start, end = view(page)
    assert start == 0 and _close(end, span, span), (start, end, span)

    root.scroll_into_view_if_needed()
    root.screenshot(path=str(artifacts_dir / "trace-widget.png"))


def test_keyboard_and_ctrl_wheel_navigation(module_page, expected: dict, artifacts_dir) -> None:
    page = module_page
    span = expected["span_ns"]
    cells = page.locator(".jp-Notebook .jp-Cell").count()
    box = plot(page)
    focus_plot(page, box)
    v0 = view(page)
    assert v0[0] == 0 and _close(v0[1], span, span)

    # W zooms in by a fixed step around the mouse: the time under it stays under it.
    frac = 0.3
    page.mouse.move(box.x_of_fraction(frac), box.y + AXIS_H + HEADER_H + 8)
    page.keyboard.press("w")
    v1 = wait_view_change(page, v0)
    w0, w1 = v0[1] - v0[0], v1[1] - v1[0]
    assert 0.5 * w0 < w1 < 0.95 * w0, (v0, v1)
    anchor = (v1[0] - v0[0]) / (w0 - w1)  # the fixed point's place in the plot, 0..1
    assert abs(anchor - frac) < 0.01, (anchor, frac)
    for _ in range(3):
        before = view(page)
        page.keyboard.press("w")
        after = wait_view_change(page, before)
        assert after[1] - after[0] < before[1] - before[0]
    v2 = view(page)
    w2 = v2[1] - v2[0]
    assert w2 < 0.6 * w0 and v2[0] > 0 and v2[1] < span

    # D pans later, A earlier, by the same amount; the width stays.
    page.keyboard.press("d")
    v3 = wait_view_change(page, v2)
    assert v3[0] > v2[0] and _close(v3[1] - v3[0], w2, span), (v2, v3)
    page.keyboard.press("a")
    v4 = wait_view_change(page, v3)
    assert v4[0] < v3[0] and _close(v4[1] - v4[0], w2, span), (v3, v4)
    assert _close(v4[0], v2[0], span), (v2, v4)
    # S zooms back out.
    page.keyboard.press("s")
    v5 = wait_view_change(page, v4)
    assert v5[1] - v5[0] > w2
    page.screenshot(path=str(artifacts_dir / "trace-widget-keys.png"))
    # 0 shows the whole trace again.
    page.keyboard.press("0")
    v6 = wait_view_change(page, v5)
    assert v6[0] == 0 and _close(v6[1], span, span), v6
    # The keys were the timeline's, not the notebook's (A inserts a cell, D,D deletes one).
    assert page.locator(".jp-Notebook .jp-Cell").count() == cells

    # Ctrl+wheel zooms around the mouse.
    frac = 0.7
    page.mouse.move(box.x_of_fraction(frac), box.y + AXIS_H + HEADER_H + 8)
    page.keyboard.down("Control")
    page.mouse.wheel(0, -300)
    page.keyboard.up("Control")
    v7 = wait_view_change(page, v6)
    w6, w7 = v6[1] - v6[0], v7[1] - v7[0]
    assert w7 < 0.9 * w6, (v6, v7)
    anchor = (v7[0] - v6[0]) / (w6 - w7)
    assert abs(anchor - frac) < 0.01, (anchor, frac)

    # A plain wheel leaves the time window alone (it scrolls lanes, or the page).
    page.mouse.wheel(0, 200)
    page.wait_for_timeout(150)
    assert view(page) == v7
    page.screenshot(path=str(artifacts_dir / "trace-widget-ctrl-wheel.png"))


def test_search_counts_and_steps(module_page, expected: dict, artifacts_dir: Path) -> None:
    page = module_page
    span = expected["span_ns"]
    plot(page)  # in view, for the screenshots
    timeline = TIMELINE
    search = page.locator(".gpuprofile .gp-search-input").first
    status = page.locator(".gpuprofile .gp-search-status").first
    regex = page.locator(".gpuprofile .gp-search-regex input").first
    want = expected["substring"]
    assert want["count"] > 1

    search.fill(SUBSTRING)
    wait_data(page, timeline, "data-search-count", f"v === '{want['count']}'")
    assert f"{want['count']:,}" in status.inner_text()

    # Enter steps to the first match in time order: selected, and in view.
    search.press("Enter")
    wait_data(page, timeline, "data-selected-id", "v !== null && /^\\d+$/.test(v)")
    start, end = view(page)
    assert start <= want["first_starts"][0] <= end, (start, end, want)
    assert end - start < span / 100  # zoomed in on it
    title = page.locator(DETAILS_TITLE).first
    title.wait_for(state="visible")
    assert SUBSTRING.lower() in title.inner_text().lower()
    first_id = page.locator(timeline).first.get_attribute("data-selected-id")
    page.screenshot(path=str(artifacts_dir / "trace-widget-search.png"))
    # And on to the second.
    search.press("Enter")
    wait_data(page, timeline, "data-selected-id", f"v !== null && v !== '' && v !== '{first_id}'")
    start, end = view(page)
    assert start <= want["first_starts"][1] <= end, (start, end, want)
    assert status.inner_text().startswith("2 of ")

    # Regex mode: the count is that of the regular expression, not of the text.
    assert expected["regex_as_text"] == 0 and expected["regex"]["count"] > 0
    regex.check()
    search.fill(REGEX)
    wait_data(page, timeline, "data-search-count", f"v === '{expected['regex']['count']}'")
    # A bad regex says so instead of matching.
    search.fill("(unclosed")
    page.wait_for_function(
        "el => el.classList.contains('gp-bad') && el.textContent.length > 0",
        arg=status.element_handle(),
    )
    regex.uncheck()
    search.fill("")
    wait_data(page, timeline, "data-search-count", "v === '0'")


def test_gpu_lanes_come_first(module_page, expected: dict) -> None:
    # As in Nsight Systems: a rank's GPU streams at the top, its CPU threads (deep Python and
    # aten stacks) below them. The first lane under the first group header is a stream.
    page = module_page
    page.get_by_role("button", name="Show the whole trace (0)").first.click()
    page.locator(".gpuprofile .gp-scroller").first.evaluate("el => { el.scrollTop = 0; }")
    box = plot(page)
    tooltip = page.locator(TOOLTIP).first
    found = None
    y = box.y + AXIS_H + HEADER_H + 6  # the first row of the first lane
    for k in range(1, 200):
        page.mouse.move(box.x_of_fraction(k / 200), y)
        if tooltip.is_visible():
            found = tooltip.inner_text().splitlines()
            break
    assert found, "no event in the first lane"
    kind, lane = found[1].split(" · ")[0], found[3]
    assert kind in ("kernel", "memcpy", "memset"), found
    assert lane.startswith("GPU ") and "stream" in lane, found
