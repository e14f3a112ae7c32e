"""Six detectors on Kineto documents built here (and real CPU captures for attention).

Every expected number is worked out by hand from the document the test builds, or from a
formula written in the test.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest

from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.detectors import (
    attention,
    communication,
    judged,
    launch_overhead,
    low_occupancy,
    roofline_bound,
    tensor_cores,
)
from gpuprofile.analyses.hints import KINDS, MAX_EVIDENCE_EVENTS, Hint
from gpuprofile.analyses.thresholds import severity_for
from gpuprofile.hardware.model import UNKNOWN, Hardware
from gpuprofile.importers.kineto import load_kineto
from gpuprofile.trace.model import Trace
from helpers.kineto_docs import cpu_op, document, kernel, runtime, write

US = 1000  # ns per microsecond
A100ISH = {
    "id": 0,
    "name": "Test GPU",
    "numSms": 108,
    "maxThreadsPerMultiprocessor": 2048,
    "computeMajor": 8,
    "computeMinor": 0,
}
GPU = Hardware(
    name="test gpu",
    source="user",
    peak_flops={"fp32": 20e12, "tf32": 160e12, "bf16": 320e12},
    dram_bytes_per_s=2e12,
    sm_count=108,
)


def load(tmp_path: Path, events: list[dict], **top: Any) -> Trace:
    top.setdefault("deviceProperties", [A100ISH])
    return load_kineto(write(tmp_path / "trace.json", document(events, **top)))


def check(hint: Hint, trace: Trace) -> None:
    """What every hint must satisfy: a known kind, evidence that exists in the trace."""
    assert hint.kind in KINDS
    assert hint.title and len(hint.title) < 100
    assert hint.fix and hint.explanation and hint.gain_method
    assert hint.evidence
    for evidence in hint.evidence:
        assert 0 < len(evidence.event_ids) <= MAX_EVIDENCE_EVENTS
        assert set(evidence.event_ids) <= set(trace.table(evidence.table)["id"])
        assert evidence.windows


# --- launch overhead -----------------------------------------------------------------------


def small_kernels(n: int = 30, *, dur: float = 3, step: float = 23) -> list[dict]:
    """n kernels alternating add/mul, each launched 5 us before it starts."""
    events = []
    for i in range(n):
        ts = 100 + i * step
        events.append(runtime("cudaLaunchKernel", ts - 5, 4, corr=i + 1))
        events.append(kernel("add_kernel" if i % 2 == 0 else "mul_kernel", ts, dur, corr=i + 1))
    return events


def test_launch_overhead_fires_on_gaps_between_small_kernels(tmp_path: Path) -> None:
    trace = load(tmp_path, small_kernels())
    [hint] = launch_overhead.detect(Analysis(trace, UNKNOWN))
    check(hint, trace)
    # 29 gaps of 23 - 3 = 20 us, each less the 1 us a graph replay keeps.
    assert hint.gain_ns == 29 * (20 - 1) * US
    wall = (100 + 29 * 23 + 3 - 95) * US
    assert judged(hint).severity == severity_for(hint.gain_ns, wall) == "high"
    assert hint.numbers["small_kernels"] == 30
    assert hint.numbers["launch_calls"] == 30
    assert hint.numbers["launch_ns_for_small_kernels"] == 30 * 4 * US
    assert hint.numbers["launch_gap_ns"] == 29 * 20 * US
    # A B A B ... : "A B A B" starts at 0, 2, ..., 26 (14 times), its four kernels 3 us each
    # (the gaps between them not counted); "B A B A" 13 times; the 2- and 3-kernel runs
    # inside them are not listed again.
    seq = "add_kernel -> mul_kernel -> add_kernel -> mul_kernel"
    assert hint.numbers["fusion_candidate_1"] == f"{seq} (x14, 168 µs)"  # 14 x 4 x 3 µs
    assert str(hint.numbers["fusion_candidate_2"]).startswith("mul_kernel -> add_kernel")
    assert "fusion_candidate_3" not in hint.numbers
    assert {e.table for e in hint.evidence} == {"kernels", "runtime"}


def test_launch_overhead_leaves_out_gaps_under_a_sync(tmp_path: Path) -> None:
    # cudaDeviceSynchronize across the gap after kernel 5 (which ends at 100 + 5*23 + 3 us).
    sync = runtime("cudaDeviceSynchronize", 100 + 5 * 23 + 4, 5, corr=999)
    trace = load(tmp_path, [*small_kernels(), sync])
    [hint] = launch_overhead.detect(Analysis(trace, UNKNOWN))
    assert hint.gain_ns == 28 * (20 - 1) * US


def test_launch_overhead_silent_on_long_back_to_back_kernels(tmp_path: Path) -> None:
    trace = load(tmp_path, small_kernels(dur=200, step=202))
    assert launch_overhead.detect(Analysis(trace, UNKNOWN)) == []


def test_launch_overhead_silent_on_a_cpu_only_trace(tmp_path: Path) -> None:
    ops = [cpu_op("aten::add", 10 + 3 * i, 2) for i in range(100)]
    trace = load(tmp_path, ops, deviceProperties=[])
    assert launch_overhead.detect(Analysis(trace, UNKNOWN)) == []


# --- low occupancy -------------------------------------------------------------------------


def launch(name: str, ts: float, dur: float, corr: int, blocks: int, occupancy: float) -> dict:
    return kernel(
        name,
        ts,
        dur,
        corr,
        grid=[blocks, 1, 1],
        block=[256, 1, 1],
        **{"blocks per SM": blocks / 108, "est. achieved occupancy %": occupancy},
    )


def test_low_occupancy_fires_on_a_half_empty_grid_and_a_tail(tmp_path: Path) -> None:
    trace = load(
        tmp_path,
        [
            # 54 blocks on 108 SMs: half the SMs idle for the whole kernel.
            launch("reduce_kernel", 100, 1000, 1, 54, 6),
            # 4 blocks of 256 threads fit an SM (50% of 2048 threads): 462 blocks make
            # 462 / 432 waves, the second one mostly empty.
            launch("gemm_tail", 1200, 1000, 2, 462, 50),
            # 864 = 2 full waves: nothing idle.
            launch("gemm_full", 2300, 1000, 3, 864, 50),
            # Too short to judge (launch latency dominates).
            launch("tiny", 3400, 5, 4, 1, 0),
        ],
    )
    [hint] = low_occupancy.detect(Analysis(trace, UNKNOWN))
    check(hint, trace)
    waves = 462 / (108 * 4)
    idle = 1000 * US * (1 - 54 / 108) + 1000 * US * (1 - waves / math.ceil(waves))
    assert hint.gain_ns == pytest.approx(0.5 * idle, abs=1)
    assert hint.numbers["idle_capacity_ns"] == pytest.approx(idle, abs=1)
    assert hint.numbers["sm_count"] == 108
    assert hint.numbers["kernels_underfilled"] == 1
    assert hint.numbers["kernels_tail"] == 1
    assert judged(hint).severity == severity_for(hint.gain_ns, (3405 - 100) * US)
    ids = set(trace.kernels.loc[trace.kernels["name"].isin(["reduce_kernel", "gemm_tail"]), "id"])
    assert set(hint.evidence[0].event_ids) == ids


def test_low_occupancy_silent_on_full_waves(tmp_path: Path) -> None:
    trace = load(
        tmp_path, [launch("gemm_full", 100 + 1100 * i, 1000, i, 864, 50) for i in range(3)]
    )
    assert low_occupancy.detect(Analysis(trace, UNKNOWN)) == []


def test_low_occupancy_silent_without_grid_info(tmp_path: Path) -> None:
    # No "blocks per SM": the grid's unit is not known (ROCm writes work-items for some).
    trace = load(tmp_path, [kernel("k", 100, 1000, 1, grid=[1, 1, 1], block=[64, 1, 1])])
    assert low_occupancy.detect(Analysis(trace, UNKNOWN)) == []


# --- communication -------------------------------------------------------------------------

NCCL = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"


def test_communication_fires_on_exposed_nccl_time(tmp_path: Path) -> None:
    trace = load(
        tmp_path,
        [
            kernel("gemm", 100, 300, 1, stream=7),
            kernel(NCCL, 300, 400, 2, stream=20),
            kernel("relu", 800, 100, 3, stream=7),
        ],
    )
    [hint] = communication.detect(Analysis(trace, UNKNOWN))
    check(hint, trace)
    # NCCL [300, 700) us; compute [100, 400) overlaps [300, 400): 100 us hidden, 300 exposed.
    assert hint.numbers["comm_ns"] == 400 * US
    assert hint.numbers["overlapped_ns"] == 100 * US
    assert hint.gain_ns == hint.numbers["exposed_ns"] == 300 * US
    assert hint.numbers["gpu_window_ns"] == 800 * US
    assert hint.numbers["comm_share_pct"] == 50.0
    assert hint.numbers["top_collectives"] == "AllReduce x1 (400 µs)"
    assert judged(hint).severity == "high"


@pytest.mark.parametrize(
    ("launcher", "expected"),
    [("aten::send", "pipeline parallelism"), ("c10d::alltoall_base_", "all_to_all")],
)
def test_sendrecv_fix_depends_on_what_launched_it(
    tmp_path: Path, launcher: str, expected: str
) -> None:
    sendrecv = "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)"
    trace = load(tmp_path, [cpu_op(launcher, 250, 20), kernel(sendrecv, 300, 400, 2, stream=20)])
    [hint] = communication.detect(Analysis(trace, UNKNOWN))
    assert expected in hint.fix[0]


def test_sendrecv_alone_gets_no_gradient_advice(tmp_path: Path) -> None:
    """All-to-all exchanges carry no gradients: no DDP buckets, no_sync or compression hooks,
    unless a gradient collective (an all-reduce) ran beside them."""
    sendrecv = "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)"
    alone = [cpu_op("c10d::alltoall_base_", 250, 20), kernel(sendrecv, 300, 400, 2, stream=20)]
    [hint] = communication.detect(Analysis(load(at(tmp_path, "a"), alone), UNKNOWN))
    text = " ".join(hint.fix) + hint.code
    assert "all_to_all" in hint.fix[0] and "slowest rank" in hint.fix[-1]
    assert not re.search(r"bucket_cap_mb|no_sync|comm_hook|DistributedDataParallel", text)
    beside = [*alone, kernel(NCCL, 800, 400, 3, stream=20)]
    [hint] = communication.detect(Analysis(load(at(tmp_path, "b"), beside), UNKNOWN))
    assert "all_to_all" in hint.fix[0]
    assert any("bucket_cap_mb" in f for f in hint.fix) and "no_sync" in hint.code


def test_communication_silent_when_fully_overlapped(tmp_path: Path) -> None:
    trace = load(
        tmp_path,
        [kernel("gemm", 100, 300, 1, stream=7), kernel(NCCL, 150, 200, 2, stream=20)],
    )
    assert communication.detect(Analysis(trace, UNKNOWN)) == []


def test_communication_silent_without_collectives(tmp_path: Path) -> None:
    trace = load(tmp_path, [kernel("gemm", 100, 300, 1), kernel("relu", 500, 100, 2)])
    assert communication.detect(Analysis(trace, UNKNOWN)) == []


def gloo(ts: float, dur: float) -> dict:
    return {
        "ph": "X",
        "cat": "user_annotation",
        "name": "gloo:all_reduce",
        "pid": 100,
        "tid": 2,
        "ts": ts,
        "dur": dur,
        "args": {},
    }


def test_communication_on_a_cpu_gloo_run(tmp_path: Path) -> None:
    events = [
        cpu_op("aten::add", 0, 100),
        gloo(50, 200),
        cpu_op("c10d::allreduce_", 100, 10),
    ]
    trace = load(tmp_path, events, deviceProperties=[])
    [hint] = communication.detect(Analysis(trace, UNKNOWN))
    check(hint, trace)
    # Collectives cover [50, 250) us; aten::add [0, 100) overlaps 50 us of it.
    assert hint.numbers["comm_ns"] == 200 * US
    assert hint.numbers["overlapped_ns"] == 50 * US
    assert hint.gain_ns == 150 * US


# --- attention (real CPU captures) ---------------------------------------------------------


def capture(tmp_path: Path, variant: str) -> Trace:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.profiler import ProfilerActivity, profile

    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 256, 64) for _ in range(3))
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        if variant == "hand":
            scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
            torch.softmax(scores, dim=-1) @ v
        elif variant == "sdpa":
            F.scaled_dot_product_attention(q, k, v)
        else:
            with sdpa_kernel(SDPBackend.MATH):
                F.scaled_dot_product_attention(q, k, v)
    path = tmp_path / f"{variant}.json"
    prof.export_chrome_trace(str(path))
    return load_kineto(path)


def test_attention_fires_on_hand_written_attention(tmp_path: Path) -> None:
    trace = capture(tmp_path, "hand")
    [hint] = attention.detect(Analysis(trace, UNKNOWN))
    check(hint, trace)
    assert hint.kind == "attention-unfused"
    assert hint.title == "Unfused attention at L=256 (x1)"  # one rank: no "Rank 0:"
    # 2 x 4 heads of 256 x 256 fp32 scores.
    assert hint.numbers["max_score_bytes"] == 2 * 4 * 256 * 256 * 4
    assert hint.numbers["max_queries"] == hint.numbers["max_keys"] == 256
    assert "2.10 MB" in hint.explanation and "L^2" in hint.explanation
    # Between the two matmuls the thread ran the scaling (div) and the softmax, top level.
    top = trace.ops[trace.ops["parent"] == -1]
    between = top[top["name"].isin(["aten::div", "aten::softmax"])]
    assert len(between) == 2
    assert hint.gain_ns == int(between["dur_ns"].sum())
    names = set(trace.ops.set_index("id").loc[list(hint.evidence[0].event_ids), "name"])
    assert names == {"aten::matmul", "aten::softmax"}
    assert any("scaled_dot_product_attention" in step for step in hint.fix)


def test_attention_silent_on_sdpa_which_cpu_runs_fused(tmp_path: Path) -> None:
    trace = capture(tmp_path, "sdpa")
    # torch 2.13's CPU SDPA takes its fused flash kernel for these inputs.
    assert "aten::_scaled_dot_product_flash_attention_for_cpu" in set(trace.ops["name"])
    assert attention.detect(Analysis(trace, UNKNOWN)) == []


def test_attention_fires_on_sdpa_math_path(tmp_path: Path) -> None:
    trace = capture(tmp_path, "math")
    [hint] = attention.detect(Analysis(trace, UNKNOWN))
    check(hint, trace)
    assert "math path" in hint.title
    assert hint.numbers["max_score_bytes"] == 2 * 4 * 256 * 256 * 4
    [math_op] = trace.ops.loc[
        trace.ops["name"] == "aten::_scaled_dot_product_attention_math"
    ].itertuples()
    assert hint.evidence[0].event_ids == (math_op.id,)
    # The math op's time without its two matmuls (direct children, no matmul above them).
    children = trace.ops[trace.ops["parent"] == math_op.id]
    matmuls = children[children["name"] == "aten::matmul"]
    assert len(matmuls) == 2
    assert 0 < hint.gain_ns <= math_op.dur_ns - int(matmuls["dur_ns"].sum())


# --- tensor cores --------------------------------------------------------------------------


def matmul_doc(
    kernel_name: str, dims: list[list[int]], dtype: str = "float", major: int = 8
) -> tuple[list[dict], dict]:
    args = {"Input Dims": dims, "Input type": [dtype] * len(dims)}
    events = [
        cpu_op("aten::mm", 100, 50, ext=1, **args),
        runtime("cudaLaunchKernel", 110, 5, corr=1),
        kernel(kernel_name, 200, 1000, corr=1),
    ]
    return events, {"deviceProperties": [{**A100ISH, "computeMajor": major}]}


def test_tensor_cores_fires_on_fp32_matmul(tmp_path: Path) -> None:
    events, top = matmul_doc("ampere_sgemm_128x64_nn", [[1024, 1024], [1024, 1024]])
    trace = load(tmp_path, events, **top)
    [hint] = tensor_cores.detect(Analysis(trace, GPU))
    check(hint, trace)
    flops = 2 * 1024**3
    nbytes = 3 * 1024 * 1024 * 4  # two inputs read, one output written, fp32
    at_fp32 = max(flops / 20e12, nbytes / 2e12) * 1e9
    at_tf32 = max(flops / 160e12, nbytes / 2e12) * 1e9
    assert hint.gain_ns == pytest.approx(at_fp32 - at_tf32, abs=1)
    assert hint.numbers["tensor_core_precision"] == "tf32"
    assert hint.confidence == "medium"
    assert judged(hint).severity == severity_for(hint.gain_ns, 1100 * US)
    assert "[1024, 1024] x [1024, 1024]" in hint.explanation
    assert any("set_float32_matmul_precision" in step for step in hint.fix)
    [op_id] = trace.ops.loc[trace.ops["name"] == "aten::mm", "id"]
    assert hint.evidence[0].event_ids == (op_id,)
    assert hint.related == ("op:aten::mm|[[1024, 1024], [1024, 1024]]",)


def test_tensor_cores_on_unknown_hardware_assumes_2x(tmp_path: Path) -> None:
    events, top = matmul_doc("ampere_sgemm_128x64_nn", [[1024, 1024], [1024, 1024]])
    trace = load(tmp_path, events, **top)
    [hint] = tensor_cores.detect(Analysis(trace, UNKNOWN))
    assert hint.gain_ns == 1000 * US // 2
    assert hint.confidence == "low"


def test_tensor_cores_silent_when_fp32_already_runs_tf32(tmp_path: Path) -> None:
    name = "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x64_16x6_tn_align4>(Params)"
    events, top = matmul_doc(name, [[1024, 1024], [1024, 1024]])
    assert tensor_cores.detect(Analysis(load(tmp_path, events, **top), GPU)) == []


def test_tensor_cores_silent_on_a_gpu_without_tensor_cores(tmp_path: Path) -> None:
    events, top = matmul_doc("maxwell_sgemm_128x64_nn", [[1024, 1024], [1024, 1024]], major=6)
    assert tensor_cores.detect(Analysis(load(tmp_path, events, **top), UNKNOWN)) == []


def test_tensor_cores_fires_on_misaligned_bf16_dims(tmp_path: Path) -> None:
    events, top = matmul_doc("sm80_gemm_bf16", [[1024, 1001], [1001, 1000]], "c10::BFloat16")
    trace = load(tmp_path, events, **top)
    [hint] = tensor_cores.detect(Analysis(trace, GPU))
    check(hint, trace)
    assert "bf16" in hint.title and "multiples of 8" in hint.title
    assert hint.gain_ns == 1000 * US // 4
    assert hint.numbers["misaligned_shapes"] == "aten::mm [1024, 1001] x [1001, 1000] x1"


def test_tensor_cores_silent_on_aligned_bf16(tmp_path: Path) -> None:
    events, top = matmul_doc("sm80_gemm_bf16", [[1024, 1024], [1024, 1024]], "c10::BFloat16")
    assert tensor_cores.detect(Analysis(load(tmp_path, events, **top), GPU)) == []


# --- memory- and compute-bound -------------------------------------------------------------


def one_op(name: str, dims: list[list[int]], dtype: str, kernel_us: float) -> list[dict]:
    args = {"Input Dims": dims, "Input type": [dtype] * len(dims)}
    return [
        cpu_op(name, 100, 20, ext=1, **args),
        runtime("cudaLaunchKernel", 105, 5, corr=1),
        kernel("some_kernel", 150, kernel_us, corr=1),
    ]


def test_memory_bound_fires_far_below_dram_bandwidth(tmp_path: Path) -> None:
    trace = load(tmp_path, one_op("aten::add", [[1024, 1024], [1024, 1024]], "float", 100))
    [hint] = roofline_bound.detect(Analysis(trace, GPU))
    check(hint, trace)
    assert hint.kind == "memory-bound"
    at_roof = max(1024 * 1024 / 20e12, 3 * 1024 * 1024 * 4 / 2e12) * 1e9  # 1 FLOP/element
    assert hint.gain_ns == pytest.approx(100 * US - at_roof / 0.8, abs=1)
    assert hint.numbers["mean_pct_of_roof"] == pytest.approx(100 * at_roof / (100 * US), abs=0.05)
    assert hint.related == ("op:aten::add|[[1024, 1024], [1024, 1024]]",)
    assert "2.00 TB/s" in hint.explanation


def test_compute_bound_fires_far_below_the_bf16_peak(tmp_path: Path) -> None:
    dims = [[4096, 4096], [4096, 4096]]
    trace = load(tmp_path, one_op("aten::mm", dims, "c10::BFloat16", 5000))
    [hint] = roofline_bound.detect(Analysis(trace, GPU))
    assert hint.kind == "compute-bound"
    at_roof = max(2 * 4096**3 / 320e12, 3 * 4096 * 4096 * 2 / 2e12) * 1e9
    assert hint.gain_ns == pytest.approx(5000 * US - at_roof / 0.8, abs=1)
    assert hint.numbers["roof"] == "bf16"


def at(tmp_path: Path, name: str) -> Path:
    (tmp_path / name).mkdir()
    return tmp_path / name


def fix_text(hint: Hint) -> str:
    return " ".join(hint.fix) + hint.code


def test_memory_bound_advises_autocast_only_to_wide_dtypes(tmp_path: Path) -> None:
    dims = [[1024, 1024], [1024, 1024]]
    wide = load(at(tmp_path, "fp32"), one_op("aten::add", dims, "float", 100))
    [hint] = roofline_bound.detect(Analysis(wide, GPU))
    assert "autocast" in fix_text(hint)
    narrow = load(at(tmp_path, "bf16"), one_op("aten::add", dims, "c10::BFloat16", 100))
    [hint] = roofline_bound.detect(Analysis(narrow, GPU))
    # Already bf16: half the bytes is had; no convolution, no matrix product among the ops.
    assert not re.search(r"autocast|channels_last|batch 1|decoding|micro-batch", fix_text(hint))
    assert "torch.compile" in hint.fix[0]


def test_memory_bound_matrix_product_batching_fits_the_phase(tmp_path: Path) -> None:
    """A thin matrix product far below DRAM bandwidth: decoding's batching in an inference, a
    larger micro-batch in training (the test adds a backward op to make it one)."""
    mv = one_op("aten::mm", [[1, 4096], [4096, 4096]], "c10::BFloat16", 400)
    [hint] = roofline_bound.detect(Analysis(load(at(tmp_path, "a"), mv), GPU))
    assert "batch 1, decoding" in fix_text(hint)
    training = [*mv, cpu_op("MmBackward0", 1000, 10), cpu_op("Optimizer.step#SGD.step", 1100, 10)]
    analysis = Analysis(load(at(tmp_path, "b"), training), GPU)
    assert analysis.workload.phase == "training"
    [hint] = roofline_bound.detect(analysis)
    assert "micro-batch" in fix_text(hint) and "decoding" not in fix_text(hint)


def test_compute_bound_names_cudnn_only_for_convolutions(tmp_path: Path) -> None:
    dims = [[4096, 4096], [4096, 4096]]
    gemm = load(at(tmp_path, "mm"), one_op("aten::mm", dims, "c10::BFloat16", 5000))
    [hint] = roofline_bound.detect(Analysis(gemm, GPU))
    assert "cudnn" not in fix_text(hint) and "max-autotune" in fix_text(hint)
    conv_op = one_op("aten::convolution", [], "", 20000)
    bf16 = "c10::BFloat16"
    conv_op[0]["args"] = {
        "Input Dims": [[64, 256, 56, 56], [256, 256, 3, 3], [256], [], [], [], [], [], []],
        "Input type": [bf16, bf16, bf16, "", "", "", "Scalar", "", "Scalar"],
        "Concrete Inputs": ["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"],
    }
    conv = load(at(tmp_path, "conv"), conv_op)
    [hint] = roofline_bound.detect(Analysis(conv, GPU))
    assert hint.kind == "compute-bound"
    assert "cudnn.benchmark" in fix_text(hint) and "max-autotune" not in fix_text(hint)


def test_roofline_bound_silent_near_the_roof(tmp_path: Path) -> None:
    # 3 x 64 MiB moved in 120 us: 84% of 2 TB/s.
    trace = load(tmp_path, one_op("aten::add", [[4096, 4096], [4096, 4096]], "float", 120))
    assert roofline_bound.detect(Analysis(trace, GPU)) == []


def test_roofline_bound_silent_on_unknown_hardware(tmp_path: Path) -> None:
    trace = load(tmp_path, one_op("aten::add", [[1024, 1024], [1024, 1024]], "float", 100))
    assert roofline_bound.detect(Analysis(trace, UNKNOWN)) == []


def test_fp32_matmul_far_below_fp32_roof_is_left_to_tensor_cores(tmp_path: Path) -> None:
    dims = [[4096, 4096], [4096, 4096]]
    trace = load(tmp_path, one_op("aten::mm", dims, "float", 50_000))
    analysis = Analysis(trace, GPU)
    assert roofline_bound.detect(analysis) == []
    assert [h.kind for h in tensor_cores.detect(analysis)] == ["tensor-cores-unused"]
