"""The op-tree queries every analysis asks (analyses/lookups.py), on a forest drawn by hand.

0            5
+- 1         +- 6
|  +- 2
|     +- 3
+- 4
"""

from __future__ import annotations

import numpy as np

from gpuprofile.analyses.lookups import has_ancestor, innermost_with, outermost_with

PARENT = np.array([-1, 0, 1, 2, 0, -1, 5])


def flags(*rows: int) -> np.ndarray:
    out = np.zeros(len(PARENT), dtype=bool)
    out[list(rows)] = True
    return out


def test_outermost_with_finds_the_highest_flagged_ancestor_or_self() -> None:
    found = outermost_with(flags(1, 3, 6), PARENT)
    assert found.tolist() == [-1, 1, 1, 1, -1, -1, 6]


def test_has_ancestor_excludes_the_row_itself() -> None:
    found = has_ancestor(flags(1, 3, 6), PARENT)
    assert found.tolist() == [False, False, True, True, False, False, False]


def test_innermost_with_stops_at_the_nearest_flagged_row() -> None:
    rows = np.array([3, 4, 6, 0])
    found = innermost_with(flags(0, 2), PARENT, rows)
    assert found.tolist() == [2, 0, -1, 0]
