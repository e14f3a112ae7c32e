import numpy as np
import pytest

from gpuprofile.analyses.intervals import union_length


def covered_by_mask(start: np.ndarray, end: np.ndarray) -> int:
    """Independent count: mark every covered nanosecond on a grid."""
    if len(start) == 0:
        return 0
    mask = np.zeros(int(end.max()) + 1, dtype=bool)
    for s, e in zip(start, end):
        mask[s:e] = True
    return int(mask.sum())


@pytest.mark.parametrize("seed", range(20))
def test_union_length_matches_a_grid_count(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 60))
    start = rng.integers(0, 2000, n)
    end = start + rng.integers(0, 300, n)
    assert union_length(start, end) == covered_by_mask(start, end)


def test_nested_and_touching_intervals() -> None:
    start = np.array([0, 10, 20, 50])
    end = np.array([100, 30, 25, 150])  # all nested in or overlapping the first
    assert union_length(start, end) == 150
    assert union_length(np.array([0, 10]), np.array([10, 20])) == 20
