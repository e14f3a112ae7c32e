"""nest() gives what a call-stack walk over each thread gives, for nested and crossing
intervals alike, on both its paths: the compiled walk over every interval (where the core is
built), and the whole-column path for nested ones with the walk for crossing ones."""

from __future__ import annotations

import numpy as np
import pytest

from gpuprofile.trace import nesting
from gpuprofile.trace import walk as core
from gpuprofile.trace.nesting import nest
from helpers.prerequisites import missing


@pytest.fixture(autouse=True, params=["compiled walk", "column operations"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.param == "compiled walk" and not core.COMPILED:
        missing("the compiled lane core (trace/_walk.c) is not built: run `make setup`")
    monkeypatch.setattr(nesting, "COMPILED", request.param == "compiled walk")


def walk(thread: list[int], start: list[int], end: list[int]) -> tuple[list[int], list[int]]:
    """Parent index and depth by the definition: in (thread, start, longest first) order, an
    interval's parent is the innermost interval on its thread still open at its start."""
    order = sorted(range(len(start)), key=lambda i: (thread[i], start[i], start[i] - end[i], i))
    parent, depth = [-1] * len(start), [0] * len(start)
    stack: list[int] = []
    for k, i in enumerate(order):
        if k and thread[order[k - 1]] != thread[i]:
            stack = []
        while stack and end[stack[-1]] <= start[i]:
            stack.pop()
        if stack:
            parent[i], depth[i] = stack[-1], len(stack)
        stack.append(i)
    return parent, depth


def nested_intervals(rng: np.random.Generator, n: int) -> list[tuple[int, int]]:
    """Intervals that nest like call frames, some touching, some empty."""
    out: list[tuple[int, int]] = []

    def fill(lo: int, hi: int, level: int) -> None:
        t = lo
        while t < hi and len(out) < n:
            s = int(rng.integers(t, hi))
            e = int(rng.integers(s, hi + 1))
            out.append((s, e))
            if level < 6 and e > s:
                fill(s, e, level + 1)
            t = e if rng.random() < 0.7 else e + 1

    fill(0, 1000, 0)
    return out


def check(thread: np.ndarray, start: np.ndarray, end: np.ndarray) -> None:
    parent, depth = nest(thread, start, end)
    expected_parent, expected_depth = walk(thread.tolist(), start.tolist(), end.tolist())
    assert parent.tolist() == expected_parent
    assert depth.tolist() == expected_depth


def test_nested_intervals_on_several_threads() -> None:
    rng = np.random.default_rng(1)
    for _ in range(200):
        intervals = [(t, s, e) for t in range(3) for s, e in nested_intervals(rng, 80)]
        rng.shuffle(intervals)
        thread, start, end = (np.array(c, np.int64) for c in zip(*intervals, strict=True))
        check(thread, start, end)


def test_crossing_and_tied_intervals() -> None:
    rng = np.random.default_rng(2)
    for _ in range(1000):
        n = int(rng.integers(0, 40))
        start = rng.integers(0, 15, n)
        check(rng.integers(0, 3, n), start, start + rng.integers(0, 6, n) * rng.integers(0, 2, n))


def test_a_crossing_pair_nests_as_the_walk_says() -> None:
    # b starts inside a and ends after it: the walk makes a its parent; c, after a ended,
    # sits in b, and a, under b on the stack, still counts to c's depth.
    thread = np.zeros(3, np.int64)
    parent, depth = nest(thread, np.array([0, 5, 12]), np.array([10, 20, 15]))
    assert parent.tolist() == [-1, 0, 1]
    assert depth.tolist() == [0, 1, 2]
