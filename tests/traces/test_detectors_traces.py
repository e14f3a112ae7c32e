"""The six GPU detectors on real traces, checked against readings of the raw JSON (json/gzip).

Expected figures come from the files themselves, read here without gpuprofile: NCCL kernel
time and its overlap with compute kernels, counts of small or underfilled kernels, counts of
attention softmaxes and their score-matrix sizes.
"""

from __future__ import annotations

import itertools
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.detectors import (
    attention,
    communication,
    launch_overhead,
    low_occupancy,
    roofline_bound,
    run_detectors,
    tensor_cores,
)
from gpuprofile.hardware.match import hardware_for_trace
from gpuprofile.hardware.model import UNKNOWN
from gpuprofile.importers.kineto import load_kineto
from helpers.prerequisites import SHARED_TRACES, require_trace
from helpers.reference import merged, union_length

pytestmark = pytest.mark.traces

KINETO = SHARED_TRACES / "kineto"
DISTRIBUTED = SHARED_TRACES / "kineto-distributed"
KERNEL_CATEGORIES = ("kernel", "Kernel")
# Not compute, by HTA's rule: collectives, copies, memsets, syncs.
NOT_COMPUTE = re.compile(r"^(nccl|rccl).*Kernel|Memcpy|^Memset|Sync")
COLLECTIVE = re.compile(r"^(nccl|rccl).*Kernel")
TIMED_CATEGORIES = (
    "kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset", "cuda_runtime",
    "Runtime", "cuda_driver", "cpu_op", "Operator", "user_annotation", "python_function",
)  # fmt: skip


def path_of(relative: str) -> Path:
    return require_trace(SHARED_TRACES / relative)


def kernels_of(doc: Any) -> list[dict[str, Any]]:
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    return [e for e in events if e.get("ph") == "X" and e.get("cat") in KERNEL_CATEGORIES]


def interval(e: dict[str, Any]) -> tuple[Decimal, Decimal]:
    start = Decimal(e["ts"]) * 1000
    return start, start + Decimal(e["dur"]) * 1000


def intersection(a: list[tuple[Decimal, Decimal]], b: list[tuple[Decimal, Decimal]]) -> Decimal:
    total, i, j = Decimal(0), 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(hi - lo, Decimal(0))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def wall(doc: Any) -> Decimal:
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    spans = [interval(e) for e in events if e.get("ph") == "X" and e.get("cat") in TIMED_CATEGORIES]
    return max(end for _, end in spans) - min(start for start, _ in spans)


# --- communication -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "relative",
    [
        "kineto/hta_a100_nccl_2rank_rank0.json.gz",
        "kineto-distributed/param_dlrm_8xV100",
        "kineto-distributed/hta_sampled_128rank",
    ],
)
def test_communication_time_is_the_union_of_nccl_kernels(relative: str, traces: Any) -> None:
    path = path_of(relative)
    analysis = Analysis(load_kineto(path), UNKNOWN)
    hints = {h.rank: h for h in communication.detect(analysis)}
    # Through run_detectors, a job's per-rank hints are said once, naming the worst rank.
    said = [h for h in run_detectors(analysis) if h.kind == "communication"]
    checked = 0
    files = traces.rank_files(path)
    # DLRM's ranks share one clock and hold each collective's kernels in one order, so the
    # k-th kernel of a collective is one instance on every rank: its waits are worked out
    # here. HTA's sampled job launches several kernels per collective call, which order alone
    # does not pair: there the waits left out are only checked to add up (below).
    paired = relative == "kineto-distributed/param_dlrm_8xV100"
    waiting = _waiting(files) if paired else {}
    for rank, _, doc in files:
        kernels = kernels_of(doc)
        comm_ns = exposed = apart = Decimal(0)
        for device in {e["args"].get("device") for e in kernels}:
            on_device = [e for e in kernels if e["args"].get("device") == device]
            comm = merged([interval(e) for e in on_device if e["name"].startswith("nccl")])
            compute = merged([interval(e) for e in on_device if not NOT_COMPUTE.search(e["name"])])
            comm_ns += union_length(comm)
            exposed += union_length(comm) - intersection(comm, compute)
            # The compute that overlap could still hide collectives behind.
            apart += union_length(compute) - intersection(comm, compute)
            # In a job, the part spent waiting for the last rank to arrive is the straggler's.
            waited = merged(waiting.get((rank, device), []))
            exposed -= union_length(waited) - intersection(waited, compute)
        count = sum(e["name"].startswith("nccl") for e in kernels)
        if exposed < Decimal("0.01") * wall(doc):
            assert rank not in hints
            continue
        hint = hints[rank]
        # Our times are whole nanoseconds from the trace start: at most 1 ns off per kernel.
        assert abs(hint.numbers["comm_ns"] - comm_ns) <= count
        waited = hint.numbers["waiting_for_ranks_ns"]
        tolerance = 2 * len(kernels)
        if paired or len(files) < 2:
            assert abs(hint.numbers["exposed_ns"] - exposed) <= tolerance
        else:
            assert 0 <= waited <= exposed
            assert abs(hint.numbers["exposed_ns"] + waited - exposed) <= tolerance
        # Overlap hides collectives only behind compute: the gain is capped by it.
        assert abs(hint.numbers["compute_apart_ns"] - apart) <= tolerance
        assert hint.gain_ns == min(hint.numbers["exposed_ns"], hint.numbers["compute_apart_ns"])
        assert hint.numbers["collective_kernels"] == count
        checked += 1
    assert checked >= 1
    if len(hints) > 1:
        worst = max(hints.values(), key=lambda h: h.gain_ns)
        (job_hint,) = said
        assert job_hint.rank is None and job_hint.gain_ns == worst.gain_ns
        assert job_hint.title.endswith(
            f"on {len(hints)} of {len(analysis.trace.ranks)} ranks, worst rank {worst.rank}"
        )


def _waiting(files: list[tuple[int, Any, Any]]) -> dict[tuple[int, Any], list[Any]]:
    """Per (rank, device) of a job, the intervals its NCCL kernels spent waiting for the last
    rank to arrive: the k-th kernel of each collective on every rank is one instance (the
    shared traces' ranks hold the same collectives in the same order, on one clock); its
    wait is the latest start among the ranks minus its own, cut at its end."""
    if len(files) < 2:
        return {}
    by_rank = {
        rank: sorted(
            (e for e in kernels_of(doc) if e["name"].startswith("nccl")), key=lambda e: e["ts"]
        )
        for rank, _, doc in files
    }
    out: dict[tuple[int, Any], list[Any]] = {}
    for name in {e["name"].split("(")[0] for kernels in by_rank.values() for e in kernels}:
        runs = {
            r: [e for e in kernels if e["name"].split("(")[0] == name]
            for r, kernels in by_rank.items()
        }
        for k in range(min(len(v) for v in runs.values())):
            last = max(interval(v[k])[0] for v in runs.values())
            for r, v in runs.items():
                start, end = interval(v[k])
                if last > start:
                    out.setdefault((r, v[k]["args"].get("device")), []).append(
                        (start, min(last, end))
                    )
    return out


def test_sendrecv_from_all_to_all_is_not_called_pipeline_parallelism(traces: Any) -> None:
    path = path_of("kineto-distributed/param_dlrm_8xV100")
    hints = communication.detect(Analysis(load_kineto(path), UNKNOWN))
    assert hints
    checked = 0
    for rank, _, doc in traces.rank_files(path):
        events = doc["traceEvents"]
        sendrecv = any("SendRecv" in e.get("name", "") for e in kernels_of(doc))
        alltoall = any("all_to_all" in e.get("name", "") for e in events if e.get("ph") == "X")
        hint = next((h for h in hints if h.rank == rank), None)
        if hint is None or not sendrecv:
            continue
        # In this DLRM run the SendRecv kernels are NCCL's all_to_all, as the raw ops say.
        assert alltoall
        assert "all_to_all" in hint.fix[0] and "pipeline parallelism" not in hint.fix[0]
        checked += 1
    assert checked >= 1, "no rank with both a communication hint and SendRecv kernels"


def test_communication_on_a_cpu_only_gloo_trace(traces: Any) -> None:
    path = path_of("kineto/hta_cpu_only_gloo_rank34.pt.trace.json.gz")
    [hint] = communication.detect(Analysis(load_kineto(path), UNKNOWN))
    [(rank, _, doc)] = traces.rank_files(path)
    events = doc["traceEvents"]
    gloo = merged([interval(e) for e in events if e.get("name", "").startswith("gloo:")])
    assert hint.rank == rank == 34
    assert hint.numbers["collective_events"] == sum(
        e.get("name", "").startswith("gloo:") for e in events
    )
    assert abs(hint.numbers["comm_ns"] - union_length(gloo)) <= 10


# --- attention -----------------------------------------------------------------------------


def test_attention_fires_on_owlv2_unfused_attention(traces: Any) -> None:
    path = path_of("kineto/tracelens_h100_owlv2_large_inference.json.gz")
    [hint] = attention.detect(Analysis(load_kineto(path), UNKNOWN))
    events = traces.read_json(path)["traceEvents"]
    softmaxes = [
        e
        for e in events
        if e.get("cat") == "cpu_op"
        and e["name"] == "aten::softmax"
        and e["args"]["Input Dims"][0] == [16, 5185, 5185]
    ]
    assert softmaxes and softmaxes[0]["args"]["Input type"][0] == "c10::BFloat16"
    assert hint.numbers["occurrences"] == len(softmaxes)
    assert hint.numbers["max_score_bytes"] == 16 * 5185 * 5185 * 2
    assert "L=5185" in hint.title
    # The softmax kernels are among what fusion removes; the matmuls are not counted.
    softmax_ns = sum(
        Decimal(e["dur"]) * 1000
        for e in events
        if e.get("cat") == "kernel" and "SoftMaxForward" in e["name"]
    )
    gemm_ns = sum(
        Decimal(e["dur"]) * 1000 for e in events if e.get("cat") == "kernel" and "gemm" in e["name"]
    )
    assert softmax_ns <= hint.gain_ns + len(softmaxes)
    total = sum(Decimal(e["dur"]) * 1000 for e in events if e.get("cat") == "kernel")
    assert hint.gain_ns <= total - gemm_ns


@pytest.mark.parametrize(
    "name",
    [
        "tracelens_h100_bert_small_inference.json.gz",
        "tracelens_h100_falconsai_vit_inference.json.gz",
        "tracelens_h100_qwen1.5_0.5b_inference.json.gz",
    ],
)
def test_attention_silent_on_flash_sdpa(name: str, traces: Any) -> None:
    path = path_of(f"kineto/{name}")
    names = {e.get("name") for e in traces.read_json(path)["traceEvents"]}
    assert "aten::_scaled_dot_product_flash_attention" in names
    assert attention.detect(Analysis(load_kineto(path), UNKNOWN)) == []


# --- launch overhead -----------------------------------------------------------------------


def test_launch_overhead_fires_on_bert_small_kernels(traces: Any) -> None:
    path = path_of("kineto/tracelens_h100_bert_small_inference.json.gz")
    [hint] = launch_overhead.detect(Analysis(load_kineto(path), UNKNOWN))
    kernels = kernels_of(traces.read_json(path))
    small = [e for e in kernels if Decimal(e["dur"]) * 1000 < 10_000]
    assert hint.numbers["kernels"] == len(kernels)
    assert hint.numbers["small_kernels"] == len(small)
    assert hint.numbers["small_kernel_ns"] == pytest.approx(
        float(sum(Decimal(e["dur"]) * 1000 for e in small)), abs=len(small)
    )
    # Whatever it claims back is GPU idle time inside the kernels' window.
    blocks = merged([interval(e) for e in kernels])
    idle = (blocks[-1][1] - blocks[0][0]) - union_length(blocks)
    assert 0 < hint.gain_ns <= idle


def test_launch_overhead_silent_on_alexnet(traces: Any) -> None:
    path = path_of("kineto/hta_a100_alexnet_critical_path.pt.trace.json.gz")
    assert launch_overhead.detect(Analysis(load_kineto(path), UNKNOWN)) == []


# --- low occupancy -------------------------------------------------------------------------


def test_low_occupancy_counts_underfilled_kernels(traces: Any) -> None:
    path = path_of("kineto/hta_v100_32gb_ns_resolution.pt.trace.json.gz")
    [hint] = low_occupancy.detect(Analysis(load_kineto(path), UNKNOWN))
    doc = traces.read_json(path)
    sms = doc["deviceProperties"][0]["numSms"]
    underfilled = [
        e
        for e in kernels_of(doc)
        if "blocks per SM" in e["args"]
        and not COLLECTIVE.match(e["name"])
        and Decimal(e["dur"]) * 1000 >= 10_000
        # Fewer blocks than SMs is less than one wave: it counts from a tenth of the SMs idle
        # (thresholds.MIN_ONE_WAVE_IDLE), not the quarter a multi-wave tail needs.
        and 1 - _blocks(e) / sms >= 0.1
    ]
    assert underfilled
    assert hint.numbers["sm_count"] == sms
    assert hint.numbers["kernels_underfilled"] == len(underfilled)
    assert hint.numbers["underfilled_ns"] == pytest.approx(
        float(sum(Decimal(e["dur"]) * 1000 for e in underfilled)), abs=len(underfilled)
    )


def _blocks(e: dict[str, Any]) -> int:
    x, y, z = e["args"]["grid"]
    return int(x) * int(y) * int(z)


def test_low_occupancy_silent_on_rocm_grids(traces: Any) -> None:
    path = path_of("kineto/tracelens_mi300x_ddp_resnet18_train.json.gz")
    assert not any("blocks per SM" in e["args"] for e in kernels_of(traces.read_json(path)))
    assert low_occupancy.detect(Analysis(load_kineto(path), UNKNOWN)) == []


# --- tensor cores --------------------------------------------------------------------------


def test_tensor_cores_flags_owlv2_misaligned_bf16_bmm(traces: Any) -> None:
    path = path_of("kineto/tracelens_h100_owlv2_large_inference.json.gz")
    trace = load_kineto(path)
    [hint] = tensor_cores.detect(Analysis(trace, hardware_for_trace(trace)))
    events = traces.read_json(path)["traceEvents"]
    scores = [
        e
        for e in events
        if e.get("cat") == "cpu_op"
        and e["name"] == "aten::bmm"
        and e["args"]["Input Dims"] == [[16, 5185, 64], [16, 64, 5185]]
    ]
    assert "bf16" in hint.title
    assert f"aten::bmm [16, 5185, 64] x [16, 64, 5185] x{len(scores)}" in str(
        hint.numbers["misaligned_shapes"]
    )
    assert "op:aten::bmm|[[16, 5185, 64], [16, 64, 5185]]" in hint.related
    # 5185 is odd: the kernels cuBLAS picked are CUTLASS's 1-element-aligned ones.
    assert any("align1" in e["name"] for e in kernels_of({"traceEvents": events}))


def test_tensor_cores_silent_where_fp32_matmuls_ran_tf32(traces: Any) -> None:
    path = path_of("kineto/hta_a100_train_rank3_of8_async_cpu_to_gpu.json.gz")
    trace = load_kineto(path)
    kernels = kernels_of(traces.read_json(path))
    tensor_op = sum(Decimal(e["dur"]) for e in kernels if "tensorop_s1688gemm" in e["name"])
    sgemm = sum(Decimal(e["dur"]) for e in kernels if "sgemm" in e["name"])
    assert tensor_op > 5 * sgemm  # TF32 (allow_tf32 on, the pre-1.12 default) did the work
    assert tensor_cores.detect(Analysis(trace, hardware_for_trace(trace))) == []


# --- memory- and compute-bound -------------------------------------------------------------


def test_roofline_bound_on_owlv2() -> None:
    path = path_of("kineto/tracelens_h100_owlv2_large_inference.json.gz")
    trace = load_kineto(path)
    analysis = Analysis(trace, hardware_for_trace(trace))
    hints = {h.kind: h for h in roofline_bound.detect(analysis)}
    memory = hints["memory-bound"]
    points = analysis.roofline.points.set_index("key")
    assert set(memory.related) <= set(points.index)
    assert "op:aten::softmax|[[16, 5185, 5185], [], []]" in memory.related
    related = points.loc[list(memory.related)]
    assert (related["pct_of_roof"] <= 50).all() and (related["bound"] == "memory").all()
    expected = (related["known_time_ns"] - related["time_at_roof_ns"] / 0.8).clip(lower=0).sum()
    assert memory.gain_ns == pytest.approx(expected, abs=len(related))
    assert roofline_bound.detect(Analysis(trace, UNKNOWN)) == []


def test_softmax_point_on_owlv2_from_the_raw_trace(traces: Any) -> None:
    """The heaviest memory-bound point, recomputed from the raw JSON and the H100 datasheet."""
    path = path_of("kineto/tracelens_h100_owlv2_large_inference.json.gz")
    [(_, _, doc)] = traces.rank_files(path)
    events = doc["traceEvents"]
    dims = [[16, 5185, 5185], [], []]
    softmax = [
        e
        for e in events
        if e.get("name") == "aten::softmax" and e.get("args", {}).get("Input Dims") == dims
    ]
    calls = [e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")]
    launched = {
        c["args"]["correlation"]
        for op in softmax
        for c in calls
        if c["tid"] == op["tid"] and op["ts"] <= c["ts"] <= op["ts"] + op["dur"]
    }
    kernel_ns = sum(
        Decimal(str(k["dur"])) * 1000
        for k in kernels_of(doc)
        if k["args"].get("correlation") in launched
    )
    elements = 16 * 5185 * 5185
    nbytes = len(softmax) * elements * 2 * 2  # bf16, read once and written once
    h100_sxm_hbm3 = 3.35e12  # bytes/s, NVIDIA H100 datasheet (SXM5)
    at_roof = nbytes / h100_sxm_hbm3

    trace = load_kineto(path)
    analysis = Analysis(trace, hardware_for_trace(trace))
    point = analysis.roofline.points.set_index("key").loc[f"op:aten::softmax|{dims}"]
    assert point["count"] == len(softmax) == 120
    assert point["bytes"] == nbytes
    assert point["time_at_roof_ns"] == pytest.approx(at_roof * 1e9, rel=1e-9)
    assert abs(point["known_time_ns"] - kernel_ns) <= len(launched)
    assert point["pct_of_roof"] == pytest.approx(100 * at_roof * 1e9 / float(kernel_ns), rel=1e-6)


@pytest.mark.parametrize(
    ("relative", "fires"),
    [
        ("kineto/hta_a100_nccl_2rank_rank0.json.gz", True),  # cuDNN's nchwToNhwc and back
        ("kineto/tracelens_mi300x_ddp_resnet18_train.json.gz", True),  # MIOpen's transposes
        ("kineto/hta_a100_alexnet_critical_path.pt.trace.json.gz", False),  # under 5%
    ],
)
def test_layout_conversions_against_the_raw_kernels(
    relative: str, fires: bool, traces: Any
) -> None:
    """The conversions' time is the summed duration of the raw JSON's kernels named as NCHW /
    NHWC transposes; their share is of the GPU's busy time (the union of its kernels, copies
    and sets), both read here with json alone."""
    from gpuprofile.analyses.detectors import layout_conversion

    path = path_of(relative)
    doc = traces.read_json(path)
    events = traces.trace_events(doc)
    on_gpu = ("kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset")
    gpu = [e for e in events if e.get("cat") in on_gpu and "dur" in e]
    layout = re.compile(r"nchwToNhwc|nhwcToNchw|batched_transpose_\d+x\d+")
    converting = [e for e in kernels_of(doc) if layout.search(e["name"])]
    conversion_ns = sum(Decimal(str(e["dur"])) for e in converting) * 1000
    busy_ns = union_length([interval(e) for e in gpu])
    hints = layout_conversion.detect(Analysis(load_kineto(path)))
    assert bool(hints) is fires, conversion_ns / busy_ns
    if fires:
        (hint,) = hints
        assert hint.numbers["kernels"] == len(converting)
        assert abs(hint.numbers["conversion_ns"] - conversion_ns) <= len(converting)
        assert abs(hint.numbers["busy_ns"] - busy_ns) <= 1000
        assert "channels_last" in hint.fix[0]


def test_a_range_profiled_trace_gets_its_note_and_no_timing_finding(tmp_path: Path) -> None:
    """HTA's range-profiler trace: each kernel was replayed under CUPTI's range profiler (one
    cuda_profiler_range event each), so its times are not the program's. The report says so
    and gives no finding; the same events without the ranges (a copy written here) do get
    findings, so the ranges are what silences them."""
    import gzip
    import json

    from gpuprofile.analyses.detectors import run_detectors
    from gpuprofile.report.build import build_report, plain_report
    from gpuprofile.report.text import render_text

    path = require_trace(KINETO / "hta_a100_cupti_range_profiler.json.gz")
    doc = json.loads(gzip.decompress(path.read_bytes()))
    ranges = [e for e in doc["traceEvents"] if e.get("cat") == "cuda_profiler_range"]
    trace = load_kineto(path)
    analysis = Analysis(trace, hardware_for_trace(trace))
    report = plain_report(analysis)
    [note] = [n["text"] for n in report["notices"] if "range profiler" in n["text"]]
    assert f"{len(ranges)} counter ranges" in note
    assert report["hints"] == []
    # The file lists the machine's 8 GPUs, one name: said once with its count.
    names = {d["name"] for d in doc["deviceProperties"]}
    assert len(names) == 1 and len(doc["deviceProperties"]) == 8
    text = render_text(build_report(analysis))
    assert f"rank 0 ({len(doc['deviceProperties'])} x {names.pop()})" in text
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("cat") != "cuda_profiler_range"]
    (tmp_path / "t.json").write_text(json.dumps(doc))
    plain = load_kineto(tmp_path / "t.json")
    assert not plain.meta.notes
    assert run_detectors(Analysis(plain, hardware_for_trace(plain)))


def test_ddp_buffer_broadcast_against_the_raw_ops(traces: Any) -> None:
    """HTA's 2-rank DDP ResNet: DistributedDataParallel.forward flattens, broadcasts and
    unflattens the BatchNorm buffers at every forward. The gain is the GPU's idle time (the
    window less the union of its kernels, copies and sets) that those ops, found inside a
    DistributedDataParallel.forward range on the same thread, cover: all read with json alone.
    The same ops outside DDP's forward would not count."""
    from gpuprofile.analyses.detectors import ddp_buffers

    path = path_of("kineto/hta_a100_nccl_2rank_rank0.json.gz")
    events = traces.trace_events(traces.read_json(path, exact=True))
    timed = [e for e in events if e.get("ph") == "X" and "dur" in e]
    on_gpu = ("kernel", "gpu_memcpy", "gpu_memset")
    busy = merged(interval(e) for e in timed if e.get("cat") in on_gpu)
    idle = [(a[1], b[0]) for a, b in itertools.pairwise(busy)]
    forwards = [e for e in timed if e["name"].startswith("DistributedDataParallel.forward")]
    names = ("aten::flatten_dense_tensors", "c10d::broadcast_", "aten::unflatten_dense_tensors")

    def inside_forward(e: dict[str, Any]) -> bool:
        start, end = interval(e)
        return any(
            f["tid"] == e["tid"] and interval(f)[0] <= start and end <= interval(f)[1]
            for f in forwards
        )

    broadcast = [e for e in timed if e["name"] in names and inside_forward(e)]
    assert broadcast and any(e["name"] == "c10d::broadcast_" for e in broadcast)
    expected = intersection(idle, merged(interval(e) for e in broadcast))
    (hint,) = ddp_buffers.detect(Analysis(load_kineto(path)))
    assert abs(hint.gain_ns - expected) <= 1000, (hint.gain_ns, expected)
    assert hint.numbers["op_ns"] == pytest.approx(
        float(union_length(interval(e) for e in broadcast)), abs=1000
    )
    assert "broadcast_buffers=False" in hint.fix[0]


def test_alexnets_weight_uploads_are_setup_not_a_pageable_finding(traces: Any) -> None:
    """PARAM's AlexNet: all 16 HtoD copies are pageable and end before the benchmark's first
    "[param|...|forward]" range (the weights moved to the GPU once, read from the raw JSON),
    and no ProfilerStep marks steps: no pageable-copy finding, where one was given before."""
    from gpuprofile.analyses.detectors import pageable_copy

    path = path_of("kineto/hta_a100_alexnet_critical_path.pt.trace.json.gz")
    events = traces.trace_events(traces.read_json(path))
    copies = [e for e in events if e.get("cat") == "gpu_memcpy"]
    forwards = [e["ts"] for e in events if re.match(r"\[param\|.*\|forward\]$", e.get("name", ""))]
    assert len(copies) == 16 and all("Pageable" in e["name"] for e in copies)
    assert max(e["ts"] + e["dur"] for e in copies) < min(forwards)
    assert not any(e.get("name", "").startswith("ProfilerStep") for e in events)
    assert pageable_copy.detect(Analysis(load_kineto(path))) == []


def test_a_sample_of_ranks_qualifies_its_straggler_and_collectives(traces: Any) -> None:
    """HTA's sampled job holds 2 of the 128 ranks its files declare (distributedInfo read
    with json): the last of the two to arrive may be waiting on unseen ranks, so the
    straggler and collective findings say so, at low confidence."""
    from gpuprofile.analyses.detectors import straggler

    path = path_of("kineto-distributed/hta_sampled_128rank")
    files = traces.rank_files(path)
    sizes = {doc["distributedInfo"]["world_size"] for _, _, doc in files}
    assert len(files) == 2 and sizes == {128}
    analysis = Analysis(load_kineto(path), UNKNOWN)
    (late,) = straggler.detect(analysis)
    assert late.confidence == "low" and "of the 2 ranks traced" in late.title
    assert "Only 2 of the job's 128 ranks are in the trace" in late.explanation
    for hint in communication.detect(analysis):
        assert hint.confidence == "low" and "Only 2 of the job's 128 ranks" in hint.explanation


def test_tf32_tensor_op_kernels_mean_tf32_is_on(traces: Any) -> None:
    """HTA's TorchRec rank 3 runs its fp32 GEMMs on cutlass_80_tensorop_s1688gemm kernels
    (fp32 inputs on TF32 tensor cores; names read from the raw JSON): those ops are held to
    the TF32 roof, so no point is 'past the fp32 roof'. On the 128-rank sample, where 64 fp32
    matmuls still run sgemm, the finding says TF32 is on (counting the raw s1688 launches of
    that rank) and does not advise allowing it."""
    tf32 = re.compile(r"tensorop_s1688gemm")
    path = path_of("kineto/hta_a100_train_rank3_of8_async_cpu_to_gpu.json.gz")
    kernels = kernels_of(traces.read_json(path))
    assert sum(bool(tf32.search(e["name"])) for e in kernels) > 0
    analysis = Analysis(load_kineto(path))
    points = analysis.roofline.points
    held = points[points["name"].astype(str).str.contains("tensorop_s1688gemm")]
    assert len(held) and set(held["compute_roof"]) == {"tf32"}
    assert not analysis.roofline.notes, analysis.roofline.notes

    from gpuprofile.analyses.detectors import tensor_cores

    path = path_of("kineto-distributed/hta_sampled_128rank")
    launches = {
        rank: sum(bool(tf32.search(e["name"])) for e in kernels_of(doc))
        for rank, _, doc in traces.rank_files(path)
    }
    hints = tensor_cores.detect(Analysis(load_kineto(path), UNKNOWN))
    assert hints
    for hint in hints:
        assert hint.rank in launches
        assert f"TF32 is on: {launches[hint.rank]} kernels on this rank" in hint.explanation
        assert not any("allow_tf32" in step or "matmul_precision" in step for step in hint.fix)
