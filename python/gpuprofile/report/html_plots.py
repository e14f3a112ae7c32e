"""The bokeh figures of the standalone report: the kernel timeline by stream and the roofline.

Imported only by ``report.html.render_html``, which is called only when a page is written, so
``import gpuprofile`` never loads bokeh. Names go into ColumnDataSources and reach the page as
text: bokeh tooltips escape field values (only a ``{safe}`` format would not).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gpuprofile.report.lanes import (
    LaneKey,
    gpu_group,
    is_single,
    lane_order,
    lane_title,
    stream_label,
)
from gpuprofile.report.roofline_layout import roofline_layout
from gpuprofile.report.schema import Report
from gpuprofile.units import (
    format_count,
    format_flops_per_s,
    format_intensity,
    format_percent,
    format_time,
)

if TYPE_CHECKING:
    from bokeh.plotting import figure as Figure

    from gpuprofile.trace.model import Trace

# Past this many kernels the page grows beyond ~10 MB and the browser stalls on hover; the
# heaviest are the ones a reader looks for.
MAX_TIMELINE_KERNELS = 50_000
PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
)  # fmt: skip


def timeline_figure(trace: Trace, limit: int = MAX_TIMELINE_KERNELS) -> tuple[Figure | None, str]:
    """Kernels as bars on one lane per (rank, device, stream), in ms from the trace's start,
    with zoom, pan and hover (name, start, duration).

    Parameters:
        trace: the Trace whose kernels table is drawn.
        limit: at most this many kernels, the longest; the note says when some were left out.
    Returns the figure (None without kernels) and a one-line note of what it shows."""
    from bokeh.models import ColumnDataSource, FactorRange, HoverTool
    from bokeh.plotting import figure

    kernels = trace.kernels
    total = len(kernels)
    if total == 0:
        return None, "The trace has no kernels."
    if total > limit:
        kernels = kernels.nlargest(limit, "dur_ns", keep="first")
        note = (
            f"The {format_count(limit)} longest of {format_count(total, 'kernel')} "
            "(the rest are left out to keep the page responsive)."
        )
    else:
        note = f"{format_count(total, 'kernel')}; drag to pan, wheel to zoom, hover for details."
    keys = [
        LaneKey(rank, "gpu", (device, stream))
        for rank, device, stream in zip(
            kernels["rank"].tolist(), kernels["device"].tolist(), kernels["stream"].tolist(),
            strict=True,
        )
    ]  # fmt: skip
    single = is_single(trace.ranks)

    def title(key: LaneKey) -> str:
        device, stream = key.ids
        return lane_title(key.rank, gpu_group(device), stream_label(stream), single)

    titles = {key: title(key) for key in lane_order(keys)}
    lanes = [titles[key] for key in keys]
    factors = list(titles.values())
    start = kernels["start_ns"].to_numpy(dtype=np.int64)
    dur = kernels["dur_ns"].to_numpy(dtype=np.int64)
    names = kernels["name"].astype(str).to_numpy()
    codes = kernels["name"].cat.codes.to_numpy() if hasattr(kernels["name"], "cat") else None
    colors = [
        PALETTE[int(c) % len(PALETTE)] for c in (codes if codes is not None else range(len(names)))
    ]
    source = ColumnDataSource(
        {
            "lane": lanes,
            "left": start / 1e6,
            "right": (start + np.maximum(dur, 1)) / 1e6,
            "name": names.tolist(),
            "start": [format_time(int(x)) for x in start],
            "dur": [format_time(int(x)) for x in dur],
            "color": colors,
        }
    )
    fig = figure(
        y_range=FactorRange(factors=list(reversed(factors))),
        height=min(120 + 28 * len(factors), 700),
        sizing_mode="stretch_width",
        x_axis_label="time from trace start (ms)",
        tools="xpan,xwheel_zoom,box_zoom,reset,save",
        active_scroll="xwheel_zoom",
        title="Kernels by stream",
    )
    fig.hbar(
        y="lane", left="left", right="right", height=0.8, source=source,
        fill_color="color", line_color=None,
    )  # fmt: skip
    fig.add_tools(
        HoverTool(tooltips=[("kernel", "@name"), ("start", "@start"), ("duration", "@dur")])
    )
    return fig, note


def roofline_figure(report: Report) -> Figure | None:
    """The report's roofline as ``roofline_layout`` lays it out for every renderer, on log-log
    axes (FLOP/byte against FLOP/s) with zoom and hover: its axis ranges, its roofs (named in
    the legend, where bokeh keeps labels apart), their ridges, and the plotted points of its
    first level (ops, else kernels).

    Parameters:
        report: a ``gpuprofile.report/1`` Report.
    Returns the figure, or None when no point can be plotted."""
    from bokeh.models import ColumnDataSource, HoverTool, Range1d
    from bokeh.plotting import figure

    layout = roofline_layout(report)
    all_points = report.roofline.points
    level = layout.levels[0] if layout.levels else None
    drawn = [i for i, place in enumerate(layout.points) if place.plotted and place.level == level]
    if not drawn:
        return None
    points = [all_points[i] for i in drawn]
    fig = figure(
        x_axis_type="log",
        y_axis_type="log",
        x_range=Range1d(start=layout.x.domain[0], end=layout.x.domain[1]),
        y_range=Range1d(start=layout.y.domain[0], end=layout.y.domain[1]),
        height=450,
        sizing_mode="stretch_width",
        x_axis_label=layout.x.title.text,
        y_axis_label=layout.y.title.text,
        title="Roofline",
        tools="pan,wheel_zoom,box_zoom,reset,save",
    )
    for i, roof in enumerate(layout.roofs):
        if not roof.line:
            continue
        xs, ys = zip(*roof.line, strict=True)
        fig.line(list(xs), list(ys), line_width=2, color=PALETTE[i % len(PALETTE)],
                 legend_label=roof.label.text if roof.label else roof.title)  # fmt: skip
    if layout.memory_line:
        # Drawn again under the compute roofs that climb it, for the legend to name it.
        xs, ys = zip(*layout.memory_line, strict=True)
        name = layout.memory_label.text if layout.memory_label else "DRAM"
        fig.line(list(xs), list(ys), line_width=2, color="#555555", line_dash="dashed",
                 legend_label=name)  # fmt: skip
    if layout.ridges:
        fig.scatter(
            [r.intensity for r in layout.ridges], [r.peak for r in layout.ridges],
            size=6, color="#555555",
        )  # fmt: skip
    source = ColumnDataSource(
        {
            "x": [float(p.intensity or 0) for p in points],
            "y": [float(p.achieved_flops_per_s or 0) for p in points],
            # The layout's radius (px) as a diameter.
            "size": [2 * layout.points[i].r for i in drawn],
            "name": [p.name for p in points],
            "shapes": [p.shapes for p in points],
            "intensity": [format_intensity(p.intensity) for p in points],
            "rate": [format_flops_per_s(p.achieved_flops_per_s) for p in points],
            "pct": [format_percent(p.pct_of_roof) for p in points],
            "time": [format_time(p.time_ns) for p in points],
        }
    )
    dots = fig.scatter("x", "y", size="size", source=source, alpha=0.7, color="#d62728")
    fig.add_tools(
        HoverTool(
            renderers=[dots],
            tooltips=[
                ("name", "@name"),
                ("shapes", "@shapes"),
                ("time", "@time"),
                ("intensity", "@intensity"),
                ("achieved", "@rate"),
                ("of roof", "@pct"),
            ],
        )
    )
    if fig.legend:
        fig.legend.location = "bottom_right"
    return fig
