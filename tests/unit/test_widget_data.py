"""The widget's wire format and timeline layout (no browser: that is tests/ui)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gpuprofile
from gpuprofile.trace.meta import RankMeta, TraceMeta
from gpuprofile.trace.model import Trace, make_table
from gpuprofile.trace.nesting import nest
from gpuprofile.widget import tables, timeline
from gpuprofile.widget.encoding import decode_meta, decode_table, encode_table, smallest_uint
from gpuprofile.widget.tables import merged_columns, overview_columns, segment_columns
from gpuprofile.widget.timeline import KIND_TABLES, KINDS, timeline_data
from gpuprofile.widget.widget import make_widget
from helpers.kineto_docs import cpu_op, document, kernel, runtime, write
from helpers.synthetic import synthetic_trace


def test_round_trip_keeps_values_meta_and_alignment() -> None:
    rng = np.random.default_rng(1)
    columns = {
        "start_ns": rng.random(7) * 1e9,
        "dur_ns": rng.random(7).astype(np.float32),
        "name": rng.integers(0, 100, 7).astype(np.uint32),
        "lane": rng.integers(0, 5, 7).astype(np.uint16),
        "kind": rng.integers(0, 3, 7).astype(np.uint8),
    }
    meta = {"segments": [[0, 0, 3], [2, 3, 4]], "merged": False, "view": [0.0, 1e9]}
    data = encode_table(columns, meta)
    decoded = decode_table(data)
    assert list(decoded) == list(columns)
    for name, values in columns.items():
        assert decoded[name].dtype == values.dtype
        np.testing.assert_array_equal(decoded[name], values)
    assert decode_meta(data) == meta
    header_len = int.from_bytes(data[4:8], "little")
    header = json.loads(data[8 : 8 + header_len])
    assert all(spec["offset"] % 8 == 0 for spec in header["columns"])
    assert decode_meta(encode_table(columns)) == {}  # no meta: an empty one


def test_empty_table_and_bad_input() -> None:
    decoded = decode_table(encode_table({"x": np.empty(0, np.float64)}))
    assert len(decoded["x"]) == 0
    with pytest.raises(ValueError, match="bad magic"):
        decode_table(b"JSON")
    with pytest.raises(ValueError, match="dtype"):
        encode_table({"x": np.array(["a"], dtype=object)})
    with pytest.raises(ValueError, match="differ in length"):
        encode_table({"a": np.zeros(2), "b": np.zeros(3)})
    with pytest.raises(ValueError):  # the browser's JSON.parse has no NaN
        encode_table({"a": np.zeros(1)}, {"x": float("nan")})


@pytest.mark.parametrize(
    ("largest", "dtype"),
    [(0, np.uint8), (254, np.uint8), (255, np.uint16), (65534, np.uint16), (65535, np.uint32)],
)
def test_smallest_uint_keeps_the_top_value_free(largest: int, dtype: type) -> None:
    assert smallest_uint(largest) is dtype


def _kernels_trace(names: list[str], start: np.ndarray, dur: np.ndarray) -> Trace:
    n = len(names)
    kernels = make_table(
        "kernels",
        {
            "id": np.arange(n),
            "rank": np.zeros(n),
            "device": np.zeros(n),
            "stream": np.full(n, 7),
            "name": names,
            "start_ns": start,
            "dur_ns": dur,
        },
    )
    return Trace(kernels=kernels, meta=TraceMeta(ranks={0: RankMeta()}))


def test_columns_widen_with_many_names_and_rows() -> None:
    few = timeline_data(_kernels_trace(["a", "b"], np.array([0, 10]), np.array([5, 5])))
    columns, _ = segment_columns(few, np.arange(few.total), (0, few.span_ns))
    assert columns["name"].dtype == np.uint16 and columns["row"].dtype == np.uint8

    n = 70_000  # more names than uint16 holds
    many = timeline_data(
        _kernels_trace([f"k{i}" for i in range(n)], np.arange(n) * 10, np.full(n, 5))
    )
    columns, _ = segment_columns(many, np.arange(many.total), (0, many.span_ns))
    assert len(many.names) == n and columns["name"].dtype == np.uint32
    assert sorted(many.names[i] for i in columns["name"]) == sorted(f"k{i}" for i in range(n))

    # 300 kernels all running at once on one stream need 300 rows.
    stacked = timeline_data(_kernels_trace(["a"] * 300, np.arange(300), np.full(300, 1000)))
    columns, _ = segment_columns(stacked, np.arange(stacked.total), (0, stacked.span_ns))
    assert columns["row"].dtype == np.uint16
    assert sorted(columns["row"].tolist()) == list(range(300))


def test_timeline_lanes_rows_and_names(tmp_path: Path) -> None:
    path = write(
        tmp_path / "t.json",
        document(
            [
                cpu_op("outer", 0, 100, ext=1),
                cpu_op("inner", 10, 20, ext=2),
                runtime("cudaLaunchKernel", 12, 3, corr=1),
                kernel("a", 20, 30, corr=1),
                kernel("b", 30, 10, corr=2),  # overlaps "a" on the same stream: a second row
                kernel("c", 60, 10, corr=3),
                kernel("<img src=x onerror=alert(1)>", 80, 1, corr=4, stream=9),
            ]
        ),
    )
    data = timeline_data(gpuprofile.load(path).trace)
    # GPU streams first, then CPU threads (as Nsight Systems lays them out).
    assert [(lane.group, lane.label) for lane in data.lanes] == [
        ("GPU 0", "stream 7"),
        ("GPU 0", "stream 9"),
        ("CPU", "thread 1"),
    ]
    assert [lane.kind for lane in data.lanes] == ["gpu", "gpu", "cpu"]
    assert [lane.rows for lane in data.lanes] == [2, 1, 3]
    assert [lane.id for lane in data.lanes] == [0, 1, 2]
    names = [data.names[i] for i in data.name]
    rows = dict(zip(names, data.row.tolist(), strict=True))
    assert rows["outer"] == 0 and rows["inner"] == 1 and rows["cudaLaunchKernel"] == 2
    assert rows["a"] == 0 and rows["b"] == 1 and rows["c"] == 0
    assert KINDS[data.kind[names.index("cudaLaunchKernel")]] == "runtime"
    assert [KINDS[data.name_kinds[data.name[i]]] for i in range(data.total)] == [
        KINDS[k] for k in data.kind
    ]
    # Global ids: sorted by lane, then start; times are offsets from the trace start.
    order = np.lexsort((data.start, data.lane))
    np.testing.assert_array_equal(order, np.arange(len(order)))
    assert data.start[names.index("c")] == 60_000
    assert "<img src=x onerror=alert(1)>" in data.names  # carried as data; the view sets text


def test_groups_per_rank_are_contiguous_and_in_order() -> None:
    # Per rank: its GPU streams first, then its CPU threads, then its counters.
    trace = synthetic_trace(50, ranks=2, streams=2)
    data = timeline_data(trace)
    groups = [lane.group for lane in data.lanes]
    assert groups == [
        "rank 0 · GPU 0", "rank 0 · GPU 0", "rank 0 · CPU", "rank 0 · counters",
        "rank 1 · GPU 0", "rank 1 · GPU 0", "rank 1 · CPU", "rank 1 · counters",
    ]  # fmt: skip
    assert [lane.rank for lane in data.lanes] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert [lane.stream for lane in data.lanes[:4]] == [7, 8, None, None]
    # Every event sits in a lane of its own rank.
    for kind, table in enumerate(KIND_TABLES):
        rows = np.flatnonzero(data.kind == kind)
        lane_rank = np.array([data.lanes[lane].rank for lane in data.lane[rows]])
        expected = trace.table(table)["rank"].to_numpy()[data.source[rows]]
        np.testing.assert_array_equal(lane_rank, expected)


def _frames(rng: np.random.Generator, t0: int, t1: int, depth: int, out: list) -> None:
    """Call frames inside [t0, t1): one after another, each with its own children."""
    t = t0
    while t < t1 and depth < 6:
        start = t + int(rng.integers(0, 3))  # 0: a child starting with its parent
        end = min(t1, start + int(rng.integers(0, (t1 - t0) // 2 + 2)))
        if start > end:
            break
        out.append((start, end))
        if end - start > 4:
            _frames(rng, start, end, depth + 1, out)
        t = end + int(rng.integers(0, 3))


def _ops(threads: list[tuple[int, list[tuple[int, int]]]]) -> pd.DataFrame:
    tids = [tid for tid, frames in threads for _ in frames]
    frames = [f for _, fs in threads for f in fs]
    k = len(frames)
    return make_table(
        "ops",
        {
            "id": np.arange(k),
            "rank": np.zeros(k),
            "pid": np.ones(k),
            "tid": np.asarray(tids),
            "name": ["op"] * k,
            "start_ns": np.asarray([s for s, _ in frames]),
            "dur_ns": np.asarray([e - s for s, e in frames]),
        },
    )


def test_cpu_rows_are_call_depths_and_never_overlap() -> None:
    rng = np.random.default_rng(3)
    nested: list[tuple[int, int]] = []
    _frames(rng, 0, 200_000, 0, nested)
    loose = [
        (s, s + int(d)) for s, d in zip(rng.integers(0, 10**5, 3000), rng.integers(0, 500, 3000))
    ]
    ops = _ops([(1, nested), (2, loose)])
    data = timeline_data(Trace(ops=ops, meta=TraceMeta(ranks={0: RankMeta()})))
    assert len(nested) > 1000 and max(lane.rows for lane in data.lanes) > 3
    starts = ops["start_ns"].to_numpy()
    ends = starts + ops["dur_ns"].to_numpy()
    tids = ops["tid"].to_numpy()
    # Frames that nest: the depth of nest()'s call-stack walk, the reference.
    _, depth = nest(tids, starts, ends)
    rows = np.empty(len(ops), np.int64)
    rows[data.source] = data.row
    np.testing.assert_array_equal(rows[tids == 1], depth[tids == 1])
    # Events that overlap any which way: still never two overlapping on one row.
    _assert_rows_disjoint(data)


def test_gpu_rows_separate_overlapping_kernels() -> None:
    data = timeline_data(synthetic_trace(5000, streams=3, overlap_every=7))
    gpu = np.isin(data.kind, [2, 3, 4])
    assert data.row[gpu].max() >= 1
    _assert_rows_disjoint(data)


def _assert_rows_disjoint(data: timeline.TimelineData) -> None:
    """No two events of one lane row overlap (touching is fine)."""
    order = np.lexsort((data.start, data.row, data.lane))
    lane, row = data.lane[order], data.row[order]
    start, end = data.start[order], data.end[order]
    same = (lane[1:] == lane[:-1]) & (row[1:] == row[:-1])
    assert not (same & (start[1:] < end[:-1])).any()


def test_segment_table_of_a_million_kernels_is_at_most_16_bytes_per_event() -> None:
    data = timeline_data(synthetic_trace(1_000_000))
    ids = np.arange(data.total)
    table = encode_table(*segment_columns(data, ids, (0, data.span_ns)))
    assert data.total > 3_000_000
    assert len(table) / data.total <= 16
    decoded, meta = decode_table(table), decode_meta(table)
    assert sum(count for _, _, count in meta["segments"]) == data.total
    # Row j of a segment is the event first_id + j.
    _, first, count = meta["segments"][1]
    np.testing.assert_array_equal(
        decoded["start_ns"][first : first + count], data.start[first : first + count]
    )
    assert all(data.lane[first] == lane_id for lane_id, first, _ in meta["segments"])


def test_overview_of_a_large_trace_is_merged_and_bounded() -> None:
    data = timeline_data(synthetic_trace(300_000))
    assert data.total > tables.DETAIL_THRESHOLD
    table = encode_table(*overview_columns(data))
    decoded, meta = decode_table(table), decode_meta(table)
    assert meta["merged"] is True and meta["view"] == [0.0, data.span_ns]
    lane_rows = sum(lane.rows for lane in data.lanes if lane.kind != "counter")
    # At most one box per bin and lane row, plus events longer than a bin (at most as many
    # again per row: they do not overlap within a row).
    assert len(decoded["count"]) <= 2 * tables.OVERVIEW_BINS * lane_rows
    assert len(decoded["count"]) < data.total / 10
    assert int(decoded["count"].sum()) == data.total
    assert all(first == -1 for _, first, _ in meta["segments"])
    # Per lane, rows run by start.
    at = 0
    for _, _, count in meta["segments"]:
        assert (np.diff(decoded["start_ns"][at : at + count]) >= 0).all()
        at += count


def test_merged_boxes_cover_every_member() -> None:
    data = timeline_data(synthetic_trace(2000, streams=2))
    ids = np.arange(data.total)
    columns, meta = merged_columns(data, ids, (0.0, data.span_ns), 64)
    lanes = np.repeat([s[0] for s in meta["segments"]], [s[2] for s in meta["segments"]])
    box_start = columns["start_ns"]
    box_end = box_start + columns["dur_ns"].astype(np.float64)
    width = data.span_ns / 64
    for gid in range(0, data.total, 7):
        mine = (lanes == data.lane[gid]) & (columns["row"] == data.row[gid])
        covered = mine & (box_start <= data.start[gid]) & (box_end >= data.end[gid] - 1)
        assert covered.any(), gid
    # Events longer than a bin are shown as themselves.
    long = np.flatnonzero(data.end - data.start >= width)
    assert (columns["count"] == 1).sum() >= len(long)
    # Every box names one of the trace's names (an index into the name table).
    assert (columns["name"] < len(data.names)).all()


def test_counters_hold_memory_in_use_and_sampled_gauges() -> None:
    base = synthetic_trace(100, memory_events=10)
    n = 10_000
    counters = make_table(
        "counters",
        {
            "rank": np.zeros(n),
            "name": ["SM clock"] * n,
            "unit": ["MHz"] * n,
            "device": np.zeros(n),
            "time_ns": np.arange(n) * 40,
            "value": (np.arange(n) % 997).astype(float),
        },
    )
    trace = Trace(
        ops=base.ops, kernels=base.kernels, runtime=base.runtime, memory=base.memory,
        counters=counters, meta=base.meta,
    )  # fmt: skip
    data = timeline_data(trace)
    lanes = [lane for lane in data.lanes if lane.kind == "counter"]
    assert [lane.label for lane in lanes] == ["memory in use · GPU 0", "SM clock · GPU 0"]
    assert [lane.unit for lane in lanes] == ["B", "MHz"]
    table = encode_table(*tables.counter_columns(data))
    decoded, meta = decode_table(table), decode_meta(table)
    (memory_lane, _, n_memory), (clock_lane, _, n_clock) = meta["segments"]
    assert (memory_lane, clock_lane) == (lanes[0].id, lanes[1].id)
    memory = base.memory.sort_values("time_ns")
    np.testing.assert_array_equal(decoded["value"][:n_memory], memory["total_allocated"])
    np.testing.assert_array_equal(decoded["time_ns"][:n_memory], memory["time_ns"])
    assert lanes[0].max == memory["total_allocated"].max()
    clock = decoded["value"][n_memory:]
    assert n_clock <= tables.COUNTER_POINTS
    assert clock.max() == 996 and lanes[1].max == 996 and lanes[1].min == 0
    assert (np.diff(decoded["time_ns"][n_memory:]) > 0).all()


def test_widget_traits_for_a_small_trace(tmp_path: Path) -> None:
    path = write(
        tmp_path / "t.json",
        document([kernel("a", 0, 5, corr=1), kernel("<b>bold</b>", 6, 1, corr=2)]),
    )
    widget = gpuprofile.load(path).widget()
    assert isinstance(widget.events, bytes) and widget.events[:4] == b"GPT1"
    assert widget.summary["ranks"][0]["counts"]["kernels"] == 2
    assert widget.span_ns == 7000.0
    assert widget.total_events == 2 and widget.complete is True
    assert widget.kinds == list(KINDS)
    meta = decode_meta(widget.events)
    assert meta["merged"] is False and meta["segments"] == [[0, 0, 2]]
    assert "<b>bold</b>" in widget.names
    assert [KINDS[k] for k in widget.name_kinds] == ["kernel", "kernel"]
    assert decode_table(widget.counters)["time_ns"].size == 0
    assert decode_table(widget.marks)["id"].dtype == np.uint32


def test_make_widget_without_analysis_still_marks() -> None:
    trace = synthetic_trace(200)
    widget = make_widget(None, trace)
    assert widget.complete
    # Spelt out, not the widget's own table list: ops, runtime calls and kernels (the
    # synthetic trace has no copies or memsets).
    assert widget.total_events == len(trace.ops) + len(trace.runtime) + len(trace.kernels)
    assert decode_meta(widget.marks).get("groups", []) == []


def test_the_overview_stays_within_its_budget_however_many_lane_rows() -> None:
    # 8 ranks x 8 streams: ~150 lane rows, each of which would take up to 8192 boxes alone.
    data = timeline_data(synthetic_trace(60_000, ranks=8, streams=8))
    lane_rows = sum(lane.rows for lane in data.lanes if lane.kind != "counter")
    assert lane_rows * tables.OVERVIEW_BINS > 4 * tables.OVERVIEW_BOXES
    columns, meta = overview_columns(data)
    assert meta["merged"] and meta["bins"] == tables.OVERVIEW_BOXES // lane_rows
    # A row holds at most one merged box per bin plus events longer than a bin (which cannot
    # overlap within a row, so at most one per bin either).
    assert len(columns["start_ns"]) <= 2 * meta["bins"] * lane_rows
    assert int(columns["count"].sum()) == data.total  # every event is in some box
    assert len(encode_table(columns, meta)) < 8 * 2**20


def _host_frame_around_kernels(kernel_span_ns: int) -> Trace:
    """A 10 s host frame (a JAX profile's start_trace) and two kernels inside it."""
    ops = make_table(
        "ops",
        {"id": [0], "rank": [0], "name": ["start_trace"], "category": ["python_function"],
         "start_ns": [0], "dur_ns": [10_000_000_000]},
    )  # fmt: skip
    start = 9_000_000_000
    kernels = make_table(
        "kernels",
        {"id": [0, 1], "rank": [0, 0], "device": [0, 0], "stream": [7, 7], "name": ["a", "b"],
         "start_ns": [start, start + kernel_span_ns - 1_000], "dur_ns": [1_000, 1_000]},
    )  # fmt: skip
    return Trace(ops=ops, kernels=kernels, meta=TraceMeta(ranks={0: RankMeta()}))


def test_the_timeline_opens_on_the_gpu_work_when_it_is_a_sliver_of_the_trace() -> None:
    from gpuprofile.widget.timeline import OPENING_MARGIN, opening_view

    sliver = timeline_data(_host_frame_around_kernels(10_000_000))
    margin = OPENING_MARGIN * 10_000_000
    assert opening_view(sliver) == [9_000_000_000 - margin, 9_010_000_000 + margin]
    # GPU work over a tenth of the trace or more: the whole trace, as before.
    assert opening_view(timeline_data(_host_frame_around_kernels(1_000_000_000))) == []
    cpu_only = make_table("ops", {"id": [0], "rank": [0], "name": ["cpu"], "dur_ns": [5]})
    assert opening_view(timeline_data(Trace(ops=cpu_only, meta=TraceMeta()))) == []
