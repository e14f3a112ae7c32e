"""The memory view as SVG and HTML, for the renderers without a script of ours: the saved
snapshot (as an image) and the bokeh page (inline). It draws ``memory_layout`` as laid out, as
the widget does, and words the out-of-memory post-mortem; every string passes through ``esc``.
Imported by report.html and report.snapshot, so it imports neither.
"""

from __future__ import annotations

from collections.abc import Callable

from gpuprofile.report.memory_layout import COLOURS, MemoryLayout, memory_layout
from gpuprofile.report.memory_text import enough_text
from gpuprofile.report.module_svg import esc
from gpuprofile.report.roof_labels import Label
from gpuprofile.report.schema import Report
from gpuprofile.units import format_bytes

_FONT = 'font-family="system-ui,sans-serif"'
FIXES_SHOWN = 6


def _text(label: Label, fill: str = "#333") -> str:
    anchor = "" if label.anchor == "start" else f' text-anchor="{label.anchor}"'
    return (
        f'<text x="{label.x:.1f}" y="{label.y:.1f}"{anchor} {_FONT} font-size="{label.font:g}" '
        f'fill="{fill}">{esc(label.text)}</text>'
    )


def memory_svg(layout: MemoryLayout) -> str:
    left, top, right, bottom = layout.plot
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{layout.width:g}" '
        f'height="{layout.height:g}" viewBox="0 0 {layout.width:g} {layout.height:g}" '
        f'class="gp-memory" data-rank="{layout.rank}" data-areas="{len(layout.areas)}">',
        f'<rect x="{left:.1f}" y="{top:.1f}" width="{right - left:.1f}" '
        f'height="{bottom - top:.1f}" fill="none" stroke="#ccc"/>',
    ]
    for area in layout.areas:
        points = " ".join(f"{x:.1f},{y:.1f}" for x, y in area.points)
        colour = COLOURS[area.colour]
        parts.append(
            f'<polygon points="{points}" fill="{colour}" fill-opacity="0.75" '
            f'data-category="{esc(area.category)}"><title>{esc(area.legend.text)}</title>'
            "</polygon>"
        )
        sx, sy = area.swatch
        parts.append(f'<rect x="{sx:.1f}" y="{sy:.1f}" width="10" height="10" fill="{colour}"/>')
        parts.append(_text(area.legend))
    for tick in layout.y_ticks + layout.x_ticks:
        parts.append(_text(tick.label, "#666"))
    for marker in layout.markers:
        colour = "#d62728" if marker.kind == "failure" else "#333"
        parts.append(
            f'<line x1="{marker.x:.1f}" y1="{marker.top:.1f}" x2="{marker.x:.1f}" '
            f'y2="{bottom:.1f}" stroke="{colour}" stroke-dasharray="3,2"/>'
        )
        parts.append(_text(marker.label, colour))
    parts.append("</svg>")
    return "".join(parts)


def memory_section(report: Report, draw: Callable[[str, str], str]) -> str:
    """The "Memory" section, escaped HTML: the out-of-memory post-mortem first, then the chart
    and what was largest at the peak; "" when no rank has a memory view. ``draw(svg, alt)``
    places the chart (the snapshot as an <img>, the page inline)."""
    layout = memory_layout(report)
    if layout is None:
        return ""
    rank = next(r for r in report.ranks if r.rank == layout.rank)
    memory = rank.memory
    assert memory is not None
    parts = ["<h2>Memory</h2>"]
    if memory.failure is not None:
        failure = memory.failure
        asked = (
            f" It asked for {esc(format_bytes(failure.requested_bytes))}."
            if failure.requested_bytes is not None
            else ""
        )
        by = (
            f" Asked for by {esc(failure.op)}"
            + (f" in {esc(failure.module)}" if failure.module else "")
            + "."
            if failure.op
            else ""
        )
        parts.append(
            f'<div class="gp-oom"><p><b>Out of memory</b>: {esc(failure.error)}.{asked}{by} '
            f"Live when it failed: {esc(format_bytes(memory.end.total_bytes))}.</p>"
        )
        if failure.fixes:
            parts.append("<ol>")
            parts += [
                f"<li><b>frees {esc(format_bytes(f.frees_bytes))}</b>: {esc(f.fix)} "
                f"({esc(f.why)}){esc(enough_text(f.enough))}</li>"
                for f in failure.fixes[:FIXES_SHOWN]
            ]
            parts.append("</ol>")
        parts.append("</div>")
    parts.append(f"<p>{esc(layout.title)}</p>")
    parts.append(draw(memory_svg(layout), layout.title))
    rows = "".join(
        f"<tr><td>{esc(format_bytes(b.bytes))}</td><td>{esc(b.category)}</td>"
        f"<td>{esc(b.module)}</td><td>{esc(b.op)}</td><td>{esc(b.line)}</td></tr>"
        for b in memory.peak.largest
    )
    if rows:
        parts.append(
            "<table><tr><th>bytes</th><th>category</th><th>module</th><th>op</th>"
            f"<th>line</th></tr>{rows}</table>"
        )
    return "".join(parts)
