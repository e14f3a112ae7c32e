"""The module view's layout, drawn by the widget, the bokeh page and the snapshot alike: an
indented tree in parent-then-children order, forward and backward bars apart and to scale,
labels that stay in their own row and column, a readable number of rows, and no view at all
without module rows."""

from __future__ import annotations

from typing import Any

from gpuprofile.report import module_layout as ml
from gpuprofile.report.schema import Report
from helpers import report_parts as rp

# A hand-made model: the report lists rows largest first, as build_report does; the tree
# must put each child under its parent, siblings largest first.
ROWS = [
    rp.module_row("Net", 900, 1800, type="Net"),
    rp.module_row("Net.blocks.1", 500, 1000, type="Block"),
    rp.module_row("(no module)", 1200, 0),
    rp.module_row("Net.blocks.0", 300, 700, type="Block"),
    rp.module_row("Net.blocks.1.mlp", 400, 900, type="MLP"),
    rp.module_row("Net.head", 100, 100, type="Linear"),
]


def _report(*ranks: list[dict[str, Any]]) -> Report:
    return rp.report(ranks=[rp.rank(rank=r, modules=rows) for r, rows in enumerate(ranks)])


def test_no_module_rows_no_view() -> None:
    assert ml.module_layout(_report([], [])) is None
    assert ml.module_layout(rp.report()) is None


def test_tree_order_parents_first_siblings_largest_first() -> None:
    layout = ml.module_layout(_report(ROWS))
    assert layout is not None
    (tree,) = layout.trees
    drawn = [(p.path, p.level) for p in tree.rows]
    assert drawn == [
        ("Net", 0),
        ("Net.blocks.1", 1),
        ("Net.blocks.1.mlp", 2),
        ("Net.blocks.0", 1),
        ("Net.head", 1),
        ("(no module)", 0),
    ]
    # Each place points back at its report row.
    assert [ROWS[p.index]["path"] for p in tree.rows] == [path for path, _ in drawn]
    # Labels name the part past the parent's path; the indent grows with the level.
    labels = {p.path: p.label for p in tree.rows}
    assert labels["Net.blocks.1.mlp"].text == "mlp"
    assert labels["Net.blocks.0"].text == "blocks.0"
    assert labels["Net.blocks.1.mlp"].x > labels["Net.blocks.1"].x > labels["Net"].x
    assert tree.more is None


def test_bars_forward_and_backward_apart_and_to_scale() -> None:
    layout = ml.module_layout(_report(ROWS))
    assert layout is not None
    (tree,) = layout.trees
    assert tree.scale_ns == 2700  # Net: 900 + 1800, the largest row
    for place in tree.rows:
        row = ROWS[place.index]
        assert place.forward.x == layout.bar_x
        assert abs(place.forward.width - layout.bar_w * row["forward_ns"] / 2700) < 1e-9
        assert abs(place.backward.width - layout.bar_w * row["backward_ns"] / 2700) < 1e-9
        # Backward starts where forward ends: both are seen, neither hides the other.
        assert place.backward.x == place.forward.x + place.forward.width
        assert place.backward.x + place.backward.width <= layout.bar_x + layout.bar_w + 1e-9
        assert place.value.x >= place.backward.x + place.backward.width
        assert place.value.box[1][0] <= layout.width
    assert "forward" in tree.rows[0].title and "(Net)" in tree.rows[0].title


def test_labels_never_collide() -> None:
    long = "Transformer." + ".".join(f"very_long_submodule_name_{i}" for i in range(8))
    rows = [rp.module_row(long[: long.find(".", 12 + 27 * k)] if k < 7 else long, 100 - k)
            for k in range(8)]  # fmt: skip
    layout = ml.module_layout(_report(rows))
    assert layout is not None
    (tree,) = layout.trees
    assert len(tree.rows) == 8
    for a, b in zip(tree.rows, tree.rows[1:], strict=False):
        assert b.y - a.y == layout.row_h
    for place in tree.rows:
        xs = [x for x, _ in place.label.box]
        ys = [y for _, y in place.label.box]
        # Within its row and left of the bars: no label can reach another's box.
        assert place.y <= min(ys) and max(ys) <= place.y + layout.row_h
        assert max(xs) <= layout.bar_x
        # Cut labels keep the end of the path.
        assert place.label.text.startswith("\u2026") or place.label.text in place.path
        assert place.path.endswith(place.label.text.lstrip("\u2026"))


def test_cut_to_a_readable_number_of_rows_keeps_parents() -> None:
    rows = [rp.module_row("M", 10_000)]
    rows += [rp.module_row(f"M.a.{i}", 100 + i) for i in range(30)]
    rows += [rp.module_row("M.a", 6_000)]
    rows += [rp.module_row(f"M.a.29.x{i}", 130 - i) for i in range(5)]
    layout = ml.module_layout(_report(rows))
    assert layout is not None
    (tree,) = layout.trees
    assert len(tree.rows) == ml.MAX_ROWS
    drawn = {p.path for p in tree.rows}
    # Every drawn row's parent is drawn, and above it.
    order = [p.path for p in tree.rows]
    for path in order:
        if "." in path:
            parent = path.rsplit(".", 1)[0]
            assert parent in drawn and order.index(parent) < order.index(path)
    left = len(rows) - ml.MAX_ROWS
    assert tree.more is not None and tree.more.startswith(f"\u2026 {left} more modules")
    # The heaviest left out is lighter than the lightest drawn leaf.
    sizes = {r["path"]: r["forward_ns"] for r in rows}
    assert max(sizes[p] for p in sizes if p not in drawn) <= min(sizes[p] for p in drawn)
    assert tree.height == (ml.MAX_ROWS + 1) * layout.row_h


def test_one_tree_per_rank_with_rows() -> None:
    layout = ml.module_layout(_report(ROWS, [], ROWS[:2]))
    assert layout is not None
    assert [t.rank for t in layout.trees] == [0, 2]
    assert [p.path for p in layout.trees[1].rows] == ["Net", "Net.blocks.1"]
