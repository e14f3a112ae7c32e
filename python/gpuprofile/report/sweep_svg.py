"""A scaling sweep's log-log chart as a self-contained SVG string, drawn from ``sweep_layout``'s
geometry (no geometry of its own): grid lines at the ticks, the plot box, each series' fitted
line, its points (one <circle> each, with its values as a tooltip) and its label. Every text
that reaches the markup (module paths are untrusted: they come from the user's model) passes
through ``html.escape``. Colours are the standalone report's palette (``html_plots``), by each
series' index.
"""

from __future__ import annotations

from html import escape

from gpuprofile.report.html_plots import PALETTE
from gpuprofile.report.roof_labels import Label, Pt
from gpuprofile.report.sweep_layout import SweepPlot, x_tick_text, y_tick_text

GRID = 'stroke="#eee"'
MAJOR_GRID = 'stroke="#ddd"'
POINT_R = 3.0


def _line(a: Pt, b: Pt, style: str) -> str:
    return f'<line x1="{a[0]:.1f}" y1="{a[1]:.1f}" x2="{b[0]:.1f}" y2="{b[1]:.1f}" {style}/>'


def _text(lb: Label, fill: str = "#333") -> str:
    turn = f' transform="rotate({lb.angle:.1f} {lb.x:.1f} {lb.y:.1f})"' if lb.angle else ""
    return (
        f'<text x="{lb.x:.1f}" y="{lb.y:.1f}" text-anchor="{lb.anchor}"{turn} '
        f'font-family="system-ui,sans-serif" font-size="{lb.font:g}" fill="{fill}">'
        f"{escape(lb.text)}</text>"
    )


def sweep_svg(plot: SweepPlot) -> str:
    """The chart as SVG markup (an ``<svg>`` element with its own size and viewBox).

    Parameters:
        plot: the layout from ``sweep_layout``.
    Returns:
        The markup. A plot with nothing to show (``plot.empty``) draws its axes and says why
        in the middle of the box.
    """
    box = plot.box
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{plot.width:g}" '
        f'height="{plot.height:g}" viewBox="0 0 {plot.width:g} {plot.height:g}">'
    ]
    for t in plot.x_ticks:
        parts.append(_line((t.at, box.top), (t.at, box.bottom), MAJOR_GRID if t.major else GRID))
    for t in plot.y_ticks:
        parts.append(_line((box.left, t.at), (box.right, t.at), MAJOR_GRID if t.major else GRID))
    parts.append(
        f'<rect x="{box.left:.1f}" y="{box.top:.1f}" width="{box.right - box.left:.1f}" '
        f'height="{box.bottom - box.top:.1f}" fill="none" stroke="#bbb"/>'
    )
    for s in plot.series:
        colour = PALETTE[s.colour % len(PALETTE)]
        title = f"<title>{escape(s.title)}</title>"
        if s.line is not None:
            parts.append(
                f'<g class="fit">{title}'
                + _line(*s.line, f'stroke="{colour}" stroke-width="1.5"')
                + "</g>"
            )
        if s.leader is not None:
            parts.append(_line(*s.leader, f'stroke="{colour}" stroke-width="0.75"'))
        for (px, py), (x, y) in zip(s.points, s.values):
            tip = f"{s.subject}: {plot.parameter}={x_tick_text(x)}, {y_tick_text(y, s.metric)}"
            parts.append(
                f'<circle class="point" cx="{px:.1f}" cy="{py:.1f}" r="{POINT_R:g}" '
                f'fill="{colour}"><title>{escape(tip)}</title></circle>'
            )
        if s.label is not None:
            parts.append(f'<g class="label">{title}{_text(s.label, colour)}</g>')
    labels = [t.label for t in (*plot.x_ticks, *plot.y_ticks)] + [plot.x_title, plot.y_title]
    parts += [_text(lb) for lb in labels]
    if plot.empty:
        parts.append(
            f'<text x="{(box.left + box.right) / 2:.1f}" y="{(box.top + box.bottom) / 2:.1f}" '
            f'text-anchor="middle" font-family="system-ui,sans-serif" font-size="11" '
            f'fill="#777">{escape(plot.empty)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)
