"""code_patterns' search for loops: the all-calls-at-once filter skips exactly the calls in which
the per-call search finds nothing."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from gpuprofile.analyses import code_patterns


@pytest.mark.parametrize("block_items", [1, 7, 64, 1 << 15])
def test_may_loop_marks_exactly_the_calls_with_a_loop(
    monkeypatch: pytest.MonkeyPatch, block_items: int
) -> None:
    # Small blocks too: a loop must be found whichever block its call falls in.
    monkeypatch.setattr(code_patterns, "_BLOCK_ITEMS", block_items)
    rng = np.random.default_rng(7)
    with_loop = without = 0
    for _ in range(400):
        sizes = rng.integers(1, int(rng.choice([5, 20, 90, 300])), int(rng.integers(1, 12)))
        bounds = np.r_[0, np.cumsum(sizes)]
        codes = rng.integers(0, int(rng.integers(1, 6)), int(bounds[-1])).astype(np.int64)
        if rng.random() < 0.5:  # a planted block, repeated 2-5 times, cut at the call's end
            k = int(rng.integers(0, len(sizes)))
            lo, hi = int(bounds[k]), int(bounds[k + 1])
            block = rng.integers(0, 50, int(rng.integers(1, 70)))
            run = np.tile(block, int(rng.integers(2, 6)))[: hi - lo]
            at = lo + int(rng.integers(0, hi - lo - len(run) + 1))
            codes[at : at + len(run)] = run
        idle = np.zeros(len(codes), bool)
        expected = np.array(
            [
                bool(code_patterns.tandem_repeats(codes[lo:hi], idle[lo:hi]))
                for lo, hi in itertools.pairwise(bounds.tolist())
            ]
        )
        np.testing.assert_array_equal(code_patterns._may_loop(codes, bounds), expected)
        with_loop += int(expected.sum())
        without += int((~expected).sum())
    assert with_loop > 50 and without > 50  # both answers were tried


def test_a_loop_across_two_calls_is_none() -> None:
    # Four repeats of [1, 2] split 3 + 1 between two calls: neither call holds a loop.
    codes = np.array([1, 2, 1, 2, 1, 2, 1, 2], np.int64)
    assert code_patterns._may_loop(codes, np.array([0, 6, 8])).tolist() == [False, False]
    assert code_patterns._may_loop(codes, np.array([0, 8])).tolist() == [True]
