"""The live feed that carries a running cell's readings to its widget."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch

import gpuprofile
from gpuprofile.importers.kineto import load_kineto
from gpuprofile.trace.merge import merge
from gpuprofile.trace.meta import Window
from gpuprofile.trace.model import Trace
from gpuprofile.trace.samples import Reading
from gpuprofile.widget.live import LiveFeed, WindowRefills
from helpers.kineto_docs import document, kernel, memcpy, write
from helpers.synthetic import synthetic_trace

CPU = Reading("process CPU", "%", -1, 50.0)


def wait_until(done: Callable[[], bool], timeout: float = 10) -> None:
    """Poll until done() or the timeout; the assertions after it say what did not happen."""
    deadline = time.monotonic() + timeout
    while not done() and time.monotonic() < deadline:
        time.sleep(0.005)


def test_updates_are_spaced_and_stop_when_the_cell_ends() -> None:
    widget = SimpleNamespace(live={})
    feed = LiveFeed(widget, min_gap_s=0.05)
    feed.start()
    assert widget.live["running"] is True and widget.live["readings"] == []
    feed(1, [CPU], {"nvml": "no driver"})
    first = widget.live
    assert first["readings"] == [{"name": "process CPU", "unit": "%", "device": -1, "value": 50.0}]
    assert first["missing"] == {"nvml": "no driver"}
    feed(2, [Reading("process CPU", "%", -1, 60.0)], {})  # too soon: dropped
    assert widget.live is first
    time.sleep(0.06)
    feed(3, [Reading("process CPU", "%", -1, 70.0)], {})
    assert widget.live["readings"][0]["value"] == 70.0
    assert widget.live["elapsed_s"] >= first["elapsed_s"]
    feed.finish()
    assert widget.live["running"] is False and widget.live["readings"][0]["value"] == 70.0
    time.sleep(0.06)
    feed(4, [CPU], {})  # a late reading after the end changes nothing
    assert widget.live["running"] is False and widget.live["readings"][0]["value"] == 70.0


def test_the_panel_says_building_until_the_profile_is_made_and_times_the_code_only() -> None:
    widget = SimpleNamespace(live={})
    feed = LiveFeed(widget, min_gap_s=0.0)
    feed.start()
    time.sleep(0.05)
    before_end = time.monotonic()
    feed.cell_ended()
    after_end = time.monotonic()
    building = widget.live
    assert building["running"] is False and building["building"] is True
    feed(1, [CPU], {})  # the sampler reads on while the profile is built: not shown
    feed.set_steps(9)
    assert widget.live is building
    time.sleep(0.2)  # building the profile
    feed.finish()
    assert widget.live["building"] is False and widget.live["running"] is False
    # The elapsed time is the code's, not the code's plus the profile's building.
    assert widget.live["elapsed_s"] == building["elapsed_s"]
    assert 0.05 <= building["elapsed_s"] <= 0.05 + (after_end - before_end) + 0.1
    assert widget.live["steps"] == 9


def test_a_gauge_missing_from_a_sample_keeps_its_last_value() -> None:
    widget = SimpleNamespace(live={})
    feed = LiveFeed(widget, min_gap_s=0.0)
    feed.start()
    rss = Reading("process RSS", "B", -1, 1e9)
    feed(1, [CPU, rss], {})
    feed(2, [Reading("process RSS", "B", -1, 2e9)], {})  # no CPU share in this sample
    assert [(r["name"], r["value"]) for r in widget.live["readings"]] == [
        ("process CPU", 50.0),
        ("process RSS", 2e9),
    ]


def test_steps_move_the_panel_and_keep_the_last_readings() -> None:
    widget = SimpleNamespace(live={})
    feed = LiveFeed(widget, min_gap_s=0.0)
    feed.start()
    feed(1, [CPU], {})
    feed.set_steps(3)
    assert widget.live["steps"] == 3 and widget.live["readings"][0]["value"] == 50.0
    feed.finish()
    assert widget.live["steps"] == 3 and widget.live["running"] is False


def test_readings_reach_the_panel_while_steps_come_every_millisecond() -> None:
    # A training loop marks a step every millisecond or so; the sampler reads every 0.1 s.
    # Every reading must reach the panel, not only those that beat the steps to the gap.
    widget = SimpleNamespace(live={})
    feed = LiveFeed(widget, min_gap_s=0.05)
    feed.start()
    shown = []
    step = 0
    for reading in range(6):
        feed(reading, [Reading("process CPU", "%", -1, float(reading))], {})
        shown.append(widget.live["readings"][0]["value"])
        deadline = time.monotonic() + 0.06
        while time.monotonic() < deadline:
            step += 1
            feed.set_steps(step)
            time.sleep(0.001)
    assert shown == [float(r) for r in range(6)]
    assert 0 < widget.live["steps"] <= step
    feed.finish()
    assert widget.live["steps"] == step


def window(index: int, kernels: int = 10) -> Trace:
    """A recorded window: ``kernels`` kernels, placed in time by its own origin."""
    trace = synthetic_trace(kernels, memory_events=0, seed=index)
    return trace.with_meta(
        origin_ns=index * 1_000_000_000, windows=(Window(index=index, start_ns=0, end_ns=0),)
    )


def indexes(trace: Trace) -> list[int]:
    return [w.index for w in trace.meta.windows]


def test_windows_are_shown_off_the_callers_thread_and_coalesce() -> None:
    release, filling = threading.Event(), threading.Event()
    fills: list[tuple[str, list[int], int]] = []

    def fill(trace: Trace) -> None:
        filling.set()
        release.wait(10)
        fills.append((threading.current_thread().name, indexes(trace), len(trace.kernels)))

    refills = WindowRefills(fill, merge, busy_share=1.0)
    refills.add(window(0))
    assert filling.wait(10)
    # The first refill is blocked in fill(): adding more windows does not wait for it.
    for index in range(1, 5):
        refills.add(window(index))
    assert fills == []
    release.set()
    wait_until(lambda: bool(fills) and fills[-1][1] == [0, 1, 2, 3, 4])
    refills.close()
    # Windows that came during a refill went into the next one together: fewer refills than
    # windows, and the last shows all of them, each once.
    assert [f[1] for f in fills] == [[0], [0, 1, 2, 3, 4]]
    assert fills[-1][2] == 5 * 10
    assert all(name == "gpuprofile-live-windows" for name, _, _ in fills)
    assert refills.refills == 2 and refills.errors == []


def test_refills_rest_so_they_take_a_bounded_share_of_the_time() -> None:
    spans: list[tuple[float, float]] = []

    def fill(trace: Trace) -> None:
        started = time.monotonic()
        time.sleep(0.05)
        spans.append((started, time.monotonic()))

    share = 0.25
    refills = WindowRefills(fill, merge, busy_share=share)
    for index in range(3):
        refills.add(window(index))
        wait_until(lambda index=index: len(spans) > index)
    refills.close()
    assert len(spans) == 3
    # After a refill of d seconds the next starts no sooner than d * (1 - share) / share later.
    for (start, end), (next_start, _) in itertools.pairwise(spans):
        assert next_start - end >= (end - start) * (1 - share) / share


def test_closing_ends_a_rest_at_once() -> None:
    fills: list[list[int]] = []
    refills = WindowRefills(
        lambda trace: (time.sleep(0.2), fills.append(indexes(trace))), merge, 0.01
    )
    refills.add(window(0))
    wait_until(lambda: bool(fills))
    refills.add(window(1))  # arrives during a ~20 s rest
    started = time.monotonic()
    refills.close()
    assert time.monotonic() - started < 5
    assert fills == [[0]]  # window 1 waited for a refill that closing cancelled


def test_a_failing_refill_is_reported_in_the_panel_and_later_ones_still_run() -> None:
    widget = SimpleNamespace(live={})
    feed = LiveFeed(widget, busy_share=1.0, read=merge)
    feed.start()
    calls: list[list[int]] = []

    def fill(trace: Trace) -> None:
        calls.append(indexes(trace))
        if len(calls) == 1:
            raise RuntimeError("no room")

    feed.refills = WindowRefills(fill, merge, busy_share=1.0)
    feed.show_window(window(0), None)
    wait_until(lambda: bool(calls))
    feed.show_window(window(1), None)
    wait_until(lambda: len(calls) >= 2)
    feed.finish()
    # The failed refill did not become the shown state: the next one merged both windows.
    assert calls == [[0], [0, 1]]
    assert widget.live["running"] is False
    assert widget.live["errors"] == ["showing recorded steps: RuntimeError: no room"]


def test_a_live_feed_fills_its_widget_with_the_windows_analysed() -> None:
    from gpuprofile.widget.widget import ProfileWidget

    widget = ProfileWidget()
    feed = LiveFeed(widget, read=merge)
    feed.start()
    windows = [window(0, kernels=7), window(1, kernels=5)]
    # Every timeline event of both windows, counted on the windows themselves.
    expected = sum(len(w.ops) + len(w.runtime) + len(w.kernels) for w in windows)
    for recorded in windows:
        feed.show_window(recorded, None)
    wait_until(lambda: widget.total_events >= expected, timeout=30)
    feed.finish()
    assert widget.total_events == expected
    assert widget.summary["hints"] is not None


def test_merged_windows_keep_every_kernel_linked_to_its_own_op() -> None:
    first, second = window(0, kernels=30), window(1, kernels=20)
    # Names the first window never saw: categories differ between the windows.
    second.kernels["name"] = second.kernels["name"].cat.rename_categories(lambda n: f"v2 {n}")
    merged = merge([second, first])  # out of order: placed by their origins
    kernels, ops = merged.kernels, merged.ops.set_index("id")
    assert len(kernels) == 50 and ops.index.is_unique and kernels["id"].is_unique
    # In the synthetic layout each kernel starts 3000 ns after the op that launched it.
    launched = ops.loc[kernels["op_id"].to_numpy(), "start_ns"].to_numpy()
    np.testing.assert_array_equal(launched, kernels["start_ns"].to_numpy() - 3000)
    assert kernels["start_ns"].is_monotonic_increasing  # second window after the first
    names = kernels["name"].astype(str)
    assert names.iloc[:30].tolist() == first.kernels["name"].astype(str).tolist()
    assert names.iloc[30:].tolist() == second.kernels["name"].astype(str).tolist()
    assert names.iloc[30:].str.startswith("v2 ").all()


def test_a_window_after_the_cells_end_starts_no_refill() -> None:
    # torch hands over the last window when the profiler stops, after the cell's code ended.
    feed = LiveFeed(SimpleNamespace(live={}), read=merge)
    feed.start()
    feed.cell_ended()
    feed.show_window(window(0), None)
    assert feed.refills is None
    assert not [t for t in threading.enumerate() if t.name == "gpuprofile-live-windows"]
    feed.finish()


def test_windows_merge_when_only_some_have_copies(tmp_path: Path) -> None:
    # A GPU run's windows differ in which tables they fill: one has a host-to-device copy,
    # the next none (its memcpy table is empty, with categories of another dtype).
    with_copy = document([kernel("k", 10.0, 5.0, corr=1), memcpy("HtoD", 20.0, 4.0, 4096)])
    without = document([kernel("k", 10.0, 5.0, corr=1)])
    parts = [
        load_kineto(write(tmp_path / f"w{i}.json", doc)).with_meta(origin_ns=i * 10**9)
        for i, doc in enumerate([with_copy, without, with_copy])
    ]
    merged = merge(parts)
    assert len(merged.kernels) == 3 and len(merged.memcpy) == 2
    assert merged.memcpy["kind"].astype(str).tolist() == ["HtoD", "HtoD"]
    assert merged.memcpy["start_ns"].tolist() == [
        c.meta.origin_ns - parts[0].meta.origin_ns + int(c.memcpy["start_ns"].iloc[0])
        for c in (parts[0], parts[2])
    ]


def test_live_refills_never_run_while_a_window_records() -> None:
    # A refill is Python work holding the interpreter: overlapping a recorded window, it would
    # slow down the very steps being measured. Refills here are slow (50 ms) and windows
    # short (two steps of a few matmuls), so without the hold they would overlap.
    from gpuprofile.capture.options import CaptureOptions
    from gpuprofile.capture.session import capture
    from gpuprofile.importers.windows import read_windows

    busy: list[tuple[int, int]] = []

    def fill(trace: Trace) -> None:
        started = time.time_ns()
        deadline = time.monotonic() + 0.05
        while time.monotonic() < deadline:  # busy, as an analysis is
            pass
        busy.append((started, time.time_ns()))

    refills: WindowRefills[Any] = WindowRefills(fill, read_windows, busy_share=1.0)
    a = torch.ones(32, 32)
    with capture(
        CaptureOptions(steps=(0, 2, 0), interval=0),
        on_window=refills.add,
        on_recording=refills.hold,
    ) as recording:
        for _ in range(60):
            for _ in range(20):
                a @ a
            gpuprofile.step()
        refills.close()
    assert len(busy) >= 3
    # Windows in Unix time: Kineto's clock is time.time_ns()'s (see trace/samples.py).
    origin = recording.trace.meta.origin_ns
    windows = [(origin + w.start_ns, origin + w.end_ns) for w in recording.trace.meta.windows]
    assert len(windows) == 20
    for refill_start, refill_end in busy:
        for start, end in windows:
            assert refill_end <= start or end <= refill_start, refill_start - start


def test_refills_cross_whole_while_the_busy_kernel_cannot_answer_for_detail(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While the cell runs, the kernel answers no detail-window request: an overview shown then
    could not be zoomed into, nor a selected event found again in it (the browser keeps a
    selection across refills by finding it in whole data). So refills cross whole past the
    profile's detail threshold, up to LIVE_DETAIL_THRESHOLD."""
    from gpuprofile.widget import live
    from gpuprofile.widget.widget import ProfileWidget, show_result

    recorded = window(0, kernels=7)
    events = len(recorded.ops) + len(recorded.runtime) + len(recorded.kernels)
    # The profile's threshold below this window's events: shown after the cell, an overview.
    monkeypatch.setattr(show_result, "__kwdefaults__", {"detail_threshold": events - 1})

    def refilled(live_threshold: int) -> ProfileWidget:
        monkeypatch.setattr(live, "LIVE_DETAIL_THRESHOLD", live_threshold)
        widget = ProfileWidget()
        feed = LiveFeed(widget, read=merge)
        feed.start()
        feed.show_window(recorded, None)
        wait_until(lambda: widget.total_events >= events, timeout=30)
        feed.finish()
        assert widget.total_events == events
        return widget

    assert refilled(live.LIVE_DETAIL_THRESHOLD).complete is True
    assert refilled(events - 1).complete is False  # past the live limit: an overview after all
