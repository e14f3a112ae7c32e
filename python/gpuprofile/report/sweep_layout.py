"""The log-log chart of a scaling sweep, laid out once for every renderer (the SVG of
``sweep_svg``, later the widget): how each subject's time, FLOPs or peak memory grows with the
swept parameter, as points (the median per swept value) and the fitted power law y = a * x^k,
which is a straight line on log-log axes. Renderers draw this; none computes geometry of its own.

Input is plain data (``Series``), not a report. Output (``SweepPlot``) is pixels of a chart
``width`` x ``height`` (y down), which a renderer scales: the plot box, ticks with their grid
positions and labels, per series its points, its fitted line clipped to the box and its label
right of the box at the line's right end, labels moved apart vertically so none overlaps another.
Text boxes, the overlap test and the spread of labels are ``roof_labels``'s, the log scale and
decades ``roofline_geometry``'s.

Units of y: "time" in ns, "flops" in FLOPs, "peak_bytes" in bytes; any other metric is shown as a
plain number. One chart shows one metric: series of mixed metrics share the y axis all the same,
with plain-number ticks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import msgspec

from gpuprofile.report.roof_labels import (
    ASCENT,
    DESCENT,
    PAD,
    Label,
    Pt,
    label,
    overlap,
    spread,
    text_width,
)
from gpuprofile.report.roofline_geometry import LogScale, decades
from gpuprofile.units import format_bytes, format_flops, format_si, format_time

WIDTH = 640
HEIGHT = 380  # at least: a chart with more labels than fit grows taller
FONT = 10.0
TOP = 14.0
BOTTOM = 50.0  # x ticks, then the x axis title
TICK_GAP = 6.0  # px between a tick label and the plot
LABEL_GAP = 6.0  # px between the plot's right edge and the series labels
MAX_LABEL_CHARS = 34  # longer series labels keep their end ("…layers.3.attn ∝ L^2.0")
MIN_SPAN = 0.6  # decades: a narrower range (one value, constant ys) is widened to this
PAD_SHARE = 0.06  # of the range, added each side so no point sits on the box's edge
METRIC_TITLES = {"time": "time", "flops": "FLOPs", "peak_bytes": "peak memory"}


class Series(msgspec.Struct, frozen=True):
    """One subject's measurements across the sweep.

    Attributes:
        subject: a module path, or "total".
        metric: "time" (ns), "flops" or "peak_bytes".
        xs: the swept values.
        ys: the measurement at each swept value (the median of its repeats).
        exponent, coefficient: the fitted y = coefficient * x^exponent, if any.
        label: the text beside the line; by default the subject and the exponent.
    """

    subject: str
    metric: str
    xs: list[float]
    ys: list[float]
    exponent: float | None = None
    coefficient: float | None = None
    label: str | None = None


class Box(msgspec.Struct, frozen=True):
    """The plot area inside the chart, px."""

    left: float
    top: float
    right: float
    bottom: float


class Tick(msgspec.Struct, frozen=True):
    """A tick: its value, ``at`` its px along the axis (where its grid line runs), its label;
    ``major`` for a power of ten, else a swept value or a 2 or 5 between decades."""

    value: float
    at: float
    label: Label
    major: bool


class SeriesPlot(msgspec.Struct, frozen=True):
    """A series on the chart, in the order given.

    Attributes:
        subject, metric: as in its ``Series``.
        colour: the series' index: a renderer takes it modulo the length of its palette.
        points: (x, y) px of each point that a log axis can show (x and y above 0), in the order
            of ``values``.
        values: the (x, y) data of those points, for tooltips.
        line: the fitted line's two end points, px, clipped to the plot box; None without a fit
            or when the line misses the box.
        label: the text right of the box, at the height of the line's right end (or of the
            last point without a line), moved apart from the other labels; None with no point
            and no line.
        leader: a short line from the line's right end to a label that was moved, else None.
        title: the label's full text (it may be shortened on the chart), for a tooltip.
    """

    subject: str
    metric: str
    colour: int
    points: tuple[Pt, ...]
    values: tuple[Pt, ...]
    line: tuple[Pt, Pt] | None
    label: Label | None
    leader: tuple[Pt, Pt] | None
    title: str


class SweepPlot(msgspec.Struct, frozen=True):
    """The whole chart: its size, the plot box, both log axes and the series.

    Attributes:
        width, height: the chart, px.
        box: the plot area.
        parameter: the swept parameter's name (the x axis title's text).
        metric: the series' metric, or "mixed".
        x_domain, y_domain: the data ranges the box spans (log scales).
        x_ticks, y_ticks: ticks whose labels do not overlap, in increasing value.
        x_title, y_title: the axis titles (y's rotated).
        series: one per input series.
        empty: why nothing can be plotted, or None.
    """

    width: float
    height: float
    box: Box
    parameter: str
    metric: str
    x_domain: tuple[float, float]
    y_domain: tuple[float, float]
    x_ticks: tuple[Tick, ...]
    y_ticks: tuple[Tick, ...]
    x_title: Label
    y_title: Label
    series: tuple[SeriesPlot, ...]
    empty: str | None


def _positive(v: float | None) -> bool:
    return v is not None and math.isfinite(v) and v > 0


def log_domain(values: Sequence[float]) -> tuple[float, float]:
    """[lo, hi] around the positive finite values on a log scale: widened to ``MIN_SPAN``
    decades around their middle when narrower (one value, equal values), then padded by
    ``PAD_SHARE`` of the span each side. (1, 10) without any such value."""
    logs = [math.log10(v) for v in values if _positive(v)]
    if not logs:
        return 1.0, 10.0
    lo, hi = min(logs), max(logs)
    if hi - lo < MIN_SPAN:
        mid = (lo + hi) / 2
        lo, hi = mid - MIN_SPAN / 2, mid + MIN_SPAN / 2
    pad = (hi - lo) * PAD_SHARE
    return 10.0 ** (lo - pad), 10.0 ** (hi + pad)


def _strip_zeros(text: str) -> str:
    """ "1.00 ms" -> "1 ms", "2.50 GB" -> "2.5 GB": tick text without trailing zeros."""
    number, sep, unit = text.partition(" ")
    if "." in number:
        number = number.rstrip("0").rstrip(".")
    return f"{number}{sep}{unit}"


def y_tick_text(value: float, metric: str) -> str:
    """A y tick in the metric's unit, without trailing zeros: "1 ms", "2.5 GB", "10 GFLOP"."""
    fmt: Callable[[float], str] = {
        "time": format_time,
        "flops": format_flops,
        "peak_bytes": format_bytes,
    }.get(metric, format_si)
    return _strip_zeros(fmt(value))


def x_tick_text(value: float) -> str:
    """A swept value: as written below a million ("128", "0.5", "4096"), else with an SI
    prefix ("1 M", "2.5 G")."""
    if value >= 1e6:
        return _strip_zeros(format_si(value))
    return f"{value:g}"


def _is_decade(v: float) -> bool:
    return abs(math.log10(v) - round(math.log10(v))) < 1e-9


def _candidates(lo: float, hi: float, extra: Sequence[float]) -> list[tuple[float, bool]]:
    """Tick values in [lo, hi], most wanted first, each with whether it is a power of ten:
    the decades; but when fewer than 3 decades fall inside, ``extra`` (the swept values) come
    first, their ends first (1000 would crowd out the 1024 that was swept); then 2 and 5 times
    powers of ten, then the other digits, while fewer than 2 ticks are found."""
    majors = [(10.0**e, True) for e in decades(lo, hi)]
    out = list(majors)
    inside = sorted({v for v in extra if _positive(v) and lo <= v <= hi})
    if len(majors) < 3 and inside:
        ends = [inside[0], inside[-1]]
        out = [(v, _is_decade(v)) for v in ends + inside[1:-1]] + majors
    for digits in ((2, 5), (3, 4, 6, 7, 8, 9)):
        if len({v for v, _ in out}) >= 2:
            break
        for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
            out += [(d * 10.0**e, False) for d in digits if lo <= d * 10.0**e <= hi]
    seen: set[float] = set()
    unique = []
    for v, major in out:
        key = float(f"{v:.12g}")
        if key not in seen:
            seen.add(key)
            unique.append((v, major))
    return unique


def _ticks(
    candidates: Sequence[tuple[float, bool]], place: Callable[[float], tuple[float, Label]]
) -> tuple[Tick, ...]:
    """The candidates whose labels cover no label kept before them, in increasing value."""
    kept: list[Tick] = []
    for value, major in candidates:
        at, lb = place(value)
        if not any(overlap(lb.box, t.label.box) for t in kept):
            kept.append(Tick(value, at, lb, major))
    return tuple(sorted(kept, key=lambda t: t.value))


def _clip_line(
    exponent: float,
    coefficient: float,
    xs: tuple[float, float],
    ys: tuple[float, float],
) -> tuple[Pt, Pt] | None:
    """y = coefficient * x^exponent across the x domain, clipped to the y domain, as two points
    in data space (left, right); None when it misses the box. The line is straight in
    log-log space, so the clip is done there."""
    u0, u1 = math.log10(xs[0]), math.log10(xs[1])
    v0, v1 = math.log10(ys[0]), math.log10(ys[1])
    la = math.log10(coefficient)
    if exponent == 0:
        if not v0 <= la <= v1:
            return None
    else:
        ua, ub = sorted(((v0 - la) / exponent, (v1 - la) / exponent))
        u0, u1 = max(u0, ua), min(u1, ub)
        if u0 >= u1:
            return None

    def at(u: float) -> Pt:
        v = min(max(la + exponent * u, v0), v1)  # rounding at the clipped ends
        return 10.0**u, 10.0**v

    return at(u0), at(u1)


def _shorten(text: str) -> str:
    """At most ``MAX_LABEL_CHARS`` characters, keeping the end (a module path's last parts and
    the exponent say the most)."""
    if len(text) <= MAX_LABEL_CHARS:
        return text
    return "…" + text[-(MAX_LABEL_CHARS - 1) :]


def _default_label(s: Series, parameter: str) -> str:
    if s.exponent is None or not math.isfinite(s.exponent):
        return s.subject
    k = f"{s.exponent:.1f}"
    return f"{s.subject} ∝ {parameter}^{'0.0' if k == '-0.0' else k}"


def sweep_layout(parameter: str, series: Sequence[Series]) -> SweepPlot:
    """Lay out the log-log chart of ``series`` against the swept ``parameter``.

    Points with x or y not above 0 (or not finite) cannot sit on log axes and are left out;
    a fit without a finite exponent and a coefficient above 0 draws no line.
    """
    metrics = {s.metric for s in series}
    metric = next(iter(metrics)) if len(metrics) == 1 else "mixed"

    # Data: the points a log axis can show, and each fitted line's values at the ends of its
    # own points' x range (so the y range shows the line wherever there are points).
    points: list[list[Pt]] = []
    fits: list[tuple[float, float] | None] = []
    all_x: list[float] = []
    all_y: list[float] = []
    for s in series:
        pts = [(float(x), float(y)) for x, y in zip(s.xs, s.ys) if _positive(x) and _positive(y)]
        points.append(pts)
        all_x += [x for x in s.xs if _positive(x)]
        all_y += [y for _, y in pts]
        fit = None
        if s.exponent is not None and math.isfinite(s.exponent) and _positive(s.coefficient):
            assert s.coefficient is not None
            fit = (float(s.exponent), float(s.coefficient))
            own = [x for x in s.xs if _positive(x)]
            if own:
                # In log space: a wild fit must not overflow (a float's ** raises).
                logs = [math.log10(fit[1]) + fit[0] * math.log10(x) for x in (min(own), max(own))]
                all_y += [10.0**v for v in logs if abs(v) < 300]
        fits.append(fit)
    x_domain, y_domain = log_domain(all_x), log_domain(all_y)
    empty = None
    if not series:
        empty = "Nothing to plot: no series."
    elif not any(points):
        empty = "Nothing to plot: no value above 0 (a log scale cannot show 0)."

    # Height: the plot grows so that every series label fits beside it, a label's height apart.
    gap = FONT * (ASCENT + DESCENT) + 2 * PAD
    labelled = sum(1 for pts, fit in zip(points, fits) if pts or fit)
    plot_h = max(HEIGHT - TOP - BOTTOM, labelled * gap)
    height = TOP + plot_h + BOTTOM
    top, bottom = TOP, TOP + plot_h
    sy = LogScale(y_domain, bottom, top)

    # y ticks, centred on their grid lines; the left margin fits the widest and the title.
    centre = FONT * (ASCENT - DESCENT) / 2
    title_x = 4 + FONT * ASCENT + PAD
    y_ticks = _ticks(
        _candidates(*y_domain, ()),
        lambda v: (sy(v), label(y_tick_text(v, metric), 0.0, sy(v) + centre, "end")),
    )
    widest = max((text_width(t.label.text, FONT) for t in y_ticks), default=0.0)
    left = title_x + FONT * DESCENT + PAD + 8 + widest + 2 * PAD + TICK_GAP
    y_ticks = tuple(
        Tick(t.value, t.at, label(t.label.text, left - TICK_GAP, t.at + centre, "end"), t.major)
        for t in y_ticks
    )

    # The right margin fits the longest series label.
    texts = [s.label if s.label is not None else _default_label(s, parameter) for s in series]
    shown = [_shorten(t) for t in texts]
    label_w = max((text_width(t, FONT) for t in shown), default=0.0)
    right = WIDTH - max(label_w + LABEL_GAP + 2 * PAD + 4, 16.0)
    box = Box(left, top, right, bottom)
    sx = LogScale(x_domain, left, right)

    x_tick_y = bottom + centre + FONT * DESCENT + 2 * PAD + TICK_GAP + FONT * ASCENT
    x_ticks = _ticks(
        _candidates(*x_domain, all_x),
        lambda v: (sx(v), label(x_tick_text(v), sx(v), x_tick_y, "middle")),
    )
    x_title = label(parameter, (left + right) / 2, height - 8, "middle")
    y_title = label(METRIC_TITLES.get(metric, metric), title_x, (top + bottom) / 2, "middle", -90)

    # Lines, then labels at their right ends, spread apart.
    lines: list[tuple[Pt, Pt] | None] = []
    wanted: list[tuple[int, float, float]] = []  # (series, end's y px, baseline wanted)
    for i, (pts, fit) in enumerate(zip(points, fits)):
        data = _clip_line(*fit, x_domain, y_domain) if fit else None
        line = None
        if data:
            (x0, y0), (x1, y1) = data
            line = ((sx(x0), sy(y0)), (sx(x1), sy(y1)))
        lines.append(line)
        if line:
            end_y = line[1][1]
        elif pts:
            end_y = sy(max(pts)[1])
        else:
            continue
        wanted.append((i, end_y, end_y + centre))
    baselines = spread(
        [w for *_, w in wanted], gap, FONT * ASCENT + PAD, height - BOTTOM - FONT * DESCENT - PAD
    )
    labels: dict[int, tuple[Label | None, tuple[Pt, Pt] | None]] = {}
    for (i, end_y, want), y in zip(wanted, baselines):
        lb = label(shown[i], right + LABEL_GAP, y, "start")
        leader = None
        if abs(y - want) > 2 and lines[i] is not None:
            leader = ((right, end_y), (right + LABEL_GAP - 1, y - centre))
        labels[i] = (lb, leader)

    plotted = []
    for i, s in enumerate(series):
        shown_label, leader = labels.get(i, (None, None))
        plotted.append(
            SeriesPlot(
                subject=s.subject,
                metric=s.metric,
                colour=i,
                points=tuple((sx(x), sy(y)) for x, y in points[i]),
                values=tuple(points[i]),
                line=lines[i],
                label=shown_label,
                leader=leader,
                title=texts[i],
            )
        )
    return SweepPlot(
        width=float(WIDTH),
        height=height,
        box=box,
        parameter=parameter,
        metric=metric,
        x_domain=x_domain,
        y_domain=y_domain,
        x_ticks=x_ticks,
        y_ticks=y_ticks,
        x_title=x_title,
        y_title=y_title,
        series=tuple(plotted),
        empty=empty,
    )
