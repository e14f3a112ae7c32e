"""GPU idle gaps and their causes, on small Kineto documents whose timelines are known by hand.

Times in the documents are microseconds; the Trace holds nanoseconds from the first event.
Each document starts with an event at ts=0, so a document time t us is t * 1000 ns.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.idle import CAUSES, idle_by_cause
from gpuprofile.analyses.intervals import IntervalSet
from gpuprofile.importers.kineto import load_kineto
from gpuprofile.trace.model import NO_ID, Trace
from helpers.kineto_docs import cpu_op, document, kernel, memcpy, memset, runtime, write

US = 1000


def load(tmp_path: Path, events: list[dict]) -> Trace:
    return load_kineto(write(tmp_path / "trace.json", document(events)))


def annotation(name: str, ts: float, dur: float, cat: str = "user_annotation") -> dict:
    return {**cpu_op(name, ts, dur), "cat": cat}


def copy(kind: str, ts: float, dur: float, nbytes: int, corr: int, *, pinned: bool) -> dict:
    event = memcpy(kind, ts, dur, nbytes, pinned=pinned)
    event["args"]["correlation"] = corr
    return event


def one_gap(trace: Trace) -> dict:
    gaps = Analysis(trace).idle_gaps
    assert len(gaps) == 1, gaps
    return gaps.iloc[0].to_dict()


def ids(trace: Trace, table: str, name: str) -> list[int]:
    frame = trace.table(table)
    return frame.loc[frame["name"] == name, "id"].tolist()


def test_gaps_are_the_holes_between_merged_gpu_activity(tmp_path: Path) -> None:
    # Kernels [0,10) and [5,20) overlap (one busy block), a memset [30,35), a kernel [50,60):
    # the holes are [20,30) and [35,50).
    trace = load(
        tmp_path,
        [
            kernel("a", 0, 10, 1),
            kernel("b", 5, 15, 2, stream=8),
            memset(30, 5, 64),
            kernel("c", 50, 10, 3),
        ],
    )
    gaps = Analysis(trace).idle_gaps
    assert gaps[["start_ns", "end_ns", "dur_ns"]].values.tolist() == [
        [20 * US, 30 * US, 10 * US],
        [35 * US, 50 * US, 15 * US],
    ]
    assert set(gaps["cause"].cat.categories) == set(CAUSES)
    # No launches and no host activity in this trace: nothing explains the gaps.
    assert gaps["cause"].tolist() == ["other", "other"]
    assert idle_by_cause(gaps) == {0: {"other": 25 * US}}


def test_no_gpu_activity_gives_no_gaps(tmp_path: Path) -> None:
    trace = load(tmp_path, [cpu_op("aten::mm", 0, 10)])
    gaps = Analysis(trace).idle_gaps
    assert gaps.empty
    assert list(gaps.columns) == [
        "rank",
        "start_ns",
        "end_ns",
        "dur_ns",
        "cause",
        "op_id",
        "runtime_id",
    ]
    assert idle_by_cause(gaps) == {}


def test_explicit_synchronize_drains_the_queue(tmp_path: Path) -> None:
    # The host launches K1 [10,100), waits in cudaDeviceSynchronize [6,101) (95 us), then
    # prepares and launches K2 (call at 120, kernel at 135): the GPU idles [100,135) because
    # the host could not queue K2 while it waited. The 95 us wait exceeds half of the 35 us
    # gap, so the gap is the sync's.
    trace = load(
        tmp_path,
        [
            cpu_op("aten::relu", 0, 6),
            runtime("cudaLaunchKernel", 1, 4, 1),
            kernel("K1", 10, 90, 1),
            runtime("cudaDeviceSynchronize", 6, 95, 99),
            cpu_op("aten::relu", 115, 12),
            runtime("cudaLaunchKernel", 120, 5, 2),
            kernel("K2", 135, 10, 2),
        ],
    )
    gap = one_gap(trace)
    assert (gap["start_ns"], gap["end_ns"]) == (100 * US, 135 * US)
    assert gap["cause"] == "synchronization"
    assert gap["runtime_id"] == ids(trace, "runtime", "cudaDeviceSynchronize")[0]
    assert gap["op_id"] == NO_ID  # torch.cuda.synchronize() has no aten op around it


def test_item_names_the_outermost_aten_op(tmp_path: Path) -> None:
    # aten::item > aten::_local_scalar_dense > (cudaMemcpyAsync DtoH, cudaStreamSynchronize):
    # the sync waits for K1 and the 2 us copy, the gap [102,130) follows.
    trace = load(
        tmp_path,
        [
            cpu_op("aten::mul", 0, 6),
            runtime("cudaLaunchKernel", 1, 4, 1),
            kernel("K1", 10, 90, 1),
            cpu_op("aten::item", 7, 98),
            cpu_op("aten::_local_scalar_dense", 8, 96),
            runtime("cudaMemcpyAsync", 9, 3, 2),
            copy("DtoH", 100, 2, 4, 2, pinned=True),
            runtime("cudaStreamSynchronize", 13, 90, 3),
            cpu_op("aten::add", 120, 8),
            runtime("cudaLaunchKernel", 121, 4, 4),
            kernel("K2", 130, 10, 4),
        ],
    )
    gap = one_gap(trace)
    assert (gap["start_ns"], gap["end_ns"]) == (102 * US, 130 * US)
    assert gap["cause"] == "synchronization"
    assert gap["op_id"] == ids(trace, "ops", "aten::item")[0]
    assert gap["runtime_id"] == ids(trace, "runtime", "cudaStreamSynchronize")[0]


def test_short_wait_before_long_host_work_is_not_the_syncs_doing(tmp_path: Path) -> None:
    # The sync waits only 3 us [98,101); then 95 us of host ops before K2 is launched. Without
    # the sync the host would still need those 95 us after K1: the gap [100,200) is the
    # host's, not the sync's (a sync costs at most min(gap, wait)).
    trace = load(
        tmp_path,
        [
            cpu_op("aten::mul", 0, 6),
            runtime("cudaLaunchKernel", 1, 4, 1),
            kernel("K1", 10, 90, 1),
            runtime("cudaStreamSynchronize", 98, 3, 2),
            cpu_op("aten::layer_norm", 102, 95),
            runtime("cudaLaunchKernel", 190, 5, 3),
            kernel("K2", 200, 10, 3),
        ],
    )
    gap = one_gap(trace)
    assert gap["cause"] == "host-launch-bound"
    assert gap["op_id"] == ids(trace, "ops", "aten::layer_norm")[0]
    assert gap["runtime_id"] == ids(trace, "runtime", "cudaLaunchKernel")[1]


def test_work_queued_before_the_gap_means_the_gpu_waited_on_something_else(
    tmp_path: Path,
) -> None:
    # K2 was launched at 2 us, long before the gap [100,150) began: the GPU held it back
    # (an event, another stream), so a host sync in progress meanwhile is not the cause.
    trace = load(
        tmp_path,
        [
            runtime("cudaLaunchKernel", 0, 1, 1),
            kernel("K1", 10, 90, 1),
            runtime("cudaLaunchKernel", 2, 1, 2),
            kernel("K2", 150, 10, 2),
            runtime("cudaDeviceSynchronize", 5, 160, 3),
        ],
    )
    gap = one_gap(trace)
    assert gap["cause"] == "other"
    assert gap["runtime_id"] == ids(trace, "runtime", "cudaLaunchKernel")[1]


def test_data_loader_covering_the_gap(tmp_path: Path) -> None:
    trace = load(
        tmp_path,
        [
            runtime("cudaLaunchKernel", 0, 2, 1),
            kernel("K1", 5, 45, 1),
            annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 20, 300),
            runtime("cudaLaunchKernel", 330, 2, 2),
            kernel("K2", 340, 10, 2),
        ],
    )
    gap = one_gap(trace)
    assert (gap["start_ns"], gap["end_ns"]) == (50 * US, 340 * US)
    assert gap["cause"] == "data-loading"
    assert (
        gap["op_id"]
        == ids(trace, "ops", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__")[0]
    )


def test_sync_outranks_data_loading(tmp_path: Path) -> None:
    # Both the loader and a sync op cover most of the gap [50,340): synchronization comes first.
    trace = load(
        tmp_path,
        [
            runtime("cudaLaunchKernel", 0, 2, 1),
            kernel("K1", 5, 45, 1),
            annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 20, 300),
            cpu_op("aten::item", 40, 250),
            runtime("cudaLaunchKernel", 330, 2, 2),
            kernel("K2", 340, 10, 2),
        ],
    )
    assert one_gap(trace)["cause"] == "synchronization"


def test_blocking_host_to_device_copy(tmp_path: Path) -> None:
    # x.to("cuda") from pageable memory: cudaMemcpyAsync then cudaStreamSynchronize, which
    # waits for K1 and the copy. The wait ends a host-to-device copy, so it belongs to the
    # copy (pin_memory + non_blocking=True removes it), not to synchronization.
    trace = load(
        tmp_path,
        [
            runtime("cudaLaunchKernel", 0, 2, 1),
            kernel("K1", 10, 90, 1),
            cpu_op("aten::to", 4, 99),
            cpu_op("aten::copy_", 5, 97),
            runtime("cudaMemcpyAsync", 6, 2, 2),
            copy("HtoD", 100, 1, 4096, 2, pinned=False),
            runtime("cudaStreamSynchronize", 9, 93, 3),
            cpu_op("aten::relu", 125, 10),
            runtime("cudaLaunchKernel", 130, 2, 4),
            kernel("K2", 140, 10, 4),
        ],
    )
    gap = one_gap(trace)
    assert (gap["start_ns"], gap["end_ns"]) == (101 * US, 140 * US)
    assert gap["cause"] == "host-device-copy"
    assert gap["op_id"] == ids(trace, "ops", "aten::to")[0]


def test_collective_on_the_host(tmp_path: Path) -> None:
    trace = load(
        tmp_path,
        [
            runtime("cudaLaunchKernel", 0, 2, 1),
            kernel("K1", 5, 45, 1),
            annotation("gloo:all_reduce", 50, 100),
            runtime("cudaLaunchKernel", 155, 2, 2),
            kernel("K2", 160, 10, 2),
        ],
    )
    gap = one_gap(trace)
    assert gap["cause"] == "collective-wait"
    assert gap["op_id"] == ids(trace, "ops", "gloo:all_reduce")[0]


def test_launch_after_long_untraced_host_time_is_other(tmp_path: Path) -> None:
    # K2 is launched late, but the 500 us before its launch hold no op or runtime call: the
    # host was outside traced code (Python, I/O), which CUDA graphs would not fix.
    trace = load(
        tmp_path,
        [
            runtime("cudaLaunchKernel", 0, 2, 1),
            kernel("K1", 5, 45, 1),
            runtime("cudaLaunchKernel", 550, 2, 2),
            kernel("K2", 560, 10, 2),
        ],
    )
    gap = one_gap(trace)
    assert gap["cause"] == "other"
    assert gap["runtime_id"] == NO_ID


def test_sum_over_causes_is_the_idle_time(tmp_path: Path) -> None:
    events = [runtime("cudaLaunchKernel", 0, 1, 1), kernel("K0", 4, 3, 1)]
    for i in range(1, 30):
        events += [runtime("cudaLaunchKernel", 10 * i, 1, i + 1), kernel("K", 10 * i + 3, 4, i + 1)]
    events.append(annotation("enumerate(DataLoader)#x.__next__", 100, 80))
    trace = load(tmp_path, events)
    analysis = Analysis(trace)
    totals = idle_by_cause(analysis.idle_gaps)
    breakdown = analysis.gpu_time(0)
    assert breakdown is not None
    assert sum(totals[0].values()) == breakdown.idle_ns
    # By hand: K0 ends at 7, kernel i runs [10i+3, 10i+7): gaps of 6 us, 29 of them.
    assert breakdown.idle_ns == 29 * 6 * US


@pytest.mark.parametrize("seed", range(5))
def test_interval_coverage_matches_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    start = rng.integers(0, 1000, 60)
    end = start + rng.integers(0, 80, 60)
    none = np.full(60, -1)
    intervals = IntervalSet(start, end, none, none)
    gap_start = rng.integers(0, 1100, 40)
    gap_end = gap_start + rng.integers(1, 200, 40)
    covered = np.zeros(1300, bool)
    for s, e in zip(start, end, strict=True):
        covered[s:e] = True
    expected = [covered[s:e].sum() for s, e in zip(gap_start, gap_end, strict=True)]
    assert intervals.coverage(gap_start, gap_end).tolist() == expected
    at = intervals.running_at(gap_start)
    for t, j in zip(gap_start, at, strict=True):
        inside = (start <= t) & (end >= t)
        assert (j >= 0) == inside.any()
        if j >= 0:
            assert intervals.start[j] <= t <= intervals.end[j]


@pytest.mark.parametrize("side_stream", [False, True])
def test_queued_work_on_one_stream_blames_no_other_stream(
    tmp_path: Path, side_stream: bool
) -> None:
    """Work launched long before a gap that still started late: on a rank with one stream and
    no collective there is no other stream to blame; with a second stream there may be."""
    from gpuprofile.analyses.detectors import detector

    events = [
        runtime("cudaLaunchKernel", 0, 1, 1),
        kernel("K1", 10, 40, 1),
        runtime("cudaLaunchKernel", 2, 1, 2),
        kernel("K2", 400, 10, 2),
    ]
    if side_stream:
        events += [runtime("cudaLaunchKernel", 3, 1, 3), kernel("K3", 20, 20, 3, stream=9)]
    (hint,) = detector("gpu_idle")(Analysis(load(tmp_path, events)))
    said = " ".join((hint.title, hint.explanation, *hint.fix))
    assert ("another stream" in said) is side_stream
    if not side_stream:
        assert "only stream" in said and "no collective" in hint.fix[0]
