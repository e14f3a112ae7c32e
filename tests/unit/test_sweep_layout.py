"""The scaling sweep's log-log chart: geometry (report.sweep_layout) and its SVG
(report.sweep_svg)."""

from __future__ import annotations

import itertools
import math
import re

import msgspec
import pytest

from gpuprofile.report.roof_labels import Pt, overlap
from gpuprofile.report.sweep_layout import Series, SweepPlot, sweep_layout
from gpuprofile.report.sweep_svg import sweep_svg

XS = [128.0, 256.0, 512.0, 1024.0, 2048.0]


def power(a: float, k: float, xs: list[float] = XS) -> list[float]:
    return [a * x**k for x in xs]


def exact(subject: str, a: float, k: float, metric: str = "time") -> Series:
    return Series(subject, metric, XS, power(a, k), exponent=k, coefficient=a)


def finite(p: Pt) -> bool:
    return math.isfinite(p[0]) and math.isfinite(p[1])


def in_box(plot: SweepPlot, p: Pt, tol: float = 1e-6) -> bool:
    b = plot.box
    return b.left - tol <= p[0] <= b.right + tol and b.top - tol <= p[1] <= b.bottom + tol


def cross(a: Pt, b: Pt, c: Pt) -> float:
    """Twice the signed area of the triangle abc, over |ab|: c's distance from the line ab."""
    return ((b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])) / math.dist(a, b)


def test_points_of_exact_power_law_lie_on_fitted_line() -> None:
    series = [exact("total", 1e3, 2.0), exact("model.encoder", 50.0, 1.0)]
    plot = sweep_layout("L", series)
    assert plot.empty is None and plot.metric == "time"
    for s in plot.series:
        assert s.line is not None and len(s.points) == len(XS)
        a, b = s.line
        for p in s.points:
            assert abs(cross(a, b, p)) < 1e-6  # px from the line
        # The line runs left to right and its ends are in the box.
        assert a[0] < b[0]
        assert in_box(plot, a) and in_box(plot, b)


def test_everything_inside_the_box_and_chart() -> None:
    series = [
        exact("total", 1e3, 2.0),
        exact("model.layers.0", 1e2, 1.0),
        exact("model.layers.1", 1e2, 1.05),
        Series("model.head", "time", XS, power(30.0, 0.5), exponent=0.4, coefficient=40.0),
    ]
    plot = sweep_layout("seq_len", series)
    for s in plot.series:
        assert all(in_box(plot, p) for p in s.points)
        assert s.line is not None and all(in_box(plot, p) for p in s.line)
    for t in plot.x_ticks:
        assert plot.box.left - 1e-6 <= t.at <= plot.box.right + 1e-6
    for t in plot.y_ticks:
        assert plot.box.top - 1e-6 <= t.at <= plot.box.bottom + 1e-6
    labels = [s.label for s in plot.series if s.label is not None]
    labels += [t.label for t in (*plot.x_ticks, *plot.y_ticks)]
    for lb in labels:
        for x, y in lb.box:
            assert -1e-6 <= x <= plot.width + 1e-6 and -1e-6 <= y <= plot.height + 1e-6


def test_labels_do_not_overlap() -> None:
    # Nearly equal lines: their right ends are a pixel or so apart, so the labels must move.
    series = [exact(f"model.blocks.{i}", 100.0 * (1 + 0.01 * i), 1.5) for i in range(12)]
    series.append(exact("total", 1300.0, 1.5))
    plot = sweep_layout("batch", series)
    labels = [s.label for s in plot.series]
    assert all(lb is not None for lb in labels)
    boxes = [lb.box for lb in labels if lb is not None]
    for a, b in itertools.combinations(boxes, 2):
        assert not overlap(a, b)
    # Moved labels point back at their lines.
    assert any(s.leader is not None for s in plot.series)
    for ticks in (plot.x_ticks, plot.y_ticks):
        for a, b in itertools.combinations([t.label.box for t in ticks], 2):
            assert not overlap(a, b)


def test_many_series_grow_the_chart() -> None:
    series = [exact(f"m.{i}", 100.0, 1.0) for i in range(40)]
    plot = sweep_layout("L", series)
    boxes = [s.label.box for s in plot.series if s.label is not None]
    assert len(boxes) == 40
    for a, b in itertools.combinations(boxes, 2):
        assert not overlap(a, b)
    assert all(0 <= y <= plot.height for box in boxes for _, y in box)


def test_few_decades_tick_the_swept_values() -> None:
    plot = sweep_layout("L", [exact("total", 1.0, 1.0)])
    values = {t.value for t in plot.x_ticks}
    assert set(XS) <= values  # 1024, not the decade 1000 beside it
    assert [t.label.text for t in plot.x_ticks if t.value == 128.0] == ["128"]
    assert len(plot.y_ticks) >= 2
    # Many decades: decades only.
    wide = [float(10**e) for e in range(0, 7)]
    plot = sweep_layout("n", [Series("total", "flops", wide, wide, 1.0, 1.0)])
    assert all(t.major for t in plot.x_ticks)
    assert any(t.label.text == "1 MFLOP" for t in plot.y_ticks)


def test_tick_labels_use_units() -> None:
    plot = sweep_layout("L", [Series("total", "peak_bytes", XS, power(1e6, 1.0))])
    texts = [t.label.text for t in plot.y_ticks]
    assert any(t.endswith("GB") or t.endswith("MB") for t in texts)
    plot = sweep_layout("L", [Series("total", "time", XS, power(1e3, 1.0))])
    assert any(t.label.text == "1 ms" for t in plot.y_ticks)


@pytest.mark.parametrize(
    "series",
    [
        [Series("total", "time", [512.0], [3e6])],  # one value
        [Series("total", "time", [512.0, 512.0], [3e6, 3e6], exponent=1.0, coefficient=6e3)],
        [Series("total", "time", XS, [5e5] * len(XS), exponent=0.0, coefficient=5e5)],  # flat
        [Series("total", "time", XS, [0.0, -1.0, float("nan"), 0.0, 0.0])],  # nothing positive
        [],
        [Series("total", "time", [1e6, 2e6], [1.0, 2.0], exponent=200.0, coefficient=1e10)],
    ],
)
def test_degenerate_input_gives_finite_geometry(series: list[Series]) -> None:
    plot = sweep_layout("L", series)
    box = plot.box
    assert all(math.isfinite(v) for v in (box.left, box.top, box.right, box.bottom))
    assert box.left < box.right and box.top < box.bottom
    assert all(math.isfinite(v) and v > 0 for v in (*plot.x_domain, *plot.y_domain))
    assert plot.x_domain[0] < plot.x_domain[1] and plot.y_domain[0] < plot.y_domain[1]
    assert len(plot.x_ticks) >= 1 and len(plot.y_ticks) >= 1
    for s in plot.series:
        assert all(finite(p) and in_box(plot, p) for p in s.points)
        if s.line is not None:
            assert all(finite(p) and in_box(plot, p) for p in s.line)
    svg = sweep_svg(plot)
    assert "nan" not in svg.lower() and "inf" not in svg.lower()
    if not any(s.points for s in plot.series):
        assert plot.empty is not None and "Nothing to plot" in svg


def test_flat_line_is_drawn_level() -> None:
    plot = sweep_layout("L", [Series("total", "time", XS, [5e5] * 5, 0.0, 5e5)])
    line = plot.series[0].line
    assert line is not None
    assert line[0][1] == pytest.approx(line[1][1])
    assert line[0][0] == pytest.approx(plot.box.left) and line[1][0] == pytest.approx(
        plot.box.right
    )


def test_line_missing_the_box_is_none() -> None:
    # A fit far above every point (a series with no points of its own): clipped away.
    series = [
        Series("total", "time", XS, power(1.0, 1.0)),
        Series("other", "time", [], [], exponent=1.0, coefficient=1e30),
    ]
    plot = sweep_layout("L", series)
    assert plot.series[1].points == () and plot.series[1].line is None
    assert plot.series[1].label is None
    # A fit far from its own points still shows: the y range covers it at their x ends.
    series = [Series("total", "time", XS, power(1.0, 1.0), exponent=1.0, coefficient=1e12)]
    plot = sweep_layout("L", series)
    assert plot.series[0].line is not None


def test_svg_escapes_and_draws_one_circle_per_point() -> None:
    evil = '<script>alert("x")</script>'
    series = [exact(evil, 10.0, 1.0), exact("model.fc & <b>", 20.0, 2.0)]
    plot = sweep_layout('L"<i>', series)
    svg = sweep_svg(plot)
    assert "<script>" not in svg and "<b>" not in svg and "<i>" not in svg
    assert "&lt;script&gt;" in svg
    assert svg.count("<circle") == sum(len(s.points) for s in plot.series) == 2 * len(XS)
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    # Well formed enough for an XML parser.
    import xml.etree.ElementTree as ET

    root = ET.fromstring(svg)
    assert root.tag.endswith("svg")
    assert len(re.findall(r"<line ", svg)) >= 2  # the fitted lines at least


def test_layout_is_msgspec_encodable() -> None:
    plot = sweep_layout("L", [exact("total", 1.0, 1.0)])
    data = msgspec.json.decode(msgspec.json.encode(plot))
    assert data["series"][0]["subject"] == "total"
    assert len(data["series"][0]["points"]) == len(XS)
    assert data["x_ticks"][0]["label"]["text"]
