"""The module view in the saved snapshot and the bokeh page: the same tree the widget draws,
rows in tree order, bars to scale, trace strings escaped, and nothing at all without module
rows."""

from __future__ import annotations

import base64
import html
import re

import pytest

from gpuprofile.report import module_layout as ml
from gpuprofile.report.html import render_html
from gpuprofile.report.schema import Report
from gpuprofile.report.snapshot import render_snapshot
from helpers import report_parts as rp
from helpers.html_page import div_markup
from helpers.synthetic import synthetic_trace

HOSTILE = 'Net.<img src=x onerror="alert(1)">'
ROWS = [
    rp.module_row("Net", 300, 600, type="Net"),
    rp.module_row("Net.fc2", 200, 400, type="Linear"),
    rp.module_row("Net.fc1", 100, 200, type="Linear"),
    rp.module_row(HOSTILE, 10, 0),
]


def _report(rows: list[dict[str, object]], **sections: object) -> Report:
    return rp.report(ranks=[rp.rank(modules=rows)], **sections)


def _svgs(markup: str) -> list[str]:
    """The module trees of a snapshot: its images' SVG, decoded by hand."""
    found = re.findall(r'class="gp-snapshot-modules"[^>]*src="data:image/svg\+xml;base64,([^"]+)"',
                       markup)  # fmt: skip
    return [base64.b64decode(data).decode("utf-8") for data in found]


def test_snapshot_draws_the_tree_in_order_with_bars_to_scale() -> None:
    markup = render_snapshot(_report(ROWS), None)
    assert "Time by module" in markup
    (svg,) = _svgs(markup)
    paths = [html.unescape(p) for p in re.findall(r'<g data-path="([^"]*)"', svg)]
    assert paths == ["Net", "Net.fc2", "Net.fc1", HOSTILE]
    # Net's forward bar: its share of the largest row (Net itself: 300 + 600) of the bar width.
    widths = [float(w) for w in re.findall(r'<rect [^>]*width="([0-9.]+)"', svg)]
    bar_w = ml.WIDTH - ml.BAR_X - ml.VALUE_W
    assert abs(widths[0] - bar_w * 300 / 900) < 0.06
    assert abs(widths[1] - bar_w * 600 / 900) < 0.06
    # Trace strings are text: no tag of theirs survives, in the image or around it.
    assert "<img src=x" not in svg and "onerror=" not in markup.replace("onerror=&quot;", "")


def test_no_module_rows_no_section() -> None:
    assert "Time by module" not in render_snapshot(_report([]), None)
    assert not _svgs(render_snapshot(_report([]), None))


def test_hints_name_their_module_and_line() -> None:
    hint = rp.hint(
        title="slow loop",
        modules=["Net.fc1", "Net"],
        sources=[{"file": "cell [5]", "line": 12, "function": "forward"}],
    )
    markup = render_snapshot(_report(ROWS, hints=[hint]), None)
    assert "module Net.fc1 (+1 more) · line cell [5] line 12" in html.unescape(markup)
    hint = rp.hint(sources=[{"file": "/home/u/model.py", "line": 42, "function": "f"}])
    assert "line model.py:42" in html.unescape(render_snapshot(_report([], hints=[hint]), None))


@pytest.mark.parametrize("rows", [ROWS, []])
def test_bokeh_page_draws_the_same_tree(rows: list[dict[str, object]]) -> None:
    page = render_html(_report(rows), synthetic_trace(50))
    markup = div_markup(page)
    if not rows:
        assert "Time by module" not in markup
        return
    assert "Time by module" in markup
    paths = [html.unescape(p) for p in re.findall(r'<g data-path="([^"]*)"', markup)]
    assert paths == ["Net", "Net.fc2", "Net.fc1", HOSTILE]
    # Inline, so each row's tooltip shows; the hostile path only escaped.
    assert "<title>Net (Net) · 1 call · forward" in markup
    assert "<img" not in markup.lower() and html.escape(HOSTILE, quote=True) in markup
