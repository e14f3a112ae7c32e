"""The memory view, laid out once for every renderer (the widget, the bokeh page, the SVG
snapshot): one rank's memory in use over time as stacked areas by category, bytes up and time
across, the peak marked, and where an out-of-memory failure ended the trace. Renderers draw
this; none computes geometry.

Which rank: the one whose memory peaked highest (a job's ranks usually look alike; the text and
the report hold every rank). Units: px of a ``WIDTH`` x ``HEIGHT`` chart (y down).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuprofile.report.memory_text import device_text
from gpuprofile.report.roof_labels import Label, label
from gpuprofile.report.schema import RankReport, Report
from gpuprofile.units import format_bytes, format_time

WIDTH = 640
HEIGHT = 220
LEFT, RIGHT, TOP, BOTTOM = 64.0, 150.0, 14.0, 30.0  # margins: y ticks, legend, x ticks
FONT = 10.0
LEGEND_ROW = 15.0
# One colour per category, in the analyses' order (parameters ... other); renderers index it.
COLOURS = ("#1f77b4", "#ff7f0e", "#9467bd", "#2ca02c", "#bcbd22", "#7f7f7f")


@dataclass(frozen=True)
class Area:
    """A category's band: its polygon (the top edge left to right, then the bottom back)."""

    category: str
    colour: int
    points: tuple[tuple[float, float], ...]
    legend: Label  # "activations 3.4 MB" (at the peak)
    swatch: tuple[float, float]  # the legend swatch's top-left


@dataclass(frozen=True)
class Marker:
    """A vertical line at a moment: the peak, or the failure."""

    x: float
    top: float
    label: Label
    kind: str  # peak | failure


@dataclass(frozen=True)
class MemoryTick:
    at: float  # px along its axis
    label: Label


@dataclass(frozen=True)
class MemoryLayout:
    rank: int
    title: str  # "Memory in use, rank 0 (GPU 0, PyTorch's allocator)"
    width: float
    height: float
    plot: tuple[float, float, float, float]  # left, top, right, bottom
    areas: tuple[Area, ...]  # drawn in order; categories never in use are left out
    x_ticks: tuple[MemoryTick, ...]
    y_ticks: tuple[MemoryTick, ...]
    markers: tuple[Marker, ...]


def memory_layout(report: Report) -> MemoryLayout | None:
    """The view of the rank whose memory peaked highest; None when no rank has a memory view."""
    ranks = [r for r in report.ranks if r.memory is not None and r.memory.times_ns]
    if not ranks:
        return None
    rank = max(ranks, key=lambda r: r.memory.peak.total_bytes if r.memory else 0)
    return _layout(rank)


def _layout(rank: RankReport) -> MemoryLayout:
    memory = rank.memory
    assert memory is not None
    left, top, right, bottom = LEFT, TOP, WIDTH - RIGHT, HEIGHT - BOTTOM
    times = memory.times_ns
    t0, t1 = times[0], times[-1]
    span = max(t1 - t0, 1)
    ceiling = max(_nice(max(memory.peak.total_bytes, 1)), 1)

    def sx(t: int) -> float:
        return left + (t - t0) / span * (right - left)

    def sy(b: float) -> float:
        return bottom - b / ceiling * (bottom - top)

    xs = [sx(t) for t in times]
    below = [0] * len(times)
    areas = []
    used = [c for c in memory.categories if any(memory.by_category.get(c, []))]
    for row, category in enumerate(used):
        series = memory.by_category[category]
        upper = [b + v for b, v in zip(below, series, strict=True)]
        # Steps, not slopes: memory in use changes at each event and holds until the next.
        edge = _steps(xs, [sy(u) for u in upper])
        back = _steps(xs, [sy(b) for b in below])[::-1]
        y = top + FONT + row * LEGEND_ROW
        at_peak = memory.peak.by_category.get(category, 0)
        areas.append(
            Area(
                category=category,
                colour=memory.categories.index(category) % len(COLOURS),
                points=tuple((round(a, 1), round(b, 1)) for a, b in [*edge, *back]),
                legend=label(f"{category} {format_bytes(at_peak)}", right + 22, y, font=FONT),
                swatch=(right + 8, y - 9),
            )
        )
        below = upper
    markers = [
        Marker(
            sx(memory.peak.time_ns), sy(memory.peak.total_bytes),
            label(f"peak {format_bytes(memory.peak.total_bytes)}", sx(memory.peak.time_ns),
                  top - 2, "middle", font=FONT),
            "peak",
        )
    ]  # fmt: skip
    if memory.failure is not None:
        x = sx(memory.end.time_ns)
        markers.append(
            Marker(x, top, label("out of memory", x - 4, bottom - 6, "end", font=FONT), "failure")
        )
    y_ticks = tuple(
        MemoryTick(sy(v), label(format_bytes(v), left - 6, sy(v) + 3.5, "end", font=FONT))
        for v in (0, ceiling / 2, ceiling)
    )
    x_ticks = tuple(
        MemoryTick(sx(t), label(format_time(t), sx(t), bottom + 14, "middle", font=FONT))
        for t in (t0, t0 + span // 2, t1)
    )
    where = device_text(memory.device)
    return MemoryLayout(
        rank=rank.rank,
        title=f"Memory in use, rank {rank.rank} ({where}), by category",
        width=WIDTH,
        height=HEIGHT,
        plot=(left, top, right, bottom),
        areas=tuple(areas),
        x_ticks=x_ticks,
        y_ticks=y_ticks,
        markers=tuple(markers),
    )


def _steps(xs: list[float], ys: list[float]) -> list[tuple[float, float]]:
    """A step line through the points: each value held until the next point's x."""
    out = [(xs[0], ys[0])]
    for i in range(1, len(xs)):
        out += [(xs[i], ys[i - 1]), (xs[i], ys[i])]
    return out


def _nice(value: float) -> float:
    """The smallest of 1, 1.5, 2, 3, 4, 5, 6, 8 times a power of ten at or above ``value``."""
    power = 10.0 ** math.floor(math.log10(value))
    return float(next(m * power for m in (1, 1.5, 2, 3, 4, 5, 6, 8, 10) if m * power >= value))
