"""The compiled lane core (trace/_walk.c) gives exactly what its pure-Python references give:
the call-stack walk, first-fit rows, a CPU lane's rows (nesting.py_depth_rows), the timeline's
event order, the overview's boxes and the op tree's flagged ancestors (analyses/lookups.py), on
generated intervals built to cross, tie and be empty, generated forests, and the lanes and op
trees of every shared trace.
Without the built core the comparisons skip (fail under CI=true, where ``make setup`` builds
it)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import gpuprofile
from gpuprofile.analyses import lookups
from gpuprofile.analyses.context import Analysis
from gpuprofile.trace import nesting, walk
from gpuprofile.widget import tables, timeline
from helpers.prerequisites import SHARED_TRACES, missing, require_trace
from helpers.synthetic import synthetic_trace

SHARED_KINETO = SHARED_TRACES / "kineto"


@pytest.fixture
def compiled() -> None:
    if not walk.COMPILED:
        missing("the compiled lane core (trace/_walk.c) is not built: run `make setup`")


def _lane(rng: np.random.Generator, n: int, span: int) -> tuple[np.ndarray, np.ndarray]:
    """n intervals of one lane sorted as the timeline sorts them (start, longest first): many
    share a start, a third are empty, and children often outlive their parents."""
    start = rng.integers(0, span, n)
    dur = rng.integers(0, span // 2 + 1, n)
    dur[rng.random(n) < 0.3] = 0
    order = np.lexsort((-dur, start))
    return start[order].astype(np.int64), (start + dur)[order].astype(np.int64)


def _cases(seed: int, count: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    for k in range(count):
        yield _lane(rng, int(rng.integers(1, 40)), int(rng.integers(2, 60)) if k % 3 else 8)


@pytest.mark.usefixtures("compiled")
def test_depth_rows_equal_the_reference_on_crossing_tied_and_empty_intervals() -> None:
    for start, end in _cases(0, 4000):
        running = np.maximum.accumulate(end)
        expected = nesting.py_depth_rows(start, end, running)
        got = walk.compiled_depth_rows(start, end)
        assert got is not None
        assert got.tolist() == expected.tolist(), list(zip(start.tolist(), end.tolist()))


@pytest.mark.usefixtures("compiled")
def test_walk_and_first_fit_equal_the_reference() -> None:
    rng = np.random.default_rng(1)
    for _ in range(2000):
        n = int(rng.integers(1, 40))
        thread = np.sort(rng.integers(0, 3, n))
        start, end = _lane(rng, n, 30)
        order = np.lexsort((-(end - start), start, thread))
        t, s, e = thread[order], start[order], end[order]
        expected = walk.py_walk(t, s, e)
        got = walk.walk(t, s, e)
        assert [a.tolist() for a in got] == [a.tolist() for a in expected]
        by_lane = np.lexsort((s, t))
        lane, s, e = t[by_lane], s[by_lane], e[by_lane]
        assert walk.first_fit(lane, s, e).tolist() == walk.py_first_fit(lane, s, e).tolist()


@pytest.mark.usefixtures("compiled")
def test_event_order_equals_the_reference_and_a_lexsort() -> None:
    from gpuprofile.trace import _walk

    rng = np.random.default_rng(2)
    for k in range(1500):
        n = int(rng.integers(0, 60))
        lane = rng.integers(0, int(rng.integers(1, 5)), n).astype(np.int32)
        # Tables already sorted by start, concatenated (a lane mixes them), or not sorted.
        start = rng.integers(0, 12 if k % 2 else 1000, n).astype(np.int64)
        if k % 3 == 0:
            start = np.sort(start)
        end = start + rng.integers(0, 4, n)
        independent = np.lexsort((np.arange(n), -(end - start), start, lane))
        got = np.empty(n, np.int64)  # the core itself: a fallback to the twin would not count
        assert _walk.event_order(lane, start, end, got) is True
        assert got.tolist() == independent.tolist()
        assert walk.py_event_order(lane, start, end).tolist() == independent.tolist()


@pytest.mark.usefixtures("compiled")
def test_event_order_leaves_negative_lanes_to_the_reference() -> None:
    from gpuprofile.trace import _walk

    lane = np.array([0, -1], np.int32)
    start = np.array([3, 1], np.int64)
    assert _walk.event_order(lane, start, start, np.empty(2, np.int64)) is False
    expected = walk.py_event_order(lane, start, start)
    assert walk.event_order(lane, start, start).tolist() == expected.tolist()


@pytest.mark.usefixtures("compiled")
def test_overview_boxes_equal_the_reference_on_tied_times(monkeypatch: pytest.MonkeyPatch) -> None:
    """A real timeline's lanes and rows with times drawn from a few values: boxes of many
    members, equal durations (the first longest wins), events past both ends of the view."""
    data = timeline.timeline_data(synthetic_trace(3000))
    rng = np.random.default_rng(3)
    cases = []
    for k in range(40):
        start = rng.integers(-5, 60, data.total).astype(np.float64) * 1000
        end = start + rng.choice([0.0, 500.0, 1000.0, 7000.0], data.total)
        tied = dataclasses.replace(data, start=start, end=end)
        view = (float(rng.integers(0, 20)) * 1000, float(rng.integers(25, 70)) * 1000)
        ids = None if k % 2 else np.flatnonzero(rng.random(data.total) < 0.5)
        cases.append((tied, ids, view, int(rng.integers(1, 50))))
    answered = []  # the core's answers: none would mean the twin ran on both sides

    def core(*args: object) -> object:
        found = compiled_boxes(*args)
        answered.append(found is not None)
        return found

    compiled_boxes = walk.compiled_boxes
    monkeypatch.setattr(walk, "compiled_boxes", core)
    compiled = [tables.merged_columns(*case) for case in cases]
    assert answered == [True] * len(cases)
    monkeypatch.setattr(walk, "_walk", None)
    for (columns, meta), case in zip(compiled, cases, strict=True):
        expected_columns, expected_meta = tables.merged_columns(*case)
        assert meta == expected_meta
        assert {k: v.tolist() for k, v in columns.items()} == {
            k: v.tolist() for k, v in expected_columns.items()
        }


@pytest.mark.usefixtures("compiled")
def test_unsorted_intervals_are_left_to_the_reference() -> None:
    start = np.array([5, 1], np.int64)
    assert walk.compiled_depth_rows(start, start + 3) is None
    tied = np.array([1, 1], np.int64)  # equal starts, the shorter first
    assert walk.compiled_depth_rows(tied, np.array([2, 9], np.int64)) is None
    assert walk.compiled_depth_rows(np.zeros(0, np.int64), np.zeros(0, np.int64)) is not None


@pytest.mark.usefixtures("compiled")
def test_wrong_arguments_raise() -> None:
    from gpuprofile.trace import _walk

    column = np.zeros(3, np.int64)
    with pytest.raises(TypeError, match="takes 3 arrays"):
        _walk.cpu_rows(column, column)
    with pytest.raises(ValueError, match="array 1: expected 3 items of 8 bytes"):
        _walk.cpu_rows(column, np.zeros(2, np.int64), np.zeros(3, np.int32))
    with pytest.raises(ValueError, match="array 2: expected 3 items of 4 bytes"):
        _walk.cpu_rows(column, column, np.zeros(3, np.int64))
    with pytest.raises(BufferError):  # an output that cannot be written
        _walk.first_fit(column, column, column, bytes(12))
    with pytest.raises(ValueError, match="array 3"):
        _walk.walk(column, column, column, np.zeros(3, np.int32), np.zeros(3, np.int32))
    lane, times, out = np.zeros(2, np.int32), np.zeros(2), np.zeros(4, np.int64)
    arrays = [lane, lane, times, times, np.zeros(0, np.int64), np.zeros(2, np.int64)]
    outputs = [out, out, np.zeros(4), np.zeros(4), out, np.zeros(2, np.int64)]
    with pytest.raises(TypeError, match="12 arrays and 3 numbers"):
        _walk.overview_boxes(*arrays, *outputs)
    with pytest.raises(ValueError, match="array 2: expected 2 items of 8 bytes"):
        _walk.overview_boxes(*arrays[:2], lane, *arrays[3:], *outputs, 0.0, 1.0, 2)
    with pytest.raises(ValueError, match="0 bins"):
        _walk.overview_boxes(*arrays, *outputs, 0.0, 1.0, 0)
    with pytest.raises(ValueError, match="event 1 out of range"):  # lane 1 of one lane
        _walk.overview_boxes(np.array([0, 1], np.int32), *arrays[1:5], np.zeros(1, np.int64),
                             *outputs, 0.0, 1.0, 2)  # fmt: skip


def _shared_traces() -> list[Path]:
    return sorted(SHARED_KINETO.glob("*.json*")) if SHARED_KINETO.exists() else []


@pytest.mark.usefixtures("compiled")
@pytest.mark.parametrize("path", _shared_traces() or [SHARED_KINETO / "none"], ids=lambda p: p.name)
def test_a_shared_traces_lanes_and_nesting_equal_the_reference(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_trace(path)
    trace = gpuprofile.load(path).trace
    compiled_rows = timeline.timeline_data(trace)
    compiled_nest = nesting.nest(*_op_columns(trace))
    compiled_boxes = _boxes(compiled_rows)
    monkeypatch.setattr(walk, "_walk", None)  # the pure-Python path from here
    monkeypatch.setattr(nesting, "COMPILED", False)  # nest's column operations, not the walk
    reference_rows = timeline.timeline_data(trace)
    assert _boxes(compiled_rows) == compiled_boxes == _boxes(reference_rows)
    assert compiled_rows.row.tolist() == reference_rows.row.tolist()
    assert compiled_rows.source.tolist() == reference_rows.source.tolist()
    assert compiled_rows.kind.tolist() == reference_rows.kind.tolist()
    assert [lane.rows for lane in compiled_rows.lanes] == [
        lane.rows for lane in reference_rows.lanes
    ]
    reference_nest = nesting.nest(*_op_columns(trace))
    assert [a.tolist() for a in compiled_nest] == [a.tolist() for a in reference_nest]


def _op_columns(trace: gpuprofile.Trace) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    ops = trace.ops
    thread = (ops["pid"].to_numpy() << 32) ^ ops["tid"].to_numpy()
    start = ops["start_ns"].to_numpy()
    return thread, start, start + ops["dur_ns"].to_numpy()


def _boxes(data: timeline.TimelineData) -> list[object]:
    """The overview at several bin counts, and a window's merged boxes, as plain lists."""
    span = data.span_ns
    ids = tables.window_ids(data, span * 0.3, span * 0.6)
    found = [tables.merged_columns(data, None, (0.0, span), bins) for bins in (1, 7, 256, 8192)]
    found.append(tables.merged_columns(data, ids, (span * 0.3, span * 0.6), 100))
    return [({k: v.tolist() for k, v in columns.items()}, meta) for columns, meta in found]


# --- the op tree's flagged ancestors (analyses/lookups.py) ----------------------------------


def _forest(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(parent, depth) of a random forest of n rows in shuffled order: a row's parent may come
    before or after it, as over a subset of rows or a merged job."""
    parent_in_build = np.array([-1 if i == 0 or rng.random() < 0.1 else rng.integers(0, i)
                                for i in range(n)], np.int64)  # fmt: skip
    depth_in_build = np.zeros(n, np.int32)
    for i in range(n):
        if parent_in_build[i] >= 0:
            depth_in_build[i] = depth_in_build[parent_in_build[i]] + 1
    place = rng.permutation(n)  # row i of the build is at place[i]
    parent, depth = np.empty(n, np.int64), np.empty(n, np.int32)
    parent[place] = np.where(parent_in_build >= 0, place[np.maximum(parent_in_build, 0)], -1)
    depth[place] = depth_in_build
    return parent, depth


def _climbed(flag: np.ndarray, parent: np.ndarray, outermost: bool) -> list[int]:
    """Each row's answer by climbing to its root, by hand."""
    answers = []
    for i in range(len(flag)):
        chain, at = [], i
        while at >= 0:
            chain.append(at)
            at = int(parent[at])
        flagged = [r for r in chain if flag[r]]
        answers.append((flagged[-1] if outermost else flagged[0]) if flagged else -1)
    return answers


@pytest.mark.usefixtures("compiled")
def test_flagged_ancestors_equal_the_references_and_a_climb_by_hand() -> None:
    rng = np.random.default_rng(11)
    for k in range(60):
        n = int(rng.integers(1, 300))
        parent, depth = _forest(rng, n)
        flag = rng.random(n) < (0.02, 0.3, 0.9)[k % 3]
        for outermost in (True, False):
            core = walk.compiled_flagged_ancestors(flag, parent, outermost=outermost)
            assert core is not None
            assert core.tolist() == _climbed(flag, parent, outermost)
        assert np.array_equal(
            walk.compiled_flagged_ancestors(flag, parent, outermost=True),
            lookups.py_outermost_with(flag, parent),
        )
        assert np.array_equal(
            walk.compiled_flagged_ancestors(flag, parent, outermost=False),
            lookups.py_innermost_everywhere(flag, parent, depth),
        )


@pytest.mark.usefixtures("compiled")
def test_flagged_ancestors_refuse_what_is_no_tree() -> None:
    from gpuprofile.trace import _walk

    flag = np.ones(3, bool)
    for parent in ([1, 2, 0], [0, -1, -1], [-1, 3, 0], [-1, -2, 0]):  # cycles, out of range
        found = np.empty(3, np.int64)
        assert _walk.flagged_ancestors((flag, np.array(parent, np.int64), found), True) is False
    with pytest.raises(ValueError, match="array 1: expected 3 items of 8 bytes"):
        _walk.flagged_ancestors((flag, np.zeros(2, np.int64), np.empty(3, np.int64)), False)
    with pytest.raises(TypeError, match="takes 3 arrays"):
        _walk.flagged_ancestors((flag, np.zeros(3, np.int64)), False)


@pytest.mark.usefixtures("compiled")
@pytest.mark.parametrize("path", _shared_traces() or [SHARED_KINETO / "none"], ids=lambda p: p.name)
def test_a_shared_traces_op_tree_answers_equal_the_reference(path: Path) -> None:
    require_trace(path)
    trace = gpuprofile.load(path).trace
    parent, depth = Analysis(trace).op_parents, trace.ops["depth"].to_numpy()
    rng = np.random.default_rng(5)
    for share in (0.01, 0.3, 0.9):
        flag = rng.random(len(parent)) < share
        # The core itself: lookups' functions would fall back to the references unseen.
        outermost = walk.compiled_flagged_ancestors(flag, parent, outermost=True)
        innermost = walk.compiled_flagged_ancestors(flag, parent, outermost=False)
        assert outermost is not None and innermost is not None
        assert np.array_equal(outermost, lookups.py_outermost_with(flag, parent))
        assert np.array_equal(innermost, lookups.py_innermost_everywhere(flag, parent, depth))
