"""The roofline layout that every renderer draws: roofs and ridges where the datasheet puts them,
which points are plotted, and labels that cover no other label and no line."""

from __future__ import annotations

import itertools
import json
import math
from importlib.resources import files
from typing import Any

import msgspec
import pytest

from gpuprofile.hardware.tables import datasheet
from gpuprofile.profiles import Profile
from gpuprofile.report import roof_labels
from gpuprofile.report.roofline_layout import RooflineLayout, roofline_layout
from gpuprofile.report.schema import Report
from helpers import report_parts
from helpers.synthetic import synthetic_trace

SPECS = json.loads(files("gpuprofile.hardware").joinpath("specs.json").read_text())["devices"]
KEYS = [e["key"] for e in SPECS]


def _point(intensity: float, rate: float, **extra: Any) -> dict[str, Any]:
    point = {
        "flops": rate * 1e-3,
        "bytes": rate * 1e-3 / intensity,
        "intensity": intensity,
        "achieved_flops_per_s": rate,
        "time_ns": 1_000_000,
        "level": "op",
        "bound": "memory",
        "roof": "dram",
    }
    return {**point, **extra}


def _report(key: str, points: list[dict[str, Any]], **hardware: Any) -> Report:
    return report_parts.report(
        hardware={**datasheet(key).to_dict(), **hardware},
        roofline={
            "coverage": None,
            "points": [report_parts.point(**p) for p in points],
            "missing_flops": "",
        },
    )


def _box(
    text: str, x: float, y: float, anchor: str, angle: float, font: float
) -> list[tuple[float, float]]:
    """A label's box by the test's own rotation: width by the estimate the layout documents."""
    w = len(text) * font * roof_labels.CHAR_EM
    start = {"start": 0.0, "middle": -w / 2, "end": -w}[anchor]
    up, down = font * roof_labels.ASCENT, font * roof_labels.DESCENT
    cos, sin = math.cos(math.radians(angle)), math.sin(math.radians(angle))
    return [
        (x + u * cos - v * sin, y + u * sin + v * cos)
        for u, v in ((start, -up), (start + w, -up), (start + w, down), (start, down))
    ]


def _separated(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> bool:
    """Convex shapes are apart when some edge normal of either separates their projections."""
    for poly in (a, b):
        for (x0, y0), (x1, y1) in zip(poly, poly[1:] + poly[:1], strict=True):
            nx, ny = y0 - y1, x1 - x0
            if nx == ny == 0:
                continue
            pa = [x * nx + y * ny for x, y in a]
            pb = [x * nx + y * ny for x, y in b]
            if max(pa) <= min(pb) + 1e-6 or max(pb) <= min(pa) + 1e-6:
                return True
    return False


def _labels(layout: RooflineLayout) -> list[Any]:
    out = [t.label for axis in (layout.x, layout.y) for t in axis.ticks]
    out += [layout.x.title, layout.y.title]
    out += [r.label for r in layout.roofs if r.label] + [r.label for r in layout.ridges if r.label]
    return out + ([layout.memory_label] if layout.memory_label else [])


def _lines(layout: RooflineLayout) -> list[list[tuple[float, float]]]:
    segs = [[a, b] for r in layout.roofs for a, b in itertools.pairwise(r.path)]
    return segs + [list(r.drop) for r in layout.ridges]


def test_b200_ridge_points_come_from_the_datasheet() -> None:
    spec = next(e for e in SPECS if e["key"] == "b200")
    bandwidth = spec["dram_gb_per_s"] * 1e9
    layout = roofline_layout(_report("b200", [_point(50.0, 1e14)]))
    ridges = {r.roof: r for r in layout.ridges}
    expected = spec["tflops"]["bf16"] * 1e12 / bandwidth  # 2250 TFLOP/s / 7.7 TB/s
    assert ridges["fp16/bf16"].intensity == pytest.approx(expected)
    (x0, x1), plot = layout.x.domain, layout.plot
    share = (math.log10(expected) - math.log10(x0)) / (math.log10(x1) - math.log10(x0))
    assert ridges["fp16/bf16"].at[0] == pytest.approx(plot.left + share * (plot.right - plot.left))
    # One roof per distinct peak: fp16 and bf16 share one, as do fp8 and int8.
    assert sorted(r.key for r in layout.roofs) == sorted(
        ["fp64", "fp32", "tf32", "fp16/bf16", "fp8/int8"]
    )


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("rates", [(1e10, 1e11), (1e13, 5e14), (1e6, 1e9)])
def test_labels_cover_no_label_and_no_line(key: str, rates: tuple[float, float]) -> None:
    points = [_point(0.5, rates[0]), _point(200.0, rates[1])]
    layout = roofline_layout(_report(key, points))
    labels = _labels(layout)
    boxes = [_box(lb.text, lb.x, lb.y, lb.anchor, lb.angle, lb.font) for lb in labels]
    for (i, a), (j, b) in itertools.combinations(enumerate(boxes), 2):
        assert _separated(a, b), f"{labels[i].text!r} overlaps {labels[j].text!r}"
    for lb, box in zip(labels, boxes, strict=True):
        for seg in _lines(layout):
            assert _separated(box, seg), f"{lb.text!r} crosses a roof or ridge line at {seg}"
        xs, ys = [x for x, _ in box], [y for _, y in box]
        assert (
            min(xs) >= 0 and max(xs) <= layout.width and min(ys) >= 0 and max(ys) <= layout.height
        )


def test_b200_keeps_every_roof_label_and_the_y_title_clear_of_its_ticks() -> None:
    layout = roofline_layout(_report("b200", [_point(0.5, 1e11), _point(200.0, 1e14)]))
    assert all(r.label for r in layout.roofs)  # all five compute roofs are labelled
    assert layout.memory_label is not None and layout.memory_label.text.startswith("DRAM")
    title = layout.y.title
    title_right = max(x for x, _ in _box(title.text, title.x, title.y, "middle", -90, title.font))
    tick_left = min(
        min(x for x, _ in _box(t.label.text, t.label.x, t.label.y, "end", 0, t.label.font))
        for t in layout.y.ticks
    )
    assert title_right < tick_left


def test_roof_lines_stay_within_the_axis_ranges() -> None:
    layout = roofline_layout(_report("h100_sxm", [_point(0.01, 1e9), _point(1000.0, 1e14)]))
    bandwidth = next(e for e in SPECS if e["key"] == "h100_sxm")["dram_gb_per_s"] * 1e9
    assert len(layout.memory_line) == 2
    for x, y in layout.memory_line:
        assert y == pytest.approx(bandwidth * x)
    (x0, x1), (y0, y1) = layout.x.domain, layout.y.domain
    for roof in layout.roofs:
        assert roof.line
        for x, y in roof.line:
            assert x0 * (1 - 1e-9) <= x <= x1 * (1 + 1e-9) and y0 * (1 - 1e-9) <= y <= y1 * (
                1 + 1e-9
            )
    # Every point and ridge lies inside the domains, which span whole decades.
    for lo, hi in (layout.x.domain, layout.y.domain):
        assert math.log10(lo) == round(math.log10(lo)) and math.log10(hi) == round(math.log10(hi))
        assert math.log10(hi) - math.log10(lo) >= 3


def test_which_points_are_plotted_and_why_not() -> None:
    points = [
        _point(2.0, 1e12),
        {**_point(2.0, 1e12), "flops": None},
        {**_point(2.0, 1e12), "bytes": None},
        {**_point(2.0, 1e12), "flops": 0},
        {**_point(2.0, 1e12), "achieved_flops_per_s": 0},
        _point(2.0, 1e12, pct_of_roof=130.0),
    ]
    layout = roofline_layout(_report("h100_sxm", points))
    assert [p.reason for p in layout.points] == [
        "",
        "no FLOP count",
        "no byte count",
        "0 FLOPs (data movement only)",
        "no measured time",
        "",
    ]
    assert [p.plotted for p in layout.points] == [True, False, False, False, False, True]
    assert layout.unplotted is not None and layout.unplotted.startswith("4 points not plotted")
    assert layout.points[5].note is not None and "above DRAM bandwidth" in layout.points[5].note
    assert layout.points[0].note is None
    assert layout.empty is None


def test_nothing_to_plot_says_why() -> None:
    layout = roofline_layout(_report("h100_sxm", [{**_point(2.0, 1e12), "flops": None}]))
    assert layout.empty is not None and "none of the one op or kernel" in layout.empty


def test_unknown_hardware_draws_no_roof_and_says_so() -> None:
    unknown = {"source": "unknown", "notes": "", "peak_flops": {}, "dram_bytes_per_s": None}
    layout = roofline_layout(_report("h100_sxm", [_point(2.0, 1e12)], **unknown))
    assert layout.roofs == () and layout.ridges == ()
    assert layout.roofs_missing == "Roofs not drawn: the hardware is unknown."


def test_the_widget_gets_the_layout_beside_the_report_not_in_it() -> None:
    profile = Profile(synthetic_trace(2_000, streams=2))
    report = profile.report()
    widget = profile.widget()
    sent = json.loads(json.dumps(widget.summary["roofline_layout"]))  # plain JSON-able data
    assert len(sent["points"]) == len(report["roofline"]["points"])
    assert "roofline_layout" not in report
    assert sent == json.loads(
        json.dumps(msgspec.to_builtins(roofline_layout(profile.typed_report())))
    )
