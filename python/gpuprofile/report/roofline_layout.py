"""The roofline chart, laid out once for every renderer (the widget, the bokeh page, the SVG
snapshot): the roofs of the report's hardware as lines with their ridge points, the axes' ranges
and ticks, which points are plotted and why the others are not, and labels placed where they
cover no other label and no line. Renderers draw this; none computes geometry of its own.
The numbers in data space are ``roofline_geometry``'s; text boxes and their places are
``roof_labels``'s.

Units: data space is x = arithmetic intensity (FLOP/byte), y = FLOP/s; the memory roof is
y = bandwidth * x, a compute roof y = peak, and they meet at the ridge, x = peak / bandwidth.
Pixel positions are those of a ``WIDTH`` x ``HEIGHT`` chart (y down), which a renderer scales.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from gpuprofile.report.roof_labels import (
    ASCENT,
    DESCENT,
    PAD,
    Label,
    Pt,
    along_slope,
    beside_drop,
    inside,
    label,
    overlap,
    spread,
    text_width,
)
from gpuprofile.report.roofline_geometry import (
    ComputeRoof,
    LogScale,
    compute_roofs,
    decade_domain,
    decades,
    flops_tick,
    intensity_tick,
    memory_line,
    number,
    plot_status,
    point_radius,
    roof_line,
)
from gpuprofile.report.schema import HardwareRoofs, Report, RooflinePoint
from gpuprofile.report.text import ABOVE_DRAM
from gpuprofile.units import (
    format_bytes_per_s,
    format_count,
    format_flops_per_s,
    format_intensity,
    format_time,
)

WIDTH = 640
HEIGHT = 380
FONT = 10.0
RIDGE_FONT = 9.0
TOP = 14.0
BOTTOM = 50.0  # x ticks, then the x axis title
TICK_GAP = 6.0  # px between a tick label and the plot
ROOF_SOURCE_WORDS = {
    "datasheet": "datasheet",
    "calibrated": "measured",
    "estimated": "estimated",
    "user": "given by you",
    "trace": "device properties in the trace",
    "unknown": "unknown",
}


@dataclass(frozen=True)
class Plot:
    """The plot area inside the chart, px."""

    left: float
    top: float
    right: float
    bottom: float


@dataclass(frozen=True)
class Roof:
    """A roof: ``key`` is "dram" for the memory roof drawn alone, else the precisions sharing a
    compute peak ("fp16/bf16"). ``line`` in data space and ``path`` in px are clipped to the
    plot: up the memory slope to the ridge, then flat; [] when it lies outside."""

    key: str
    peak: float | None
    ridge: float | None
    line: tuple[Pt, ...]
    path: tuple[Pt, ...]
    title: str
    label: Label | None


@dataclass(frozen=True)
class Ridge:
    """Where a compute roof meets the memory roof, with a drop line to the x axis. ``label`` is
    None where it would cover a line or a label: ``title`` (the tooltip) still says it."""

    roof: str
    intensity: float
    peak: float
    at: Pt
    drop: tuple[Pt, Pt]
    title: str
    label: Label | None


@dataclass(frozen=True)
class Tick:
    value: float
    at: float  # px along its axis: where its grid line runs
    label: Label


@dataclass(frozen=True)
class Axis:
    domain: tuple[float, float]
    ticks: tuple[Tick, ...]
    title: Label


@dataclass(frozen=True)
class PointPlace:
    """A report point on the chart, at the same index as in ``Report.roofline.points``:
    ``x``, ``y`` (px) and ``r`` when plotted, else why not; ``note`` a sentence the point's
    details add (above the DRAM roof)."""

    plotted: bool
    reason: str
    x: float | None
    y: float | None
    r: float
    bound: str
    level: str
    note: str | None


@dataclass(frozen=True)
class RooflineLayout:
    width: float
    height: float
    plot: Plot
    x: Axis
    y: Axis
    roofs: tuple[Roof, ...]
    memory_label: Label | None  # along the memory slope
    memory_line: tuple[Pt, ...]  # the memory slope in data space, as the roofs draw it; () if none
    ridges: tuple[Ridge, ...]
    points: tuple[PointPlace, ...]
    levels: tuple[str, ...]  # levels of the plotted points, "op" first: one is drawn at a time
    empty: str | None  # why no point can be plotted (then no chart is drawn)
    roofs_missing: str | None  # which roofs could not be drawn, and why
    roofs_text: str  # every roof in one line, with its source
    unplotted: str | None  # the points left off the chart, in one line


def _segments(path: Sequence[Pt]) -> list[tuple[Pt, Pt]]:
    return list(itertools.pairwise(path))


def empty_reason(points: Sequence[RooflinePoint], reasons: Sequence[str],
                 missing_flops: str | None) -> str | None:  # fmt: skip
    """Why no point can go on the chart, in one line, or None when some point can."""
    if any(not r for r in reasons):
        return None
    why = f"({missing_flops or 'FLOPs need recorded input shapes and an op with a known formula'})"
    if not points:
        return f"Nothing to plot: no op or kernel has a FLOP count {why}."
    n = (
        "the one op or kernel"
        if len(points) == 1
        else f"the {format_count(len(points))} ops and kernels"
    ) + " in the report"
    if not any((number(p.flops) or 0) > 0 for p in points):
        return f"Nothing to plot: none of {n} has a FLOP count {why}."
    return (
        f"Nothing to plot: of {n}, those with a FLOP count have no byte count or no measured time."
    )


def _roofs_text(hardware: HardwareRoofs, bandwidth: float | None,
                compute: Sequence[ComputeRoof]) -> str:  # fmt: skip
    if bandwidth is None and not compute:
        return ""
    source = hardware.source
    words = ROOF_SOURCE_WORDS.get(source, source)
    parts = [f"DRAM {format_bytes_per_s(bandwidth)}"] if bandwidth else []
    for c in compute:
        ridge = f", ridge at {format_intensity(c.ridge)}" if c.ridge is not None else ""
        parts.append(f"{c.key} {format_flops_per_s(c.peak)}{ridge}")
    name = f"{hardware.name or 'this GPU'}{f' ({words})' if words else ''}"
    return f"Roofs of {name}: {' · '.join(parts)}"


def roofline_layout(report: Report) -> RooflineLayout:
    """The roofline chart of a ``gpuprofile.report/1`` report (its roofline and hardware)."""
    roofline = report.roofline
    points = roofline.points
    hardware = report.hardware
    bandwidth, compute, missing = compute_roofs(hardware)
    reasons = [plot_status(p) for p in points]

    # plot_status passed: both are finite numbers above 0.
    xs_data = [float(p.intensity or 0) for p, r in zip(points, reasons, strict=True) if not r]
    ys_data = [
        float(p.achieved_flops_per_s or 0) for p, r in zip(points, reasons, strict=True) if not r
    ]
    ys_data += [c.peak for c in compute]
    xs_data += [c.ridge for c in compute if c.ridge is not None]
    x_domain, y_domain = decade_domain(xs_data), decade_domain(ys_data)

    # Margins from what they hold: the left one fits the widest y tick and the rotated axis
    # title beside it, the right one the compute roofs' labels (outside the plot, where no line
    # runs).
    y_ticks_text = [(e, flops_tick(e)) for e in decades(*y_domain)]
    title_x = 4 + FONT * ASCENT + PAD
    widest_tick = max((text_width(t, FONT) for _, t in y_ticks_text), default=0.0)
    left = title_x + FONT * DESCENT + PAD + 8 + widest_tick + 2 * PAD + TICK_GAP
    roof_texts = [f"{c.key} {format_flops_per_s(c.peak)}" for c in compute]
    right_margin = max((text_width(t, FONT) for t in roof_texts), default=0.0) + 2 * PAD + 12
    plot = Plot(left, TOP, WIDTH - max(right_margin, 16), HEIGHT - BOTTOM)
    sx = LogScale(x_domain, plot.left, plot.right)
    sy = LogScale(y_domain, plot.bottom, plot.top)

    def px(line: Sequence[Pt]) -> tuple[Pt, ...]:
        return tuple((sx(a), sy(b)) for a, b in line)

    # y ticks centred on their grid lines; x ticks low enough that the corner's two clear.
    centre = FONT * (ASCENT - DESCENT) / 2
    x_tick_y = plot.bottom + centre + FONT * DESCENT + 2 * PAD + TICK_GAP + FONT * ASCENT
    x_axis = Axis(
        x_domain,
        tuple(
            Tick(10.0**e, sx(10.0**e), label(intensity_tick(e), sx(10.0**e), x_tick_y, "middle"))
            for e in decades(*x_domain)
        ),
        label(
            "arithmetic intensity (FLOP/byte)", (plot.left + plot.right) / 2, HEIGHT - 8, "middle"
        ),
    )
    y_axis = Axis(
        y_domain,
        tuple(
            Tick(10.0**e, sy(10.0**e), label(t, plot.left - TICK_GAP, sy(10.0**e) + centre, "end"))
            for e, t in y_ticks_text
        ),
        label("FLOP/s", title_x, (plot.top + plot.bottom) / 2, "middle", -90),
    )

    # Lines first: every label is then kept off all of them.
    paths: list[tuple[str, float | None, float | None, list[Pt]]] = []
    if bandwidth and not compute:
        paths.append(("dram", None, None, memory_line(bandwidth, x_domain, y_domain)))
    for c in compute:
        paths.append((c.key, c.peak, c.ridge, roof_line(c.peak, bandwidth, x_domain, y_domain)))
    ridge_marks = [
        (c, (sx(c.ridge), sy(c.peak)))
        for c in compute
        if c.ridge is not None
        and x_domain[0] <= c.ridge <= x_domain[1]
        and y_domain[0] <= c.peak <= y_domain[1]
    ]
    drops = [(at, (at[0], plot.bottom)) for _, at in ridge_marks]
    lines = [seg for *_, line in paths for seg in _segments(px(line))] + drops
    # Labels are kept off the axes' own labels too.
    placed: list[tuple[Pt, ...]] = [t.label.box for axis in (x_axis, y_axis) for t in axis.ticks]
    placed += [x_axis.title.box, y_axis.title.box]

    def clear(box: tuple[Pt, ...], area: Plot = plot) -> bool:
        return (
            inside(box, area.left, area.top, area.right, area.bottom)
            and not any(overlap(box, other) for other in placed)
            and not any(overlap(box, seg) for seg in lines)
        )

    # Compute roofs: right of the plot, centred on their lines' heights, spread apart.
    drawn = [
        (c, text)
        for c, text in zip(compute, roof_texts, strict=True)
        if y_domain[0] <= c.peak <= y_domain[1]
    ]
    gap = FONT * (ASCENT + DESCENT) + 2 * PAD
    baselines = spread(
        [sy(c.peak) + FONT * (ASCENT - DESCENT) / 2 for c, _ in drawn],
        gap,
        FONT * ASCENT + PAD,
        plot.bottom - FONT * DESCENT - PAD,
    )
    roof_labels: dict[str, Label] = {}
    for (c, text), y in zip(drawn, baselines, strict=True):
        roof_labels[c.key] = label(text, plot.right + 6, y)
        placed.append(roof_labels[c.key].box)

    # The memory roof: along its slope (that of the highest compute roof, or its own when
    # drawn alone), at the first clear place.
    slope_line = next((tuple(line[:2]) for *_, line in reversed(paths) if len(line) >= 2), ())
    if not bandwidth or len(slope_line) < 2 or slope_line[1][1] == slope_line[0][1]:
        slope_line = ()  # no bandwidth, or the highest roof is flat across the plot
    memory_label = None
    if bandwidth and slope_line:
        text = f"DRAM {format_bytes_per_s(bandwidth)}"
        memory_label = along_slope(text, px(slope_line), clear, FONT)
        if memory_label:
            placed.append(memory_label.box)

    # Ridges: each labelled where it covers nothing, else only in its tooltip.
    ridges = []
    for c, at in ridge_marks:
        assert c.ridge is not None
        found = beside_drop(
            f"ridge {format_intensity(c.ridge)}", at, plot.bottom, clear, RIDGE_FONT
        )
        if found:
            placed.append(found.box)
        title = f"{c.key} ridge: {format_intensity(c.ridge)}"
        ridges.append(Ridge(c.key, c.ridge, c.peak, at, (at, (at[0], plot.bottom)), title, found))

    roofs = tuple(
        Roof(
            key,
            peak,
            ridge,
            tuple(line),
            px(line),
            f"{key}: {format_flops_per_s(peak)}"
            if peak
            else f"DRAM {format_bytes_per_s(bandwidth)}",
            roof_labels.get(key),
        )
        for key, peak, ridge, line in paths
    )

    places = _places(points, reasons, sx, sy)
    order = {"op": 0, "kernel": 1}
    levels = tuple(
        sorted({pl.level for pl in places if pl.plotted}, key=lambda lv: (order.get(lv, 2), lv))
    )
    return RooflineLayout(
        width=WIDTH,
        height=HEIGHT,
        plot=plot,
        x=x_axis,
        y=y_axis,
        roofs=roofs,
        memory_label=memory_label,
        memory_line=slope_line,
        ridges=tuple(ridges),
        points=tuple(places),
        levels=levels,
        empty=empty_reason(points, reasons, roofline.missing_flops),
        roofs_missing=_roofs_missing(hardware, bandwidth, compute, missing),
        roofs_text=_roofs_text(hardware, bandwidth, compute),
        unplotted=_unplotted(points, reasons),
    )


def _places(
    points: Sequence[RooflinePoint], reasons: Sequence[str], sx: LogScale, sy: LogScale
) -> tuple[PointPlace, ...]:
    max_time = max([0.0] + [number(p.time_ns) or 0.0 for p in points])
    places = []
    for p, reason in zip(points, reasons, strict=True):
        pct = number(p.pct_of_roof)
        bound = p.bound
        above_dram = pct is not None and pct > 100 and p.roof == "dram"
        places.append(
            PointPlace(
                plotted=not reason,
                reason=reason,
                x=None if reason else sx(float(p.intensity or 0)),
                y=None if reason else sy(float(p.achieved_flops_per_s or 0)),
                r=point_radius(p.time_ns, max_time),
                bound=bound if bound in ("memory", "compute") else "unknown",
                level=p.level,
                note=ABOVE_DRAM if above_dram else None,
            )
        )
    return tuple(places)


def _roofs_missing(
    hardware: HardwareRoofs,
    bandwidth: float | None,
    compute: Sequence[ComputeRoof],
    missing: Sequence[str],
) -> str | None:
    if not missing:
        return None
    state = "partly drawn" if bandwidth or compute else "not drawn"
    notes = [hardware.notes] if hardware.notes else []
    return " ".join([f"Roofs {state}: {', '.join(missing)}.", *notes])


def _unplotted(points: Sequence[RooflinePoint], reasons: Sequence[str]) -> str | None:
    left_off = [i for i, r in enumerate(reasons) if r]
    if not left_off:
        return None
    time = sum(number(points[i].time_ns) or 0 for i in left_off)
    return (
        f"{len(left_off)} points not plotted ({format_time(time)}): FLOPs or bytes unknown or zero"
    )
