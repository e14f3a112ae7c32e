"""The module view as SVG, for the renderers without a script of ours: the saved snapshot (as an
image) and the bokeh page (inline, where each row's tooltip shows). It draws
``module_layout`` as laid out, as the widget does; every string passes through ``esc``.
Imported by report.html and report.snapshot, so it imports neither.
"""

from __future__ import annotations

import html
from collections.abc import Callable

from gpuprofile.report.module_layout import ModuleLayout, ModuleTree, module_layout
from gpuprofile.report.roof_labels import Label
from gpuprofile.report.schema import Report

FORWARD = "#1f77b4"
BACKWARD = "#ff7f0e"
MAX_TREES = 8  # ranks drawn; the snapshot stays bounded on a job of many ranks
_FONT = 'font-family="system-ui,sans-serif"'


def esc(value: object) -> str:
    """As report.html.esc: ``<``, ``>``, ``&`` and quotes escaped."""
    return html.escape(str(value), quote=True)


def _text(label: Label, fill: str) -> str:
    return (
        f'<text x="{label.x:.1f}" y="{label.y:.1f}" {_FONT} font-size="{label.font:g}" '
        f'fill="{fill}">{esc(label.text)}</text>'
    )


def tree_svg(layout: ModuleLayout, tree: ModuleTree) -> str:
    """One rank's tree: per row its tooltip (path and numbers), label, forward and backward
    bars and time; the "… N more" line under the rows."""
    height = max(tree.height, 1.0)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{layout.width:g}" height="{height:g}" '
        f'viewBox="0 0 {layout.width:g} {height:g}" class="gp-module-tree" '
        f'data-rank="{tree.rank}" data-modules="{len(tree.rows)}">'
    ]
    bar_h = 12.0
    for place in tree.rows:
        bar_y = place.y + (layout.row_h - bar_h) / 2
        parts.append(f'<g data-path="{esc(place.path)}"><title>{esc(place.title)}</title>')
        for bar, color in ((place.forward, FORWARD), (place.backward, BACKWARD)):
            if bar.width > 0:
                parts.append(
                    f'<rect x="{bar.x:.1f}" y="{bar_y:.1f}" width="{max(bar.width, 0.5):.1f}" '
                    f'height="{bar_h:g}" fill="{color}"/>'
                )
        parts.append(_text(place.label, "#333") + _text(place.value, "#666") + "</g>")
    if tree.more:
        y = len(tree.rows) * layout.row_h + layout.row_h * 0.7
        parts.append(
            f'<text x="2" y="{y:.1f}" {_FONT} font-size="11" fill="#666">{esc(tree.more)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def legend_html() -> str:
    """The two colours, in words."""
    swatch = "display:inline-block;width:10px;height:10px;margin:0 4px 0 10px;background:"
    return (
        f'<p><span style="{swatch}{FORWARD}"></span>forward'
        f'<span style="{swatch}{BACKWARD}"></span>backward'
        " · bar: inclusive time of the module's calls; hover a row for its numbers</p>"
    )


def module_trees(report: Report) -> list[tuple[int, str]]:
    """(rank, svg) of each rank with module rows, at most ``MAX_TREES``; [] without any."""
    layout = module_layout(report)
    if layout is None:
        return []
    return [(tree.rank, tree_svg(layout, tree)) for tree in layout.trees[:MAX_TREES]]


def modules_section(report: Report, draw: Callable[[int, str], str]) -> str:
    """The "Time by module" section, escaped HTML; "" when no rank has module rows (no heading,
    no empty box). ``draw(rank, svg)`` places one tree: the snapshot as an <img> (sanitizers
    keep those), the bokeh page inline (tooltips show)."""
    trees = module_trees(report)
    if not trees:
        return ""
    several = len(trees) > 1
    parts = ["<h2>Time by module</h2>", legend_html()]
    for rank, svg in trees:
        if several:
            parts.append(f"<h3>rank {rank}</h3>")
        parts.append(draw(rank, svg))
    left = sum(1 for r in report.ranks if r.modules) - len(trees)
    if left > 0:
        parts.append(f"<p>({left} more ranks with modules not drawn)</p>")
    return "".join(parts)
