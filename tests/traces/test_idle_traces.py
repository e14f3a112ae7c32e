"""Idle attribution and the five host-side detectors on real traces.

Expected figures come from the files themselves, read here with json/gzip alone: GPU idle
intervals (holes in the union of kernels, copies and memsets), DataLoader intervals, runtime
call names and durations, memcpy kinds, [memory] totals. Where a detector must stay silent, the
test first shows from the raw file that the detector's own rule cannot reach its threshold.
"""

from __future__ import annotations

import functools
import gzip
import itertools
import json
import re
from collections import defaultdict
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
    run_detectors,
    sync_stall,
)
from gpuprofile.analyses.idle import CAUSES, idle_by_cause
from gpuprofile.hardware.model import UNKNOWN
from gpuprofile.importers.kineto import load_kineto
from helpers.prerequisites import SHARED_TRACES, require_trace
from helpers.reference import merged

pytestmark = pytest.mark.traces

KINETO = SHARED_TRACES / "kineto"
GPU_CATEGORIES = {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"}
RUNTIME_CATEGORIES = {"cuda_runtime", "Runtime", "cuda_driver"}
HOST_CATEGORIES = {"cpu_op", "Operator", "user_annotation", "python_function"}
LOADER = re.compile(r"DataLoader|dataloader\.py\(\d+\): (__next__|__iter__)")
US = 1000


# Several tests read the same few traces: read each once per session (and never mutate).
@functools.cache
def raw_document_events(name: str) -> list[dict[str, Any]]:
    data = require_trace(KINETO / name).read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    doc = json.loads(data)
    events: list[dict[str, Any]] = doc["traceEvents"] if isinstance(doc, dict) else doc
    return events


def raw_events(name: str) -> list[dict[str, Any]]:
    """The complete (ph X) events of a shared Kineto trace."""
    return [e for e in raw_document_events(name) if e.get("ph") == "X" and "ts" in e]


def raw_idle(events: list[dict[str, Any]]) -> tuple[list[tuple[float, float]], float]:
    """GPU idle intervals (us) and the window length (us)."""
    busy = merged([(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") in GPU_CATEGORIES])
    holes = [(a[1], b[0]) for a, b in itertools.pairwise(busy) if b[0] > a[1]]
    return holes, busy[-1][1] - busy[0][0]


def overlap(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    total = 0.0
    blocks = merged(b)
    for s, e in a:
        for x, y in blocks:
            total += max(0.0, min(e, y) - max(s, x))
    return total


def raw_wall_us(events: list[dict[str, Any]]) -> float:
    timed = [
        e for e in events if e.get("cat") in GPU_CATEGORIES | RUNTIME_CATEGORIES | HOST_CATEGORIES
    ]
    return max(e["ts"] + e["dur"] for e in timed) - min(e["ts"] for e in timed)


@functools.cache
def analysis_of(name: str) -> Analysis:
    return Analysis(load_kineto(require_trace(KINETO / name)), UNKNOWN)


# --- every shared trace -----------------------------------------------------------------------


def test_gaps_partition_the_idle_time(kineto_path: Path) -> None:
    trace = load_kineto(kineto_path)
    analysis = Analysis(trace, UNKNOWN)
    gaps = analysis.idle_gaps
    totals = idle_by_cause(gaps)
    for rank in trace.ranks:
        breakdown = analysis.gpu_time(rank)
        mine = gaps[gaps["rank"] == rank]
        if breakdown is None:
            assert mine.empty
            continue
        assert sum(totals.get(rank, {}).values()) == breakdown.idle_ns
        starts, ends = mine["start_ns"].to_numpy(), mine["end_ns"].to_numpy()
        assert (mine["dur_ns"] > 0).all()
        assert (starts[1:] >= ends[:-1]).all()  # sorted, disjoint
        window_end = breakdown.start_ns + breakdown.window_ns
        assert len(mine) == 0 or (starts[0] > breakdown.start_ns and ends[-1] < window_end)
    assert set(gaps["cause"].astype(str)) <= set(CAUSES)


# --- sync-stall -------------------------------------------------------------------------------


def test_cuda_sync_docs_pair_differ_only_in_sync_metadata() -> None:
    """Kineto's docs/traces before_fix / after_fix pair (the fix records which stream and
    event record a cuda_sync waited on). Read raw, the two runs did the same work: the same
    events with the same durations, one 20 ns kernel, no synchronizing runtime call; only
    the cuda_sync events' wait_on_* arguments differ. So there is no GPU idle time in either,
    and the sync detector must say the same thing (nothing) about both."""
    before = raw_events("kineto_docs_h100_cuda_sync_before_fix.json")
    after = raw_events("kineto_docs_h100_cuda_sync_after_fix.json")

    def shape(events: list[dict[str, Any]]) -> list[tuple[str, str, float]]:
        return sorted((e["cat"], e["name"], e["dur"]) for e in events)

    assert shape(before) == shape(after)
    for events in (before, after):
        assert sum(e["cat"] in GPU_CATEGORIES for e in events) == 1
        assert [e["name"] for e in events if e["cat"] in RUNTIME_CATEGORIES] == ["cudaLaunchKernel"]
    differing = {
        key
        for b, a in zip(
            sorted(before, key=lambda e: (e["cat"], e["name"])),
            sorted(after, key=lambda e: (e["cat"], e["name"])),
            strict=True,
        )
        for key in set(b.get("args", {})) | set(a.get("args", {}))
        if b.get("args", {}).get(key) != a.get("args", {}).get(key)
        if b["cat"] != "kernel" or key != "occupancy"  # an extra dict in one kernel record
    }
    assert differing <= {"wait_on_stream", "wait_on_cuda_event_record_corr_id", "stream"}

    results = []
    for name in (
        "kineto_docs_h100_cuda_sync_before_fix.json",
        "kineto_docs_h100_cuda_sync_after_fix.json",
    ):
        analysis = analysis_of(name)
        assert analysis.idle_gaps.empty
        results.append(sync_stall.detect(analysis))
    assert results == [[], []]


def test_sync_stall_on_blocking_cpu_copies() -> None:
    """hta_a100_80gb rank 0 copies small tensors to pageable host memory (Memcpy DtoH
    (Device -> Pageable)) with cudaMemcpyAsync calls that block for up to 147 ms, and calls
    cudaStreamSynchronize. The sync calls counted here from the raw file: every
    Device/Stream/Event synchronize not right after a host-to-device copy call on its thread
    (that one finishes an upload), plus the pageable device-to-host copy calls."""
    name = "hta_a100_80gb_train_rank0_of16.json.gz"
    events = raw_events(name)
    dtoh_pageable = {
        e["args"]["correlation"]
        for e in events
        if e["cat"] == "gpu_memcpy" and e["name"] == "Memcpy DtoH (Device -> Pageable)"
    }
    htod = {
        e["args"]["correlation"]
        for e in events
        if e["cat"] == "gpu_memcpy" and e["name"].startswith("Memcpy HtoD")
    }
    by_thread: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for e in events:
        if e["cat"] in RUNTIME_CATEGORIES:
            by_thread[e["tid"]].append(e)
    expected = 0
    dtoh_copies = 0
    for calls in by_thread.values():
        calls.sort(key=lambda e: e["ts"])
        for previous, call in zip([None, *calls], calls, strict=False):
            if re.fullmatch(r"cuda(Device|Stream|Event)Synchronize", call["name"]):
                after_upload = (
                    previous is not None
                    and previous["name"] == "cudaMemcpyAsync"
                    and previous["args"].get("correlation") in htod
                )
                expected += not after_upload
            elif call["name"] == "cudaMemcpyAsync":
                blocking = call["args"].get("correlation") in dtoh_pageable
                expected += blocking
                dtoh_copies += blocking
    holes, _ = raw_idle(events)

    hint = next(iter(sync_stall.detect(analysis_of(name))))
    assert hint.numbers["sync_calls"] == expected == 61
    assert hint.numbers["top_op"] == "aten::to"
    assert hint.gain_ns <= sum(e - s for s, e in holes) * US
    assert hint.gain_ns >= 0.01 * raw_wall_us(events) * US
    assert f"cudaMemcpyAsync x{dtoh_copies}" in hint.explanation


def test_sync_stall_silent_without_syncs_in_the_loop() -> None:
    """hta_v100_32gb_memory rank 1 has a single synchronizing runtime call (one 24 us
    cudaDeviceSynchronize), no aten::item/_local_scalar_dense/nonzero and no device-to-host
    copy. A gap is a sync's only if sync activity covers half of it or the sync waited at
    least half as long as the gap, so sync idle is at most twice that call (and the op
    around it): under 1% of the run, the detector's threshold."""
    name = "hta_v100_32gb_memory_rank1_of2.json.gz"
    events = raw_events(name)
    syncs = [
        e
        for e in events
        if e["cat"] in RUNTIME_CATEGORIES
        and re.search(r"Synchronize$|^(cuda|hip)Memcpy(WithStream)?$", e["name"])
    ]
    assert [s["name"] for s in syncs] == ["cudaDeviceSynchronize"]
    (sync,) = syncs
    around = [
        e["dur"]
        for e in events
        if e["cat"] == "cpu_op"
        and e["tid"] == sync["tid"]
        and e["ts"] <= sync["ts"]
        and e["ts"] + e["dur"] >= sync["ts"] + sync["dur"]
    ]
    assert not any(re.search(r"item|_local_scalar_dense|nonzero", e["name"]) for e in events)
    assert not any(e["cat"] == "gpu_memcpy" and "DtoH" in e["name"] for e in events)
    bound_us = 2 * (sync["dur"] + min(around, default=0))
    assert bound_us < 0.01 * raw_wall_us(events)
    assert sync_stall.detect(analysis_of(name)) == []


# --- data loading and gpu-idle ----------------------------------------------------------------


def loader_facts(name: str) -> tuple[list[dict[str, Any]], float, float, float, float]:
    """Loader events; GPU idle, loader-covered idle, window and wall (us)."""
    events = raw_events(name)
    loader = [e for e in events if e["cat"] in HOST_CATEGORIES and LOADER.search(e["name"])]
    holes, window = raw_idle(events)
    covered = overlap(holes, [(e["ts"], e["ts"] + e["dur"]) for e in loader])
    return loader, sum(e - s for s, e in holes), covered, window, raw_wall_us(events)


def test_data_loading_on_a_single_process_loader() -> None:
    """ResNet-50 with num_workers=0 (the tb_plugin sample): six
    _SingleProcessDataLoaderIter.__next__ calls; 287 ms of GPU idle fall inside them."""
    name = "kineto_tbplugin_resnet50_v100_memory_shapes.pt.trace.json.gz"
    loader, _, covered_us, _, wall_us = loader_facts(name)
    batches = [e for e in loader if e["name"].endswith("__next__") and "DataLoader" in e["name"]]
    assert all("_SingleProcessDataLoaderIter" in e["name"] for e in batches)

    hint = next(iter(data_loading.detect(analysis_of(name))))
    assert hint.numbers["batches"] == len(batches) == 6
    assert hint.numbers["workers"] == "no"
    # A data-loading gap is at least half covered by the loader.
    assert hint.gain_ns <= 2 * covered_us * US
    assert hint.gain_ns >= 0.01 * wall_us * US
    assert judged(hint).severity == "high"  # 287 ms of a 1.07 s run


def test_data_loading_silent_when_workers_keep_up() -> None:
    """hta_v100_16gb rank 1 loads with worker processes: only 0.16 ms of GPU idle falls inside
    its DataLoader calls, so loading gaps (at least half covered by the loader) total at most
    twice that, under 1% of the run."""
    name = "hta_v100_16gb_train_rank1_of2.json.gz"
    loader, _, covered_us, _, wall_us = loader_facts(name)
    assert any("_MultiProcessingDataLoaderIter" in e["name"] for e in loader)
    assert 2 * covered_us < 0.01 * wall_us
    assert data_loading.detect(analysis_of(name)) == []


def test_gpu_idle_dominated_by_data_loading() -> None:
    """OWLv2 inference: the GPU is idle 47% of its window, and 96% of that idle time lies
    inside DataLoader __next__ calls (raw reading)."""
    name = "tracelens_h100_owlv2_large_inference.json.gz"
    _, idle_us, covered_us, window_us, _ = loader_facts(name)
    assert covered_us > 0.5 * idle_us
    hint = next(iter(gpu_idle.detect(analysis_of(name))))
    assert hint.title == (
        f"GPU idle {100 * idle_us / window_us:.0f}% of the window, "
        "mostly waiting for the DataLoader"
    )
    assert hint.numbers["dominant_cause"] == "data-loading"
    assert abs(hint.numbers["idle_ns"] - idle_us * US) <= 1e-6 * window_us * US


def test_gpu_idle_silent_when_the_gpu_is_busy() -> None:
    """hta_v100_16gb rank 1: the GPU is idle 3.7% of its window, under the 5% threshold."""
    name = "hta_v100_16gb_train_rank1_of2.json.gz"
    _, idle_us, _, window_us, _ = loader_facts(name)
    assert idle_us < 0.05 * window_us
    assert gpu_idle.detect(analysis_of(name)) == []


# --- pageable copies --------------------------------------------------------------------------


def test_pageable_uploads_of_a_resnet_sample() -> None:
    """The tb_plugin ResNet-50 sample uploads each batch from pageable memory: Memcpy HtoD
    (Pageable -> Device); no pinned upload to measure against, so with unknown hardware the
    detector counts half the copy time."""
    name = "kineto_tbplugin_resnet50_v100_memory_shapes.pt.trace.json.gz"
    events = raw_events(name)
    pageable = [
        e
        for e in events
        if e["cat"] in ("gpu_memcpy", "Memcpy")
        and "Pageable" in e["name"]
        and int(e["args"]["bytes"]) >= 64 * 1024
    ]
    assert not any("Pinned" in e["name"] for e in events if e["cat"] in ("gpu_memcpy", "Memcpy"))
    copy_us = sum(e["dur"] for e in pageable)

    hint = next(h for h in pageable_copy.detect(analysis_of(name)) if "pageable" in h.title)
    assert hint.numbers["copies"] == len(pageable)
    assert hint.numbers["bytes"] == sum(int(e["args"]["bytes"]) for e in pageable)
    assert abs(hint.numbers["staging_ns"] - copy_us * US / 2) <= len(pageable)


def test_pageable_copy_silent_with_pinned_uploads_on_a_side_stream() -> None:
    """hta_a100 rank 3 uploads from pinned memory on streams that run no kernel; its pageable
    copies are all device-to-host scalars under 64 KiB."""
    name = "hta_a100_train_rank3_of8_async_cpu_to_gpu.json.gz"
    events = raw_events(name)
    copies = [e for e in events if e["cat"] == "gpu_memcpy"]
    kernel_streams = {e["args"]["stream"] for e in events if e["cat"] == "kernel"}
    assert all(int(e["args"]["bytes"]) < 64 * 1024 for e in copies if "Pageable" in e["name"])
    big_pinned = [e for e in copies if "Pinned" in e["name"] and int(e["args"]["bytes"]) >= 65536]
    assert big_pinned and all(e["args"]["stream"] not in kernel_streams for e in big_pinned)
    assert pageable_copy.detect(analysis_of(name)) == []


# --- allocator churn --------------------------------------------------------------------------

ALLOCATOR = {"cudaMalloc", "cudaFree", "hipMalloc", "hipFree", "hipHostMalloc", "hipHostFree"}


def test_allocator_churn_in_ddp_resnet18() -> None:
    """DDP ResNet-18 on MI300X calls hipMalloc/hipFree every iteration, the first as often as
    the rest; hipFree alone takes 3.3 s of the 3.4 s run. The trace has no ProfilerStep: its
    iterations end with each Optimizer.step range. None of the calls is warm-up, so all count,
    and the fix does not say to warm up."""
    name = "tracelens_mi300x_ddp_resnet18_train.json.gz"
    events = raw_events(name)
    assert not any(
        re.match(r"ProfilerStep#\d+$", e["name"]) or re.search("warm[-_ ]?up", e["name"], re.I)
        for e in events
    )
    ends = sorted(
        e["ts"] + e["dur"]
        for e in events
        if e["name"].startswith("Optimizer.step#") and e["cat"] == "user_annotation"
    )
    calls = [e for e in events if e["cat"] in RUNTIME_CATEGORIES and e["name"] in ALLOCATOR]
    per_iteration = [
        sum(1 for e in calls if low <= e["ts"] < high)
        for low, high in zip([float("-inf"), *ends[:-1]], ends, strict=True)
    ]
    assert len(per_iteration) == 5 and min(per_iteration) * 2 >= max(per_iteration)

    hint = next(iter(allocator_churn.detect(analysis_of(name))))
    assert hint.numbers["calls"] == len(calls)
    assert hint.gain_ns <= sum(e["dur"] for e in calls) * US + len(calls)
    assert judged(hint).severity == "high"
    low, high = min(per_iteration), max(per_iteration)
    assert hint.title.startswith(
        f"{len(calls)} hipFree/hipMalloc calls ({low} to {high} in every step)"
    )
    assert not any("Warm up" in f for f in hint.fix)


def test_allocator_churn_silent_on_owlv2() -> None:
    """OWLv2 inference: no malloc/free runtime call, reserved memory constant, and at most
    1.33x the peak allocated (under the 1.5x fragmentation threshold)."""
    name = "tracelens_h100_owlv2_large_inference.json.gz"
    events = raw_events(name)
    assert not any(
        re.search(r"Malloc|Free", e["name"]) for e in events if e["cat"] in RUNTIME_CATEGORIES
    )
    device = [
        e["args"]
        for e in raw_document_events(name)
        if e.get("name") == "[memory]" and e["args"].get("Device Type") != 0
    ]
    reserved = {a["Total Reserved"] for a in device}
    assert len(reserved) == 1
    assert max(reserved) < 1.5 * max(a["Total Allocated"] for a in device)
    assert allocator_churn.detect(analysis_of(name)) == []


def test_the_loader_stall_is_ranked_once() -> None:
    # OWLv2's GPU idles mostly while the single-process DataLoader builds batches: the idle
    # hint and the loader hint would claim the same ~0.5 s at the top of the list.
    name = "tracelens_h100_owlv2_large_inference.json.gz"
    analysis = analysis_of(name)
    (idle_hint,) = gpu_idle.detect(analysis)
    assert idle_hint.numbers["dominant_cause"] == "data-loading"
    assert len(data_loading.detect(analysis)) == 1
    kinds = [h.kind for h in run_detectors(analysis)]
    assert kinds.count("data-loading") == 1 and "gpu-idle" not in kinds
    (loader,) = [h for h in run_detectors(analysis) if h.kind == "data-loading"]
    assert "By what the host was doing meanwhile: data-loading" in loader.explanation


def test_sglang_decode_waits_on_an_event_recorded_before_the_trace() -> None:
    """SGLang's decode step: the host calls hipStreamWaitEvent, then a DtoH copy that starts on
    the GPU 463 ms later; no hipEventRecord is in the trace, so the event was recorded before
    it began. The run replays CUDA graphs already: no graph setting is advised."""
    name = "tracelens_mi300x_sglang_qwen3_8b_decode.json.gz"
    events = raw_events(name)
    runtime = sorted((e for e in events if e["cat"] in RUNTIME_CATEGORIES), key=lambda e: e["ts"])
    waits = [e for e in runtime if e["name"] == "hipStreamWaitEvent"]
    assert waits and not [e for e in runtime if "EventRecord" in e["name"]]
    copy = next(e for e in runtime if e["name"] == "hipMemcpyWithStream")
    assert waits[0]["ts"] < copy["ts"] and copy["dur"] > 400_000  # us: the host blocked 463 ms
    [hint] = [h for h in run_detectors(analysis_of(name)) if h.kind == "gpu-idle"]
    assert hint.title.endswith("mostly waiting on an event recorded before the trace began")
    assert "hipStreamWaitEvent" in hint.explanation
    assert not any("cuda-graph" in f for f in hint.fix)


def test_long_launch_gaps_name_the_host_ops_that_fill_them() -> None:
    """HTA's 2-rank DDP trace: DDP's buffer broadcast (aten::unflatten_dense_tensors inside
    DistributedDataParallel.forward, 67.5 ms over the steps) runs while the GPU sits idle in
    the largest gaps. The launch finding names it among the host work of the long gaps, with
    at most its raw time and nearly all of it."""
    name = "hta_a100_nccl_2rank_rank0.json.gz"
    events = raw_events(name)
    raw_us = sum(
        e["dur"]
        for e in events
        if e["name"] == "aten::unflatten_dense_tensors" and e["cat"] in HOST_CATEGORIES
    )
    assert raw_us > 60_000
    [hint] = [h for h in run_detectors(analysis_of(name)) if h.kind == "launch-overhead"]
    said = re.search(r"aten::unflatten_dense_tensors ([\d.]+) ms", hint.explanation)
    assert said is not None
    named_us = float(said.group(1)) * 1000
    assert 0.9 * raw_us <= named_us <= raw_us + 50  # 3 significant digits


def test_qwen_harness_timing_syncs_are_said_as_such() -> None:
    """TraceLens's Qwen prefill: two cudaDeviceSynchronize calls, at the start and the end of
    its one profiled step, called by the benchmark loop (no op around them). The sync finding
    says they time the loop, at low confidence, and puts CUDA-event timing first."""
    name = "tracelens_h100_qwen1.5_0.5b_inference.json.gz"
    events = raw_events(name)
    syncs = [e for e in events if e["name"] == "cudaDeviceSynchronize"]
    steps = [
        e
        for e in events
        if re.match(r"ProfilerStep#\d+$", e["name"]) and e["cat"] in HOST_CATEGORIES
    ]
    assert len(syncs) == 2 and len(steps) == 1
    [hint] = [h for h in run_detectors(analysis_of(name)) if h.kind == "sync-stall"]
    assert hint.confidence == "low"
    assert hint.fix[0].startswith("These syncs time the loop")
    assert f"cudaDeviceSynchronize called directly, {len(syncs)} in 1 step" in hint.explanation
