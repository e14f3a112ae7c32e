"""Timeline lanes carry rank, device and stream as fields, and one wording of their names."""

from __future__ import annotations

from gpuprofile.report.html_plots import timeline_figure
from gpuprofile.trace.meta import RankMeta, TraceMeta
from gpuprofile.trace.model import Trace, make_table
from gpuprofile.widget.timeline import timeline_data
from helpers.synthetic import synthetic_trace


def test_a_job_s_lanes_carry_their_fields_and_names_without_parsing() -> None:
    trace = synthetic_trace(200, streams=2, ranks=2, memory_events=0)
    lanes = timeline_data(trace).lanes
    gpu = [lane for lane in lanes if lane.kind == "gpu"]
    # One lane per (rank, device, stream) of the kernels table, in that order.
    expected = sorted(
        set(
            zip(
                trace.kernels["rank"], trace.kernels["device"], trace.kernels["stream"], strict=True
            )
        )
    )
    assert [(lane.rank, lane.device, lane.stream) for lane in gpu] == expected
    for lane in gpu:
        rank, device, stream = lane.rank, lane.device, lane.stream
        # The header under the rank says the group alone; the title says all of it.
        assert lane.group_label == f"GPU {device}"
        assert lane.label == f"stream {stream}"
        assert lane.title == f"rank {rank} · GPU {device} · stream {stream}"
    for lane in lanes:
        assert "rank" not in lane.group_label
    # Groups of different ranks stay apart (collapsing one keeps the other open).
    keys = {(lane.rank, lane.group_label): lane.group for lane in lanes}
    assert len(set(keys.values())) == len(keys)


def test_one_rank_s_lanes_do_not_name_the_rank() -> None:
    trace = synthetic_trace(50, streams=2, memory_events=0)
    gpu = [lane for lane in timeline_data(trace).lanes if lane.kind == "gpu"]
    assert [lane.title for lane in gpu] == [
        f"GPU {lane.device} · stream {lane.stream}" for lane in gpu
    ]
    assert all(lane.group == lane.group_label for lane in gpu)


def _two_ranks_by_hand() -> Trace:
    """Per rank: kernels on device 1 stream 7 and device 0 stream 20, ops on threads 31 and 5
    of one process; rows written out of order (rank 1 first, the later lane first)."""
    lanes = [(1, 1, 7), (1, 0, 20), (0, 1, 7), (0, 0, 20)]  # (rank, device, stream)
    kernels = make_table(
        "kernels",
        {"id": range(4), "rank": [r for r, _, _ in lanes], "device": [d for _, d, _ in lanes],
         "stream": [s for _, _, s in lanes], "name": ["k"] * 4, "start_ns": [0, 10, 20, 30],
         "dur_ns": [5] * 4},
    )  # fmt: skip
    threads = [(1, 31), (1, 5), (0, 31), (0, 5)]  # (rank, tid)
    ops = make_table(
        "ops",
        {"id": range(4), "rank": [r for r, _ in threads], "pid": [100] * 4,
         "tid": [t for _, t in threads], "name": ["op"] * 4, "category": ["cpu_op"] * 4,
         "start_ns": [0, 10, 20, 30], "dur_ns": [5] * 4},
    )  # fmt: skip
    meta = TraceMeta(ranks={0: RankMeta(), 1: RankMeta()})
    return Trace(kernels=kernels, ops=ops, meta=meta)


def test_every_view_orders_lanes_as_the_widget_ranks_then_gpu_streams_then_threads() -> None:
    """The one lane order (report/lanes.py), read from each view's own output: per rank, GPU
    streams by device then stream (numerically: 7 after 20 on a later device), then CPU threads
    by tid (5 before 31)."""
    import msgspec

    from gpuprofile.report.chrome_trace import trace_events
    from gpuprofile.report.snapshot_svg import _lanes

    trace = _two_ranks_by_hand()
    expected = [
        "rank 0 · GPU 0 · stream 20",
        "rank 0 · GPU 1 · stream 7",
        "rank 0 · CPU · thread 5",
        "rank 0 · CPU · thread 31",
        "rank 1 · GPU 0 · stream 20",
        "rank 1 · GPU 1 · stream 7",
        "rank 1 · CPU · thread 5",
        "rank 1 · CPU · thread 31",
    ]
    assert [lane.title for lane in timeline_data(trace).lanes] == expected
    assert [label for label, _, _ in _lanes(trace)[0]] == expected
    figure, _ = timeline_figure(trace)
    assert figure is not None
    # Bokeh lists categorical factors bottom-up: the first lane is drawn at the top.
    assert list(reversed(figure.y_range.factors)) == [t for t in expected if "GPU" in t]

    events = [msgspec.json.decode(e) for e in trace_events(trace)]
    meta = {(e["name"], e["pid"], e["tid"]): e["args"] for e in events if e["ph"] == "M"}
    assert {pid: args["sort_index"] for (name, pid, _), args in meta.items()
            if name == "process_sort_index"} == {0: 0, 1: 1}  # fmt: skip
    for rank in (0, 1):
        tids = [tid for name, pid, tid in meta if name == "thread_name" and pid == rank]
        shown = sorted(tids, key=lambda tid: meta[("thread_sort_index", rank, tid)]["sort_index"])
        assert [meta[("thread_name", rank, tid)]["name"] for tid in shown] == [
            "GPU 0 stream 20", "GPU 1 stream 7", "thread 5", "thread 31",
        ]  # fmt: skip


def test_the_snapshot_names_cpu_threads_as_the_widget_does() -> None:
    """Threads the trace names ("pid/tid" -> name in the rank's meta) read the same in the
    snapshot as in the widget, and two processes' threads of one id stay two lanes."""
    from dataclasses import replace

    import msgspec

    from gpuprofile.report.snapshot_svg import _lanes

    trace = synthetic_trace(40, streams=1, memory_events=0)
    ops = trace.ops.copy()
    ops.loc[ops.index[: len(ops) // 2], "pid"] = 7  # the same tid in a second process
    tid = int(ops["tid"].iloc[0])
    named = msgspec.structs.replace(
        trace.meta.ranks[0], thread_names={f"7/{tid}": "pt_main_thread"}
    )
    trace = replace(trace, ops=ops).with_meta(ranks={**trace.meta.ranks, 0: named})
    widget = {lane.title for lane in timeline_data(trace).lanes if lane.kind == "cpu"}
    snapshot = {label for label, _, _ in _lanes(trace)[0] if label.startswith("CPU")}
    assert len(widget) == 2 and "CPU · pt_main_thread" in widget
    assert snapshot == widget
