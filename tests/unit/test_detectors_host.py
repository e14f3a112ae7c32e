"""The five host-side detectors (gpu-idle, sync-stall, data-loading, pageable-copy,
allocator-churn) on Kineto documents built here and on CPU torch.profiler captures.

Documents use microseconds and start at ts=0, so a document time t is t * 1000 ns in the Trace.
Expected numbers are worked out by hand from the timeline each test draws.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.detectors import (
    allocator_churn,
    data_loading,
    gpu_idle,
    judged,
    pageable_copy,
    sync_stall,
    without_repeats,
)
from gpuprofile.analyses.fixes import ALLOCATOR_FIX
from gpuprofile.analyses.hints import Hint
from gpuprofile.analyses.thresholds import severity_for
from gpuprofile.hardware.model import UNKNOWN, Hardware
from gpuprofile.importers.kineto import load_kineto
from gpuprofile.trace.meta import RankMeta, TraceMeta
from gpuprofile.trace.model import Trace
from helpers.kineto_docs import cpu_op, document, kernel, memcpy, memory, runtime, write

US = 1000
MIB = 1 << 20
GIB = 1 << 30
LOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def load(tmp_path: Path, events: list[dict[str, Any]]) -> Trace:
    return load_kineto(write(tmp_path / "trace.json", document(events)))


def analyse(tmp_path: Path, events: list[dict[str, Any]], hardware: Hardware = UNKNOWN) -> Analysis:
    return Analysis(load(tmp_path, events), hardware)


def wall(events: list[dict[str, Any]]) -> int:
    """First event start to last event end, in ns, straight from the document."""
    timed = [e for e in events if e.get("ph") == "X"]
    return round((max(e["ts"] + e["dur"] for e in timed) - min(e["ts"] for e in timed)) * US)


def annotation(name: str, ts: float, dur: float, cat: str = "user_annotation") -> dict[str, Any]:
    return {**cpu_op(name, ts, dur), "cat": cat}


def copy(
    kind: str, ts: float, dur: float, nbytes: int, corr: int, *, pinned: bool, stream: int = 7
) -> dict[str, Any]:
    event = memcpy(kind, ts, dur, nbytes, pinned=pinned)
    event["args"].update(correlation=corr, stream=stream)
    event["tid"] = stream
    return event


def only(hints: list[Hint]) -> Hint:
    assert len(hints) == 1, [h.title for h in hints]
    return hints[0]


# --- a .item() in a training step ------------------------------------------------------------
# K1 [10,100) launched at 1; aten::item [7,105) > _local_scalar_dense [8,104) >
# cudaMemcpyAsync DtoH [9,12) (copy on the GPU at [100,102)) + cudaStreamSynchronize [13,103),
# a 90 us wait. The host then launches K2 at 121, which runs at [130,140). GPU idle: [102,130),
# 28 us, and the sync was waiting when it began: synchronization. Window [10,140): 130 us.


def item_step(*, k2_launch: float = 121, k2_start: float = 130) -> list[dict[str, Any]]:
    return [
        annotation("train.py(42): step", 0, 150, cat="python_function"),
        annotation("<built-in method item of Tensor object at 0x7f>", 6, 100, "python_function"),
        cpu_op("aten::mul", 0.5, 5),
        runtime("cudaLaunchKernel", 1, 4, 1),
        kernel("K1", 10, 90, 1),
        cpu_op("aten::item", 7, 98),
        cpu_op("aten::_local_scalar_dense", 8, 96),
        runtime("cudaMemcpyAsync", 9, 3, 2),
        copy("DtoH", 100, 2, 4, 2, pinned=True),
        runtime("cudaStreamSynchronize", 13, 90, 3),
        runtime("cudaLaunchKernel", k2_launch, 2, 4),
        kernel("K2", k2_start, 10, 4),
        # The op that launches K2 (or, when K2 is queued early, the one around that launch).
        cpu_op("aten::add", 119, 9) if k2_launch > 100 else cpu_op("aten::mul", 0.6, 4),
    ]


def test_gpu_idle_fires_on_a_sync_stall(tmp_path: Path) -> None:
    events = item_step()
    hint = only(gpu_idle.detect(analyse(tmp_path, events)))
    idle_ns, window_ns = 28 * US, 130 * US
    assert hint.kind == "gpu-idle"
    assert hint.title == "GPU idle 22% of the window, mostly waiting on synchronization"
    assert hint.gain_ns == idle_ns  # synchronization is addressable
    assert hint.numbers["idle_ns"] == idle_ns
    assert hint.numbers["window_ns"] == window_ns
    assert hint.numbers["synchronization_ns"] == idle_ns
    assert judged(hint).severity == severity_for(idle_ns, wall(events))
    assert "28.0 µs" in hint.explanation and "130 µs" in hint.explanation
    assert any(".item()" in step for step in hint.fix)
    (gaps,) = [e for e in hint.evidence if e.table == "kernels"]
    assert gaps.windows == ((102 * US, 130 * US),)


def test_gpu_idle_silent_when_the_queue_stays_full(tmp_path: Path) -> None:
    # 20 kernels of 50 us, all launched up front, 1 us apart on the GPU: idle 19 us of a
    # 1019 us window (1.9%), under the 5% threshold.
    events: list[dict[str, Any]] = []
    for i in range(20):
        events.append(runtime("cudaLaunchKernel", i * 0.5, 0.4, i + 1))
        events.append(kernel("K", 20 + 51 * i, 50, i + 1))
    assert gpu_idle.detect(analyse(tmp_path, events)) == []


def test_gpu_idle_names_allocator_calls_inside_launch_bound_gaps(tmp_path: Path) -> None:
    # The host spends [60,400) inside cudaFree before launching K2: a host-launch-bound gap
    # (host activity covers it) whose time is the allocator's, so the allocator fix is shown.
    events = [
        runtime("cudaLaunchKernel", 0, 2, 1),
        kernel("K1", 5, 45, 1),
        cpu_op("aten::conv2d", 55, 360),
        runtime("cudaFree", 60, 340, 2),
        runtime("cudaLaunchKernel", 405, 5, 3),
        kernel("K2", 412, 10, 3),
    ]
    hint = only(gpu_idle.detect(analyse(tmp_path, events)))
    assert hint.numbers["dominant_cause"] == "host-launch-bound"
    assert hint.numbers["allocator_ns"] == 340 * US
    assert "mostly with the host in the driver's allocator" in hint.title
    # The allocator-churn finding judges warm-up against every step: no "warm up" here.
    assert "allocator-churn finding" in hint.fix[0] and hint.fix[1:] == ALLOCATOR_FIX[1:]


@pytest.mark.parametrize("recorded", [False, True])
def test_gpu_idle_names_a_wait_on_an_event_from_before_the_trace(
    tmp_path: Path, recorded: bool
) -> None:
    """K2 is launched at 25 us right after a cudaStreamWaitEvent, yet starts at 5,000 us: it
    sat queued. With no cudaEventRecord in the trace before that wait, the event was recorded
    before the trace began: the finding says so and what to do; with one, it does not."""
    events = [
        runtime("cudaLaunchKernel", 0, 2, 1),
        kernel("K1", 5, 10, 1),
        runtime("cudaStreamWaitEvent", 20, 2, 2),
        runtime("cudaLaunchKernel", 25, 3, 3),
        kernel("K2", 5000, 10, 3),
    ]
    if recorded:
        events.append(runtime("cudaEventRecord", 16, 2, 4))
    hint = only(gpu_idle.detect(analyse(tmp_path, events)))
    outside = "recorded before the trace began" in hint.explanation
    assert outside is not recorded
    assert ("before the trace began" in hint.title) is not recorded
    if not recorded:
        assert "cudaStreamWaitEvent (at 20.0 µs" in hint.explanation
        assert hint.fix[0].startswith("The wait is on work the trace does not hold")


@pytest.mark.parametrize("syncs", [1, 3])
def test_a_loop_that_times_itself_with_device_syncs(tmp_path: Path, syncs: int) -> None:
    """One step; the host calls cudaDeviceSynchronize directly (no op around it) while K1
    runs, then launches K2 late: the loop timing itself. Once in the step, that is what the
    finding says first, at low confidence; a sync repeated within the step (3 in 1 step) is
    no harness's edge, and keeps the usual advice."""
    events = [annotation("ProfilerStep#1", 0, 1000), runtime("cudaLaunchKernel", 1, 4, 1)]
    events.append(kernel("K1", 10, 90, 1))
    for i in range(syncs):
        events.append(runtime("cudaDeviceSynchronize", 13 + 200 * i, 90, 10 + i))
    events += [runtime("cudaLaunchKernel", 121, 2, 4), kernel("K2", 130, 10, 4)]
    hint = only(sync_stall.detect(analyse(tmp_path, events)))
    assert "cudaDeviceSynchronize called directly" in hint.title
    timing = syncs == 1
    assert hint.fix[0].startswith("These syncs time the loop") is timing
    assert (hint.confidence == "low") is timing
    assert ("the loop timing itself" in hint.explanation) is timing


def test_sync_stall_names_the_op_and_the_python_line(tmp_path: Path) -> None:
    events = item_step()
    analysis = analyse(tmp_path, events)
    hint = only(sync_stall.detect(analysis))
    assert hint.kind == "sync-stall"
    assert hint.gain_ns == 28 * US
    assert hint.numbers["gaps"] == 1
    assert hint.numbers["sync_calls"] == 1  # the pinned DtoH copy does not block by itself
    assert hint.numbers["sync_call_ns"] == 90 * US
    assert hint.numbers["top_op"] == "aten::item"
    # The innermost frame outside torch and built-ins.
    assert hint.numbers["top_where"] == "aten::item in train.py(42): step"
    assert "aten::item in train.py(42): step" in hint.explanation
    assert "cudaStreamSynchronize x1" in hint.explanation
    assert judged(hint).severity == severity_for(28 * US, wall(events))
    runtime_ids = {i for e in hint.evidence if e.table == "runtime" for i in e.event_ids}
    sync_id = analysis.trace.runtime.loc[
        analysis.trace.runtime["name"] == "cudaStreamSynchronize", "id"
    ]
    assert runtime_ids == set(sync_id)


def test_sync_stall_silent_when_the_next_work_was_already_queued(tmp_path: Path) -> None:
    # K2 launched at 2 us, before the sync: the GPU held it back until 130 for another
    # reason, and the sync only waited for that same queue.
    events = item_step(k2_launch=2)
    assert sync_stall.detect(analyse(tmp_path, events)) == []


def test_sync_stall_names_the_queued_wait_it_sat_through(tmp_path: Path) -> None:
    """A sync [13, 403) while K2, launched before it, waits on another stream until 300 (idle
    100-300, queued) and K3 comes only after the sync (idle 310-420, the sync's): the finding
    counts its own 110 us and says the host also sat out 200 us of queued wait."""
    events = [
        runtime("cudaLaunchKernel", 1, 4, 1),
        kernel("K1", 10, 90, 1),
        runtime("cudaLaunchKernel", 6, 2, 2),  # K2 queued up front
        kernel("K2", 300, 10, 2),
        cpu_op("aten::item", 12, 393),
        runtime("cudaStreamSynchronize", 13, 390, 3),
        runtime("cudaLaunchKernel", 410, 4, 4),
        kernel("K3", 420, 10, 4),
        cpu_op("aten::add", 409, 6),
    ]
    hint = only(sync_stall.detect(analyse(tmp_path, events)))
    assert hint.gain_ns == 110 * US
    assert hint.numbers["queued_idle_in_sync_ns"] == 200 * US
    assert "also sat idle 200 µs with its next work already queued" in hint.explanation


# --- data loading -----------------------------------------------------------------------------


def loader_step(*, k2_launch: float) -> list[dict[str, Any]]:
    # K1 [5,50); the loader runs [20,320); K2 starts at 340.
    return [
        runtime("cudaLaunchKernel", 0, 2, 1),
        kernel("K1", 5, 45, 1),
        annotation(LOADER, 20, 300),
        runtime("cudaLaunchKernel", k2_launch, 2, 2),
        kernel("K2", 340, 10, 2),
    ]


def test_data_loading_fires_when_the_gpu_waits_for_the_loader(tmp_path: Path) -> None:
    events = loader_step(k2_launch=330)
    hint = only(data_loading.detect(analyse(tmp_path, events)))
    gap_ns, window_ns = (340 - 50) * US, (350 - 5) * US
    assert hint.kind == "data-loading"
    assert hint.gain_ns == gap_ns
    assert hint.title == (
        f"GPU idle {100 * gap_ns / window_ns:.0f}% of the window waiting for the DataLoader"
    )
    assert hint.numbers["batches"] == 1
    # One call recorded: nothing says a pass over the loader ended (an empty last call).
    assert "1 call for a batch," in hint.explanation and "finds none" not in hint.explanation
    assert hint.numbers["mean_batch_ns"] == 300 * US
    assert hint.numbers["workers"] == "no"
    assert any("num_workers" in step for step in hint.fix)
    assert "persistent_workers=True" in hint.code and "prefetch_factor" in hint.code
    assert judged(hint).severity == severity_for(gap_ns, wall(events))


def test_data_loading_silent_when_the_gpu_stays_busy(tmp_path: Path) -> None:
    # K2 was queued at 1 us: the GPU gap is not the loader's doing (it waited on something
    # else), so no GPU time is lost to loading.
    events = loader_step(k2_launch=1)
    assert data_loading.detect(analyse(tmp_path, events)) == []


def capture_loader(tmp_path: Path, *, item_sleep: float, step_sleep: float) -> Trace:
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Items(Dataset[torch.Tensor]):
        def __len__(self) -> int:
            return 8

        def __getitem__(self, index: int) -> torch.Tensor:
            time.sleep(item_sleep)
            return torch.full((4,), float(index))

    loader = DataLoader(Items(), batch_size=2)
    weight = torch.ones(4, 4)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for batch in loader:
            _ = batch @ weight
            time.sleep(step_sleep)
    path = tmp_path / "loader.json"
    prof.export_chrome_trace(str(path))
    return load_kineto(path)


def test_data_loading_on_a_cpu_capture_is_the_loaders_share_of_the_run(tmp_path: Path) -> None:
    # 8 items sleeping 5 ms each, in 4 batches of 2; the loop does almost nothing else.
    trace = capture_loader(tmp_path, item_sleep=0.005, step_sleep=0.0)
    hint = only(data_loading.detect(Analysis(trace, UNKNOWN)))
    assert hint.title.startswith("DataLoader takes ")
    assert hint.title.endswith("of the run (no GPU in this trace)")
    # A for loop calls __next__ once per batch and once more to get StopIteration.
    assert hint.numbers["batches"] == 4 + 1
    assert hint.gain_ns >= 8 * 5_000_000  # at least the sleeps inside __getitem__
    assert hint.gain_ns <= hint.numbers["wall_ns"]
    assert hint.confidence == "medium"


def test_data_loading_silent_on_a_cpu_capture_with_a_fast_loader(tmp_path: Path) -> None:
    # Instant items, 250 ms of other work per step: the loader is well under 5% of the run
    # (50 ms over its 5 calls), even when a loaded machine stretches each call to a few
    # milliseconds (with 60 ms steps, the 12 ms that allowed was once exceeded under load).
    trace = capture_loader(tmp_path, item_sleep=0.0, step_sleep=0.25)
    assert data_loading.detect(Analysis(trace, UNKNOWN)) == []


# --- pageable copies --------------------------------------------------------------------------
# K1 [0,100); an 8 MiB pageable HtoD copy [100,2100) on the compute stream; K2 [2100,2200),
# launched up front: the GPU never idles, so only the copy's own slowness counts.


def pageable_step(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        runtime("cudaLaunchKernel", 0, 0.5, 1),
        kernel("K1", 0, 100, 1),
        cpu_op("aten::to", 1, 3),
        cpu_op("aten::copy_", 1.5, 2),
        runtime("cudaMemcpyAsync", 2, 1, 2),
        copy("HtoD", 100, 2000, 8 * MIB, 2, pinned=False),
        runtime("cudaLaunchKernel", 4, 0.5, 3),
        kernel("K2", 2100, 100, 3),
        *extra,
    ]


def test_pageable_copy_without_a_pinned_reference_assumes_half_the_time(tmp_path: Path) -> None:
    events = pageable_step()
    hint = only(pageable_copy.detect(analyse(tmp_path, events)))
    assert hint.kind == "pageable-copy"
    assert hint.title == "1 pageable copy (8.39 MB) took 2.00 ms"
    assert hint.numbers["bytes"] == 8 * MIB
    assert hint.numbers["staging_ns"] == 1000 * US  # half of 2000 us
    assert hint.numbers["blocked_idle_ns"] == 0
    assert hint.gain_ns == 1000 * US
    assert "assumed 2x" in hint.gain_method
    assert judged(hint).severity == severity_for(1000 * US, wall(events))
    assert any("pin_memory" in step for step in hint.fix)


def test_pageable_copy_against_the_host_link(tmp_path: Path) -> None:
    link = Hardware(name="test", source="user", link_bytes_per_s=16e9)
    hint = only(pageable_copy.detect(analyse(tmp_path, pageable_step(), link)))
    at_link_ns = 8 * MIB / 16  # 16 GB/s is 16 bytes per ns
    assert hint.numbers["staging_ns"] == round(2000 * US - at_link_ns)
    assert "host link of test: 16.0 GB/s" in hint.gain_method


def test_pageable_copy_against_pinned_copies_in_the_trace(tmp_path: Path) -> None:
    # A pinned 4 MiB HtoD copy in 200 us on a side stream: 8 MiB would take 400 us pinned.
    events = pageable_step(copy("HtoD", 2300, 200, 4 * MIB, 9, pinned=True, stream=9))
    hint = only(pageable_copy.detect(analyse(tmp_path, events)))
    assert hint.numbers["staging_ns"] == (2000 - 400) * US


def test_setup_copies_before_the_first_forward_are_not_judged(tmp_path: Path) -> None:
    """The same 8 MiB pageable copy, then a model's forward (a module call range) from 3000
    us: the copy ran before any forward and in no step, so it is the program's setup (weights
    moved once), named and not judged. Inside a ProfilerStep it is a step's copy and judged."""
    forward = [
        annotation("nn.Module: model (Net)", 3000, 400),
        cpu_op("aten::linear", 3010, 300),
        runtime("cudaLaunchKernel", 3020, 0.5, 4),
        kernel("K3", 3030, 100, 4),
    ]
    assert pageable_copy.detect(analyse(tmp_path, pageable_step(*forward))) == []
    stepped = pageable_step(*forward, annotation("ProfilerStep#1", 0, 2500),
                            annotation("ProfilerStep#2", 2500, 1000))  # fmt: skip
    hint = only(pageable_copy.detect(analyse(tmp_path, stepped)))
    assert hint.numbers["copies"] == 1 and hint.numbers["setup_copies"] == 0
    # One copy before the forward and one inside it: the second is judged, the first named.
    later = pageable_step(*forward, copy("HtoD", 3200, 2000, 8 * MIB, 5, pinned=False))
    hint = only(pageable_copy.detect(analyse(tmp_path, later)))
    assert hint.numbers["copies"] == 1 and hint.numbers["setup_copies"] == 1
    assert "1 copy (8.39 MB, 2.00 ms) ran before the first forward" in hint.explanation


def test_pinned_copies_on_a_side_stream_are_fine(tmp_path: Path) -> None:
    events = [
        runtime("cudaLaunchKernel", 0, 0.5, 1),
        kernel("K1", 0, 1000, 1),
        copy("HtoD", 100, 200, 4 * MIB, 2, pinned=True, stream=9),
        copy("DtoH", 500, 2, 4, 3, pinned=False),  # a scalar: too small to matter
    ]
    assert pageable_copy.detect(analyse(tmp_path, events)) == []


def test_pinned_copy_on_the_compute_stream(tmp_path: Path) -> None:
    events = [
        runtime("cudaLaunchKernel", 0, 0.5, 1),
        kernel("K1", 0, 800, 1),
        copy("HtoD", 800, 200, 4 * MIB, 2, pinned=True, stream=7),
    ]
    hint = only(pageable_copy.detect(analyse(tmp_path, events)))
    assert hint.title == "1 host-device copy shares the compute stream (200 µs)"
    assert hint.gain_ns == 200 * US
    assert judged(hint).severity == severity_for(200 * US, wall(events))
    assert any("separate stream" in step for step in hint.fix)


# --- allocator churn --------------------------------------------------------------------------


def two_steps(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        annotation("ProfilerStep#1", 0, 1000),
        annotation("ProfilerStep#2", 1000, 1000),
        runtime("cudaLaunchKernel", 10, 5, 1),
        kernel("K1", 20, 1900, 1),
        runtime("cudaMalloc", 100, 50, 2),  # first step: warm-up
        *extra,
    ]


def test_allocator_churn_counts_calls_after_the_first_step(tmp_path: Path) -> None:
    events = two_steps(runtime("cudaMalloc", 1100, 300, 3), runtime("cudaFree", 1500, 200, 4))
    hint = only(allocator_churn.detect(analyse(tmp_path, events)))
    assert hint.kind == "allocator-churn"
    assert hint.numbers["steady_start_ns"] == 1000 * US
    assert hint.numbers["calls"] == 2
    assert hint.gain_ns == (300 + 200) * US
    assert hint.title == "2 cudaMalloc/cudaFree calls after warm-up cost 500 µs"
    assert judged(hint).severity == severity_for(500 * US, wall(events))
    assert hint.confidence == "high"
    assert any("expandable_segments:True" in step for step in hint.fix)
    (calls,) = hint.evidence
    assert len(calls.event_ids) == 2


def test_allocator_churn_in_every_step_is_no_warm_up(tmp_path: Path) -> None:
    """Each step, the first too, frees and allocates through the driver: counted from the
    first step, and the first fix says the cache is not kept (warming up would not help)."""
    events = two_steps(
        runtime("cudaFree", 300, 100, 5),
        runtime("cudaMalloc", 1100, 300, 3),
        runtime("cudaFree", 1500, 200, 4),
    )
    hint = only(allocator_churn.detect(analyse(tmp_path, events)))
    assert hint.numbers["steady_start_ns"] == 0
    assert hint.numbers["calls"] == 4
    assert hint.gain_ns == (50 + 100 + 300 + 200) * US
    assert hint.title == "4 cudaMalloc/cudaFree calls (2 in every step) cost 650 µs"
    assert hint.fix[0].startswith("Every step calls the driver's allocator")
    assert not any("Warm up" in f for f in hint.fix)


def test_allocator_churn_silent_when_allocations_stop_after_warm_up(tmp_path: Path) -> None:
    assert allocator_churn.detect(analyse(tmp_path, two_steps())) == []


def test_allocator_churn_reports_growth_and_fragmentation(tmp_path: Path) -> None:
    # Reserved 2 GiB during warm-up, 4 GiB in the second step, never more than 1 GiB
    # allocated: 2 GiB of growth after warm-up; 4 GiB reserved >= 1.5 x 1 GiB peak.
    events = two_steps(
        memory(500, allocated=1 * GIB, reserved=2 * GIB),
        memory(1500, allocated=GIB // 2, reserved=4 * GIB),
    )
    hint = only(allocator_churn.detect(analyse(tmp_path, events)))
    assert hint.gain_ns == 0  # memory, not time
    assert judged(hint).severity == "low"
    assert hint.numbers["reserved_growth_bytes"] == 2 * GIB
    assert hint.numbers["reserved_bytes"] == 4 * GIB
    assert hint.numbers["peak_allocated_bytes"] == 1 * GIB
    # 4 GiB and 1 GiB, in the decimal units every number is spelt in.
    assert "4.29 GB reserved for a peak of 1.07 GB allocated" in hint.explanation


def test_allocator_warm_up_annotation_marks_the_steady_state(tmp_path: Path) -> None:
    # No profiler steps; an annotation named warmup ends at 600: the cudaMalloc at 100 is
    # warm-up, the two after 600 are churn.
    events = [
        annotation("[param|model|warmup|forward]", 0, 600),
        runtime("cudaLaunchKernel", 10, 5, 1),
        kernel("K1", 20, 1900, 1),
        runtime("cudaMalloc", 100, 50, 2),
        runtime("cudaMalloc", 700, 10, 3),
        runtime("cudaFree", 900, 10, 4),
    ]
    hint = only(allocator_churn.detect(analyse(tmp_path, events)))
    assert hint.numbers["steady_start_ns"] == 600 * US
    assert hint.numbers["calls"] == 2


def test_allocator_calls_before_the_gpu_starts_or_after_it_ends_are_setup(tmp_path: Path) -> None:
    """An HPC code's run (cloverleaf): buffers allocated before the first kernel and freed
    after the last are setup and teardown, done once; only the calls between count."""
    events = [
        runtime("cudaGetDeviceCount", 0, 5, 9),  # the run starts: the warm-up share ends at 490
        runtime("cudaMalloc", 1000, 200, 1),  # setup, after the warm-up share of the span
        runtime("cudaMalloc", 1300, 200, 2),
        runtime("cudaLaunchKernel", 1600, 5, 3),
        kernel("K1", 1610, 2000, 3),
        runtime("cudaMalloc", 2000, 30, 4),  # in the loop
        runtime("cudaFree", 2500, 40, 5),  # in the loop
        runtime("cudaLaunchKernel", 3000, 5, 6),
        kernel("K2", 3620, 500, 6),
        runtime("cudaFree", 4200, 300, 7),  # teardown
        runtime("cudaFree", 4600, 300, 8),
    ]
    hint = only(allocator_churn.detect(analyse(tmp_path, events)))
    assert hint.numbers["calls"] == 2
    assert hint.gain_ns == (30 + 40) * US


@pytest.mark.parametrize(
    "module", [gpu_idle, sync_stall, data_loading, pageable_copy, allocator_churn]
)
def test_detectors_are_silent_on_an_empty_trace(module: Any) -> None:
    assert module.detect(Analysis(Trace(meta=TraceMeta(ranks={0: RankMeta()})), UNKNOWN)) == []


def _hint(kind: str, rank: int, gain: int, **numbers: Any) -> Hint:
    return Hint(
        kind=kind,
        title=f"{kind} on {rank}",
        severity="high",
        gain_ns=gain,
        gain_method="",
        confidence="high",
        explanation=f"{kind} text.",
        numbers=numbers,
        fix=(),
        rank=rank,
    )


def test_an_idle_hint_that_repeats_a_specific_one_is_folded_into_it() -> None:
    idle_hint = _hint("gpu-idle", 0, 500, dominant_cause="data-loading", **{"data-loading_ns": 480})
    loader = _hint("data-loading", 0, 480)
    other_rank = _hint(
        "gpu-idle", 1, 500, dominant_cause="data-loading", **{"data-loading_ns": 480}
    )
    mixed = _hint("gpu-idle", 2, 500, dominant_cause="synchronization", synchronization_ns=200)
    stalls = _hint("sync-stall", 2, 200)
    out = without_repeats([idle_hint, loader, other_rank, mixed, stalls])
    # Rank 0: the same idle time twice; rank 1 has no loader hint; on rank 2 the sync stalls
    # are under half of what the idle hint claims, so it says more than the stall hint.
    assert [(h.kind, h.rank) for h in out] == [
        ("data-loading", 0),
        ("gpu-idle", 1),
        ("gpu-idle", 2),
        ("sync-stall", 2),
    ]
    assert out[0].explanation == "data-loading text. gpu-idle text."
    assert out[0].gain_ns == 480


def test_the_idle_breakdown_goes_to_the_larger_of_two_hints_of_a_kind() -> None:
    # A rank can have two communication hints (GPU collectives, CPU ones): the idle hint is
    # folded into the one that claims more.
    idle_hint = _hint(
        "gpu-idle", 0, 500, dominant_cause="collective-wait", **{"collective-wait_ns": 400}
    )
    small, large = _hint("communication", 0, 100), _hint("communication", 0, 450)
    out = without_repeats([large, idle_hint, small])
    assert [(h.kind, h.gain_ns) for h in out] == [("communication", 450), ("communication", 100)]
    assert out[0].explanation == "communication text. gpu-idle text."
    assert out[1].explanation == "communication text."
