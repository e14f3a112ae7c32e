"""The two pictures of a notebook snapshot as inline SVG: the timeline by lane and the roofline.

Both are bounded whatever the trace's size: the timeline draws, per lane, how busy each pixel
column is (events merged per pixel, as the widget's level of detail does), never one box per
event; the roofline draws at most ``MAX_POINTS`` points. Every string that reaches the markup
(lane labels, point names in <title> tooltips) passes through ``esc``.
"""

from __future__ import annotations

import base64
import struct
import zlib
from typing import TYPE_CHECKING, cast

import numpy as np

from gpuprofile.report.html import esc
from gpuprofile.report.lanes import (
    CPU_GROUP,
    LaneKey,
    gpu_group,
    is_single,
    lane_order,
    lane_title,
    stream_label,
    thread_label,
)
from gpuprofile.report.roof_labels import Label
from gpuprofile.report.roofline_layout import roofline_layout
from gpuprofile.report.schema import Report
from gpuprofile.units import format_flops_per_s, format_intensity, format_time

if TYPE_CHECKING:
    import pandas as pd

    from gpuprofile.trace.model import Trace

WIDTH = 720  # pixel columns of the timeline's plot area
LABEL_W = 170
LANE_H = 16
MAX_LANES = 16
MAX_POINTS = 150
# Busy share of a pixel column, drawn as this many shades: runs of equal shade merge into one box.
LEVELS = 4
_COLOR = "#1f77b4"
_CPU_COLOR = "#7f7f7f"
_ROOF_COLORS = ("#2ca02c", "#ff7f0e", "#9467bd", "#8c564b")
_TEXT = 'font-family="system-ui,sans-serif" font-size="11" fill="#333"'


def _busy_per_pixel(start: np.ndarray, end: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The share of each pixel column [edges[k], edges[k+1]) that some event covers (events
    that overlap add up, clipped at 1). Busy time up to t is the sum over events that started
    before t of (t - start), less the same for the events that ended before t: two sorted
    arrays and their prefix sums, so a million events cost a sort."""
    s = np.sort(start.astype(np.float64))
    e = np.sort(end.astype(np.float64))
    s_sum = np.concatenate(([0.0], np.cumsum(s)))
    e_sum = np.concatenate(([0.0], np.cumsum(e)))
    t = edges.astype(np.float64)
    n_s = np.searchsorted(s, t, side="right")
    n_e = np.searchsorted(e, t, side="right")
    busy = (n_s * t - s_sum[n_s]) - (n_e * t - e_sum[n_e])
    width = np.diff(t)
    return np.clip(np.diff(busy) / np.where(width > 0, width, 1), 0.0, 1.0)


def _lanes(trace: Trace) -> tuple[list[tuple[str, str, pd.DataFrame]], int]:
    """(label, color, events) per lane, in ``lane_order``: the busiest ``MAX_LANES``, GPU
    streams before CPU threads. Also returns how many lanes there were in all."""
    # Per lane: how busy it is (what picks the lanes drawn), its label, color and events.
    lanes: dict[LaneKey, tuple[int, str, str, pd.DataFrame]] = {}
    single = is_single(trace.ranks)
    kernels = trace.kernels
    if len(kernels):
        for key, group in kernels.groupby(["rank", "device", "stream"], observed=True, sort=True):
            rank, device, stream = (int(k) for k in cast(tuple[int, int, int], key))
            label = lane_title(rank, gpu_group(device), stream_label(stream), single)
            busy = int(group["dur_ns"].sum())
            lanes[LaneKey(rank, "gpu", (device, stream))] = (busy, label, _COLOR, group)
    ops = trace.ops
    if len(ops):
        for key, group in ops.groupby(["rank", "pid", "tid"], observed=True, sort=True):
            rank, pid, tid = (int(k) for k in cast(tuple[int, int, int], key))
            facts = trace.meta.ranks.get(rank)
            name = facts.thread_names.get(f"{pid}/{tid}") if facts is not None else None
            label = lane_title(rank, CPU_GROUP, thread_label(tid, name), single)
            # Nested ops overlap; the top ones say how busy the thread was.
            busy = int(group["dur_ns"].max())
            lanes[LaneKey(rank, "cpu", (pid, tid))] = (busy, label, _CPU_COLOR, group)
    # The busiest GPU streams first, then the busiest threads, up to MAX_LANES.
    busiest = sorted(lanes, key=lambda k: (k.kind != "gpu", -lanes[k][0]))[:MAX_LANES]
    return [lanes[key][1:] for key in lane_order(busiest)], len(lanes)


def timeline_svg(trace: Trace | None) -> tuple[str, str]:
    """The trace's kernels by stream (and CPU threads' ops) over time, as one SVG: lane labels
    and time ticks as text, the lanes as one embedded PNG of one pixel per column (runs of equal
    shade compress to almost nothing, so its size depends on the width, not on the events).

    Parameters:
        trace: the Trace; None: no picture.
    Returns (an <img> of the SVG, or "", and a one-line note of what it shows)."""
    if trace is None:
        return "", "No trace kept with this profile: no timeline picture."
    lanes, total = _lanes(trace)
    if not lanes:
        return "", "The trace has no kernels and no CPU ops: no timeline picture."
    starts = [int(events["start_ns"].min()) for _, _, events in lanes]
    ends = [int((events["start_ns"] + events["dur_ns"]).max()) for _, _, events in lanes]
    t0, t1 = min(starts), max(max(ends), min(starts) + 1)
    edges = np.linspace(t0, t1, WIDTH + 1)
    pixels = np.zeros((LANE_H * len(lanes), WIDTH), dtype=np.uint8)
    parts = []
    for row, (label, color, events) in enumerate(lanes):
        y = row * LANE_H
        start = events["start_ns"].to_numpy(dtype=np.int64)
        end = start + np.maximum(events["dur_ns"].to_numpy(dtype=np.int64), 0)
        level = np.ceil(_busy_per_pixel(start, end, edges) * LEVELS).astype(np.uint8)
        # Palette: 0 white, 1..LEVELS the GPU shades, then the CPU shades.
        offset = 0 if color == _COLOR else LEVELS
        pixels[y + 2 : y + LANE_H - 2] = np.where(level > 0, level + offset, 0)
        parts.append(f'<text x="{LABEL_W - 6}" y="{y + 12}" text-anchor="end" {_TEXT}>')
        parts.append(f"{esc(label)}</text>")
    palette = [(255, 255, 255)]
    for color in (_COLOR, _CPU_COLOR):
        palette += [_blend(color, k / LEVELS) for k in range(1, LEVELS + 1)]
    image = base64.b64encode(_png(pixels, palette)).decode("ascii")
    parts.append(
        f'<image x="{LABEL_W}" y="0" width="{WIDTH}" height="{pixels.shape[0]}" '
        f'href="data:image/png;base64,{image}"/>'
    )
    axis_y = LANE_H * len(lanes) + 14
    for k in range(5):
        x = LABEL_W + WIDTH * k / 4
        anchor = "start" if k == 0 else "end" if k == 4 else "middle"
        tick = esc(format_time((t1 - t0) * k / 4))
        parts.append(f'<text x="{x:.0f}" y="{axis_y}" text-anchor="{anchor}" {_TEXT}>{tick}</text>')
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{LABEL_W + WIDTH + 10}" '
        f'height="{axis_y + 8}">{"".join(parts)}</svg>'
    )
    note = (
        f"{len(lanes)} of {total} lanes over {format_time(t1 - t0)}; "
        "each pixel column shaded by how busy it was."
    )
    return as_img(svg, "gp-snapshot-timeline", "timeline"), note


def _blend(color: str, share: float) -> tuple[int, int, int]:
    """``color`` (#rrggbb) at ``share`` opacity over white."""
    r, g, b = (round(255 - (255 - int(color[i : i + 2], 16)) * share) for i in (1, 3, 5))
    return r, g, b


def _png(pixels: np.ndarray, palette: list[tuple[int, int, int]]) -> bytes:
    """A palette PNG of ``pixels`` (rows of palette indices). Each row is filtered "Up" (the
    difference from the row above), so a lane's repeated rows compress to zeros."""
    height, width = pixels.shape
    rows = pixels.astype(np.int16)
    up = np.diff(np.vstack([np.zeros((1, width), np.int16), rows]), axis=0) % 256
    raw = np.hstack([np.full((height, 1), 2, np.int16), up]).astype(np.uint8).tobytes()

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 3, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"PLTE", bytes(c for rgb in palette for c in rgb))
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )


def as_img(svg: str, css_class: str, alt: str) -> str:
    """The SVG as an <img> with a data URI: HTML sanitizers (an untrusted notebook in
    JupyterLab) drop inline <svg> but keep data-URI images, and an SVG shown as an image runs
    nothing."""
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    return (
        f'<img class="{css_class}" alt="{esc(alt)}" style="max-width:100%;height:auto" '
        f'src="data:image/svg+xml;base64,{data}">'
    )


def roofline_svg(report: Report) -> tuple[str, str]:
    """The report's roofline as ``roofline_layout`` lays it out for every renderer: axes, roofs,
    ridges and their labels, and the heaviest ``MAX_POINTS`` plotted points of the first level
    (ops, else kernels: an op and its kernels would sit on top of each other), each with its
    name, intensity and rate as a tooltip.

    Parameters:
        report: a ``gpuprofile.report/1`` Report.
    Returns (svg markup or "", a one-line note)."""
    layout = roofline_layout(report)
    points = report.roofline.points
    level = layout.levels[0] if layout.levels else None
    drawn = [i for i, place in enumerate(layout.points) if place.plotted and place.level == level]
    if not drawn:
        return "", "No roofline points (no op or kernel with known FLOPs and bytes)."
    total = len(drawn)
    drawn = sorted(drawn, key=lambda i: -points[i].time_ns)[:MAX_POINTS]
    plot = layout.plot
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{layout.width}" height="{layout.height}" '
        f'viewBox="0 0 {layout.width} {layout.height}">'
    ]
    for t in layout.x.ticks:
        parts.append(_line((t.at, plot.top), (t.at, plot.bottom), _GRID))
    for t in layout.y.ticks:
        parts.append(_line((plot.left, t.at), (plot.right, t.at), _GRID))
    parts.append(
        f'<rect x="{plot.left:.1f}" y="{plot.top:.1f}" width="{plot.right - plot.left:.1f}" '
        f'height="{plot.bottom - plot.top:.1f}" fill="none" stroke="#bbb"/>'
    )
    for i, roof in enumerate(layout.roofs):
        color = _ROOF_COLORS[i % len(_ROOF_COLORS)]
        coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in roof.path)
        parts.append(f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="2"/>')
    for ridge in layout.ridges:
        parts.append(_line(*ridge.drop, 'stroke="#999" stroke-dasharray="3 3"'))
        parts.append(f'<circle cx="{ridge.at[0]:.1f}" cy="{ridge.at[1]:.1f}" r="3" fill="#555"/>')
    for i in sorted(drawn, key=lambda i: -layout.points[i].r):
        place, p = layout.points[i], points[i]
        tip = (
            f"{p.name}: {format_intensity(p.intensity)}, "
            f"{format_flops_per_s(p.achieved_flops_per_s)}"
        )
        parts.append(
            f'<circle class="point" cx="{place.x:.1f}" cy="{place.y:.1f}" r="{place.r:.1f}" '
            f'fill="#d62728" fill-opacity="0.6"><title>{esc(tip)}</title></circle>'
        )
    labels: list[Label | None] = [t.label for axis in (layout.x, layout.y) for t in axis.ticks]
    labels += [layout.x.title, layout.y.title, layout.memory_label]
    labels += [r.label for r in layout.roofs] + [r.label for r in layout.ridges]
    parts += [_text(lb) for lb in labels if lb is not None]
    parts.append("</svg>")
    what = {"op": "ops", "kernel": "kernels"}.get(level or "", "points")
    shown = f"the {len(drawn)} heaviest of {total} {what}" if total > len(drawn) else ""
    note = f"{shown or f'{total} {what}'}; dot size: time. The heaviest:"
    return as_img("".join(parts), "gp-snapshot-roofline", "roofline"), note


_GRID = 'stroke="#eee"'


def _line(a: tuple[float, float], b: tuple[float, float], style: str) -> str:
    return f'<line x1="{a[0]:.1f}" y1="{a[1]:.1f}" x2="{b[0]:.1f}" y2="{b[1]:.1f}" {style}/>'


def _text(label: Label) -> str:
    """A layout label as SVG text, at the font size it was placed by."""
    turn = (
        f' transform="rotate({label.angle:.1f} {label.x:.1f} {label.y:.1f})"' if label.angle else ""
    )
    return (
        f'<text x="{label.x:.1f}" y="{label.y:.1f}" text-anchor="{label.anchor}"{turn} '
        f'font-family="system-ui,sans-serif" font-size="{label.font:g}" fill="#333">'
        f"{esc(label.text)}</text>"
    )
