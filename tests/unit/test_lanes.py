"""Timeline lanes carry rank, device and stream as fields, and one wording of their names."""

from __future__ import annotations

from gpuprofile.report.html_plots import timeline_figure
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


def test_the_bokeh_page_names_lanes_as_the_widget_does() -> None:
    trace = synthetic_trace(100, streams=2, ranks=2, memory_events=0)
    figure, _ = timeline_figure(trace)
    assert figure is not None
    widget = [lane.title for lane in timeline_data(trace).lanes if lane.kind == "gpu"]
    # Bokeh lists categorical factors bottom-up: the first lane is drawn at the top.
    assert list(reversed(figure.y_range.factors)) == widget


def test_the_widget_and_the_snapshot_order_lanes_alike() -> None:
    from gpuprofile.report.snapshot_svg import _lanes

    trace = synthetic_trace(100, streams=2, ranks=2, memory_events=0)
    kind_rank = {"gpu": 0, "cpu": 1, "counter": 2}
    widget = timeline_data(trace).lanes
    # Per rank: GPU streams by (device, stream), then CPU threads, then counters.
    keys = [
        (
            lane.rank,
            kind_rank[lane.kind],
            -1 if lane.device is None else lane.device,
            -1 if lane.stream is None else lane.stream,
        )
        for lane in widget
    ]
    assert keys == sorted(keys)
    # The snapshot's lanes (its busiest few) follow the same order: rank 0's GPU streams and
    # threads before rank 1's.
    labels = [label for label, _, _ in _lanes(trace)[0]]
    ranks = [int(label.split(" · ")[0].removeprefix("rank ")) for label in labels]
    kinds = [0 if " · GPU " in label else 1 for label in labels]
    assert list(zip(ranks, kinds, strict=True)) == sorted(zip(ranks, kinds, strict=True))
    assert set(ranks) == {0, 1}


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
