"""The two pictures of a notebook snapshot as inline SVG: the timeline by lane and the roofline.

Both are bounded whatever the trace's size: the timeline draws, per lane, how busy each pixel
column is (events merged per pixel, as the widget's level of detail does), never one box per
event; the roofline draws at most ``MAX_POINTS`` points. Every string that reaches the markup
(lane labels, point names in <title> tooltips) passes through ``esc``.
"""

from __future__ import annotations

import base64
import math
import struct
import zlib
from typing import TYPE_CHECKING

import numpy as np

from gpuprofile.report.html import esc
from gpuprofile.units import format_flops_per_s, format_intensity, format_time

if TYPE_CHECKING:
    import pandas as pd

    from gpuprofile.report.schema import Report
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
    """(label, color, events) per lane: GPU streams first, then CPU threads; the busiest
    ``MAX_LANES``. Also returns how many lanes there were in all."""
    lanes: list[tuple[int, str, str, pd.DataFrame]] = []
    kernels = trace.kernels
    if len(kernels):
        for (rank, device, stream), group in kernels.groupby(
            ["rank", "device", "stream"], observed=True, sort=True
        ):
            label = f"r{rank} GPU {device} stream {stream}"
            lanes.append((int(group["dur_ns"].sum()), label, _COLOR, group))
    ops = trace.ops
    if len(ops):
        for (rank, tid), group in ops.groupby(["rank", "tid"], observed=True, sort=True):
            # Nested ops overlap; the top ones say how busy the thread was.
            label = f"r{rank} CPU thread {tid}"
            lanes.append((int(group["dur_ns"].max()), label, _CPU_COLOR, group))
    gpu = [lane for lane in lanes if lane[2] == _COLOR]
    cpu = [lane for lane in lanes if lane[2] != _COLOR]
    gpu.sort(key=lambda lane: -lane[0])
    cpu.sort(key=lambda lane: -lane[0])
    kept = (gpu + cpu)[:MAX_LANES]
    # Shown in the order they were found (GPU streams by rank, device, stream; then threads).
    kept.sort(key=lambda lane: next(i for i, other in enumerate(lanes) if other is lane))
    return [(label, color, events) for _, label, color, events in kept], len(lanes)


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
    """The report's roofline on log-log axes: the roofs of the precisions its points use and
    the heaviest ``MAX_POINTS`` points, each with its name, intensity and rate as a tooltip.

    Parameters:
        report: a ``gpuprofile.report/1`` Report.
    Returns (svg markup or "", a one-line note)."""
    points = [
        p
        for p in report.roofline.points
        if (p.intensity or 0) > 0 and (p.achieved_flops_per_s or 0) > 0
    ]
    if not points:
        return "", "No roofline points (no op or kernel with known FLOPs and bytes)."
    total = len(points)
    points = sorted(points, key=lambda p: -p.time_ns)[:MAX_POINTS]
    bandwidth = report.hardware.dram_bytes_per_s
    peaks = report.hardware.peak_flops
    roofs = [(k, float(peaks[k])) for k in sorted({p.precision for p in points} & set(peaks))]
    roofs = [(k, v) for k, v in roofs if v > 0]
    xs = [float(p.intensity or 0) for p in points]
    ys = [float(p.achieved_flops_per_s or 0) for p in points]
    x_lo, x_hi = math.log10(min(xs) / 10), math.log10(max(xs) * 10)
    y_top = max(ys + [v for _, v in roofs])
    y_lo, y_hi = math.log10(min(ys) / 10), math.log10(y_top * 2)
    w, h, left, bottom = 520, 300, 90, 30

    def px(x: float) -> float:
        return left + (math.log10(x) - x_lo) / (x_hi - x_lo) * w

    def py(y: float) -> float:
        # Clipped to the plot: a roof's slant can start below the lowest point.
        share = (math.log10(max(y, 1e-30)) - y_lo) / (y_hi - y_lo)
        return 10 + h - min(max(share, 0.0), 1.0) * h

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + w + 150}" '
        f'height="{h + bottom + 10}">',
        f'<rect x="{left}" y="10" width="{w}" height="{h}" fill="none" stroke="#bbb"/>',
    ]
    for i, (precision, peak) in enumerate(roofs):
        color = _ROOF_COLORS[i % len(_ROOF_COLORS)]
        a, b = 10**x_lo, 10**x_hi
        line = [(a, peak), (b, peak)]
        if bandwidth:
            # The slanted DRAM roof up to the ridge point, flat after it.
            ridge = min(max(peak / bandwidth, a), b)
            line = [(a, min(bandwidth * a, peak)), (ridge, peak), (b, peak)]
        coords = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in line)
        parts.append(f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="2"/>')
        parts.append(
            f'<text x="{left + w + 6}" y="{py(peak) + 4:.1f}" {_TEXT}>{esc(precision)} roof '
            f"{esc(format_flops_per_s(peak))}</text>"
        )
    heaviest = max(p.time_ns for p in points) or 1
    for p, x, y in zip(points, xs, ys):
        r = 3 + 7 * p.time_ns / heaviest
        parts.append(
            f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="{r:.1f}" fill="#d62728" '
            'fill-opacity="0.6"/>'
        )
    axis = f'y="{h + 26}" {_TEXT}'
    parts.append(f'<text x="{left}" {axis}>{esc(format_intensity(10**x_lo))}</text>')
    parts.append(
        f'<text x="{left + w}" text-anchor="end" {axis}>{esc(format_intensity(10**x_hi))}</text>'
    )
    parts.append(
        f'<text x="{left + w / 2}" text-anchor="middle" {axis}>arithmetic intensity</text>'
    )
    parts.append(
        f'<text x="{left - 4}" y="16" text-anchor="end" {_TEXT}>'
        f"{esc(format_flops_per_s(10**y_hi))}</text>"
        f'<text x="{left - 4}" y="{h + 10}" text-anchor="end" {_TEXT}>'
        f"{esc(format_flops_per_s(10**y_lo))}</text>"
    )
    parts.append("</svg>")
    shown = f"the {len(points)} heaviest of {total} points" if total > len(points) else ""
    note = f"{shown or f'{total} points'}; dot size: time. The heaviest:"
    return as_img("".join(parts), "gp-snapshot-roofline", "roofline"), note
