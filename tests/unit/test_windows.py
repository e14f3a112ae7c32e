"""A --steps capture's recorded windows: the time between them is neither wall nor GPU idle."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
import torch

import gpuprofile
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.windows import recorded_span, within_one_window
from gpuprofile.errors import TraceFormatError
from gpuprofile.importers.kineto import load_kineto, load_kineto_windows, scan_extent
from gpuprofile.importers.windows import RecordedWindow, read_windows
from gpuprofile.trace.merge import merge
from gpuprofile.trace.meta import TraceMeta, Window
from gpuprofile.trace.model import Trace
from helpers.kineto_docs import cpu_op, document, kernel, runtime, write
from helpers.reference import union_length

WINDOWS = [(100, 200), (500, 650), (900, 1000)]


def windowed() -> Trace:
    windows = tuple(Window(index=i, start_ns=s, end_ns=e) for i, (s, e) in enumerate(WINDOWS))
    return Trace(meta=TraceMeta(windows=windows))


def test_spans_are_measured_window_by_window() -> None:
    start = np.array([120, 150, 520, 560], dtype=np.int64)
    end = np.array([180, 170, 540, 640], dtype=np.int64)
    # Window 1: 120..180; window 2: 520..640; window 3: nothing.
    assert recorded_span(windowed(), start, end) == 60 + 120
    assert recorded_span(Trace(), start, end) == 640 - 120
    assert recorded_span(windowed(), start[:0], end[:0]) == 0


def test_only_gaps_within_one_window_are_gaps() -> None:
    start = np.array([120, 150, 600, 950], dtype=np.int64)
    end = np.array([180, 950, 620, 990], dtype=np.int64)
    assert within_one_window(windowed(), start, end).tolist() == [True, False, True, True]
    assert within_one_window(Trace(), start, end).tolist() == [True] * 4


def span(trace: Trace) -> tuple[int, int]:
    """First start and last end of a window's ops, runtime calls and kernels."""
    frames = [trace.ops, trace.runtime, trace.kernels]
    return (
        min(int(f["start_ns"].min()) for f in frames),
        max(int((f["start_ns"] + f["dur_ns"]).max()) for f in frames),
    )


def window_trace(index: int, directory: Path) -> Trace:
    """A recorded window, read alone: three launches 100 us apart (kernels
    of 30 + 10 * index us), placed 1 s after the window before, and its span in its own time."""
    events = []
    for k in range(3):
        t = 10.0 + 100 * k
        events += [
            cpu_op("aten::mm", t, 20.0, ext=k),
            runtime("cudaLaunchKernel", t + 2, 5.0, k + 1),
            kernel("gemm", t + 10, 30.0 + 10 * index, k + 1),
        ]
    path = directory / f"window{index}.json"
    write(path, document(events, baseTimeNanoseconds=index * 1_000_000_000))
    trace = load_kineto(path)
    start, end = span(trace)
    return trace.with_meta(windows=(Window(index=index, start_ns=start, end_ns=end),))


def test_merged_windows_leave_the_time_between_them_out_of_wall_and_idle(tmp_path: Path) -> None:
    parts = [window_trace(i, tmp_path) for i in range(3)]
    spans = [span(c) for c in parts]
    merged = merge(parts)
    analysis = Analysis(merged)
    # Each window's span, computed on its own trace: the wall is their sum.
    assert analysis.wall_ns(0) == sum(end - start for start, end in spans)
    breakdown = analysis.gpu_time(0)
    assert breakdown is not None
    gaps = analysis.idle_gaps
    assert int(gaps["dur_ns"].sum()) == breakdown.idle_ns
    # No gap reaches into the time between two windows (each starts 1 s after the one before).
    for i, ((_, end), (start, _)) in enumerate(itertools.pairwise(spans)):
        between = (i * 1_000_000_000 + end, (i + 1) * 1_000_000_000 + start)
        assert not ((gaps["start_ns"] < between[1]) & (gaps["end_ns"] > between[0])).any()
    # Idle: each window's own GPU span less its busy time, summed.
    expected_idle = 0
    for window in parts:
        kernels = window.kernels
        start = [int(s) for s in kernels["start_ns"]]
        end = [s + int(d) for s, d in zip(start, kernels["dur_ns"], strict=True)]
        expected_idle += (max(end) - min(start)) - union_length(zip(start, end, strict=True))
    assert breakdown.idle_ns == expected_idle


def test_a_steps_capture_reports_the_wall_of_its_windows(scratch: Path) -> None:
    a = torch.ones(16, 16)
    with gpuprofile.profile(steps=(2, 2, 3), interval=0) as p:
        for _ in range(15):  # 3 cycles of wait 2, warmup 1, active 2
            for _ in range(20):
                a @ a
            gpuprofile.step()
        # The windows torch wrote (gone once the capture ends).
        files = [json.loads(f.read_text()) for f in scratch.glob("gpuprofile-windows-*/*")]
    assert len(files) == 3
    categories = {"cpu_op", "user_annotation", "python_function", "cuda_runtime", "kernel"}
    expected = 0
    for doc in files:
        events = [
            e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") in categories
        ]
        first = min(round(e["ts"] * 1000) for e in events)
        expected += max(round((e["ts"] + e["dur"]) * 1000) for e in events) - first
    [rank] = p.report()["ranks"]
    # Float microseconds may move each window's edges by a nanosecond.
    assert abs(rank["wall_ns"] - expected) <= 2 * len(files)


def test_a_files_scanned_start_is_the_origin_its_trace_gets(tmp_path: Path) -> None:
    for index in range(2):
        window = window_trace(index, tmp_path)
        extent = scan_extent(tmp_path / f"window{index}.json")
        assert extent is not None
        events, start, end = extent
        assert start == window.meta.origin_ns
        assert end - start == span(window)[1]
        assert events == len(window.ops) + len(window.runtime) + len(window.kernels)
    write(tmp_path / "empty.json", document([]))
    assert scan_extent(tmp_path / "empty.json") is None


def test_windows_on_different_time_bases_are_read_one_by_one_and_placed(tmp_path: Path) -> None:
    # One file per window, each with its own baseTimeNanoseconds (1 s apart): no shared time
    # base for one pass, so each is read on its own and placed by its origin.
    traces = [window_trace(i, tmp_path) for i in range(3)]
    windows = []
    for i in range(len(traces)):
        path = tmp_path / f"window{i}.json"
        extent = scan_extent(path)
        assert extent is not None
        events, start, end = extent
        window = Window(index=i, start_ns=start, end_ns=end, step=2 * i, events=events)
        windows.append(RecordedWindow(path, window))
    with pytest.raises(TraceFormatError, match="baseTimeNanoseconds differs"):
        load_kineto_windows([w.path for w in windows])
    merged = read_windows(windows)
    assert merged.meta.errors == ()
    assert [w.index for w in merged.meta.windows] == [0, 1, 2]
    origin = traces[0].meta.origin_ns
    for entry, trace in zip(merged.meta.windows, traces, strict=True):
        first, last = span(trace)
        assert entry.start_ns == trace.meta.origin_ns - origin + first
        assert entry.end_ns == trace.meta.origin_ns - origin + last
    assert len(merged.kernels) == sum(len(t.kernels) for t in traces)
