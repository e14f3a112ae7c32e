"""The module view, laid out once for every renderer (the widget, the bokeh page, the SVG
snapshot): per rank, the report's module rows as an indented tree, each row a label and a bar
whose forward and backward parts are drawn apart. Renderers draw this; none computes geometry.

Why an indented tree and not an icicle: module paths are long and trees are deep
(``Transformer.layers.3.attn.heads``), and the question is "which part of my model": an
icicle gives a deep, small module a box too narrow for its name, while a tree gives every
module a line of its own, read top to bottom like the text report's "time by module". With
one row per module and each label cut to its column, no label can cover another.

Units: px of a ``WIDTH`` wide tree (y down), rows ``ROW_H`` apart; a renderer scales.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpuprofile.report.roof_labels import ASCENT, DESCENT, Label, label, text_width
from gpuprofile.report.schema import ModuleRow, Report
from gpuprofile.units import (
    format_count,
    format_flops,
    format_flops_per_s,
    format_percent,
    format_time,
)

WIDTH = 640
ROW_H = 18
FONT = 11.0
INDENT = 12.0  # px per level of nesting
LABEL_W = 230.0  # the label column; a label is cut to fit it
BAR_X = LABEL_W + 8
VALUE_W = 64.0  # the time printed after a bar
BAR_H = 12.0
MAX_ROWS = 24  # a readable tree: the heaviest modules (and their parents), the rest counted
NO_MODULE = "(no module)"  # analyses.modules.NO_MODULE; the report layer reads it as data


@dataclass(frozen=True)
class Bar:
    """A bar's part, px: from ``x`` for ``width`` (0: nothing to draw)."""

    x: float
    width: float


@dataclass(frozen=True)
class ModulePlace:
    """A module row of the tree: ``index`` is its place in ``report.ranks[i].modules``;
    ``level`` its nesting in the tree drawn; ``y`` its row's top. ``title`` the full path and
    numbers (a tooltip)."""

    index: int
    path: str
    level: int
    y: float
    label: Label
    forward: Bar
    backward: Bar
    value: Label
    title: str


@dataclass(frozen=True)
class ModuleTree:
    """One rank's tree: rows in the order drawn (parents before children, siblings largest
    first); ``more`` the line that counts the rows left out, None when none were."""

    rank: int
    height: float
    rows: tuple[ModulePlace, ...]
    more: str | None
    scale_ns: int  # the time a bar of full width stands for: the largest forward + backward


@dataclass(frozen=True)
class ModuleLayout:
    """The module view of a report: one tree per rank that has module rows (none: no view)."""

    width: float
    bar_x: float
    bar_w: float
    row_h: float
    trees: tuple[ModuleTree, ...]


def parent_path(path: str, known: set[str]) -> str | None:
    """The nearest enclosing path among ``known`` ("a.b" for "a.b.c" when it is known, else
    "a"), or None for a root."""
    parts = path.split(".")
    for n in range(len(parts) - 1, 0, -1):
        candidate = ".".join(parts[:n])
        if candidate in known:
            return candidate
    return None


def _total(row: ModuleRow) -> int:
    return max(int(row.forward_ns), 0) + max(int(row.backward_ns), 0)


def tree_order(rows: Sequence[ModuleRow], limit: int = MAX_ROWS) -> list[tuple[int, int]]:
    """(index, level) of the rows to draw, in tree order: the ``limit`` heaviest rows (forward
    + backward), each with its ancestors so that no row hangs without its parent; siblings
    largest first, ties in report order. Without ancestors in the report a row is a root."""
    paths = [r.path for r in rows]
    known = set(paths)
    first = {p: i for i, p in reversed(list(enumerate(paths)))}
    parent = {
        i: (None if r.path == NO_MODULE else parent_path(r.path, known)) for i, r in enumerate(rows)
    }
    by_size = sorted(range(len(rows)), key=lambda i: (-_total(rows[i]), i))
    keep: set[int] = set()
    for i in by_size:
        if len(keep) >= limit:
            break
        chain = [i]
        while (up := parent[chain[-1]]) is not None and first[up] not in keep:
            chain.append(first[up])
        if len(keep | set(chain)) > limit and keep:
            continue  # its ancestors would push the tree past the limit: a lighter row may fit
        keep.update(chain)
    children: dict[int | None, list[int]] = {}
    for i in sorted(keep, key=lambda i: (-_total(rows[i]), i)):
        up = parent[i]
        children.setdefault(None if up is None else first[up], []).append(i)
    out: list[tuple[int, int]] = []

    def walk(node: int | None, level: int) -> None:
        for i in children.get(node, []):
            out.append((i, level))
            walk(i, level + 1)

    walk(None, 0)
    return out


def _fit(text: str, width: float, font: float) -> str:
    """``text`` cut (with "…") to fit ``width`` px at ``font``; the start of a path is the
    least telling part, so a label keeps its end."""
    if text_width(text, font) <= width:
        return text
    keep = max(int(width / text_width("x", font)) - 1, 1)
    return "\u2026" + text[-keep:]


def _name(path: str, parent: str | None) -> str:
    """A row's label: its path past its parent's ("layers.3.mlp" under "Transformer")."""
    if parent and path.startswith(parent + "."):
        return path[len(parent) + 1 :]
    return path


def module_title(row: ModuleRow) -> str:
    """A row's full path and numbers, in one line (a tooltip)."""
    parts = [f"{row.path}{f' ({row.type})' if row.type else ''}"]
    if row.calls:
        parts.append(format_count(row.calls, "call"))
    parts.append(f"forward {format_time(row.forward_ns)}")
    parts.append(f"backward {format_time(row.backward_ns)}")
    if row.gpu_ns:
        parts.append(f"GPU {format_time(row.gpu_ns)}")
    if row.flops:
        rate = format_flops_per_s(row.achieved_flops_per_s)
        pct = f", {format_percent(row.pct_of_roof)} of roof" if row.pct_of_roof is not None else ""
        parts.append(f"{format_flops(row.flops)} at {rate}{pct}")
    return " · ".join(parts)


def _tree(rank: int, rows: Sequence[ModuleRow]) -> ModuleTree:
    order = tree_order(rows)
    scale = max((_total(r) for r in rows), default=0)
    bar_w = WIDTH - BAR_X - VALUE_W
    per_ns = bar_w / scale if scale > 0 else 0.0
    shown: list[str] = []  # paths drawn so far, for each row's parent label
    places = []
    for n, (i, level) in enumerate(order):
        row = rows[i]
        y = n * ROW_H
        baseline = y + (ROW_H + FONT * (ASCENT - DESCENT)) / 2
        up = parent_path(row.path, set(shown)) if row.path != NO_MODULE else None
        x = level * INDENT + 2
        text = _fit(_name(row.path, up), LABEL_W - x - 4, FONT)
        fwd = max(int(row.forward_ns), 0) * per_ns
        bwd = max(int(row.backward_ns), 0) * per_ns
        places.append(
            ModulePlace(
                index=i,
                path=row.path,
                level=level,
                y=y,
                label=label(text, x, baseline, "start", 0.0, FONT),
                forward=Bar(BAR_X, fwd),
                backward=Bar(BAR_X + fwd, bwd),
                value=label(
                    format_time(_total(row)), BAR_X + fwd + bwd + 4, baseline, "start", 0.0, FONT
                ),
                title=module_title(row),
            )
        )
        shown.append(row.path)
    left = len(rows) - len(order)
    more = None
    if left:
        drawn = {i for i, _ in order}
        # Inclusive times nest: summing the rows left out would count a child inside its
        # parent twice, so the line says how many, and the largest of them.
        largest = max((_total(r) for i, r in enumerate(rows) if i not in drawn), default=0)
        more = f"\u2026 {format_count(left, 'more module')} (each at most {format_time(largest)})"
    height = len(order) * ROW_H + (ROW_H if more else 0)
    return ModuleTree(rank, height, tuple(places), more, scale)


def module_layout(report: Report) -> ModuleLayout | None:
    """The module view of a ``gpuprofile.report/1`` report, or None when no rank has module
    rows (then no renderer draws anything)."""
    trees = tuple(_tree(r.rank, r.modules) for r in report.ranks if r.modules)
    if not trees:
        return None
    return ModuleLayout(
        width=WIDTH, bar_x=BAR_X, bar_w=WIDTH - BAR_X - VALUE_W, row_h=ROW_H, trees=trees
    )
