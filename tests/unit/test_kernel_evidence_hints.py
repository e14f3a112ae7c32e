"""Hints from kernel evidence alone (issue 13, point 6), on Kineto documents built here.

fp32 SIMT kernels by name -> tensor-cores-unused, host-launch-bound idle -> the CUDA-graph
gain, low occupancy beside other streams, and attention snippets that keep the user's mask.
Expected gains are computed here from the documents' kernel times and the Hardware's rates.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.detectors import attention, launch_overhead, low_occupancy, tensor_cores
from gpuprofile.hardware.model import Hardware
from gpuprofile.importers.kineto import load_kineto
from gpuprofile.trace.model import Trace
from helpers.kineto_docs import cpu_op, document, kernel, runtime, write

US = 1000
DEVICE = {
    "id": 0,
    "name": "Test GPU",
    "numSms": 80,
    "maxThreadsPerMultiprocessor": 2048,
    "computeMajor": 7,
    "computeMinor": 0,
}
V100ISH = Hardware(
    name="v100ish",
    source="user",
    peak_flops={"fp32": 15.7e12, "fp16": 125e12},
    dram_bytes_per_s=9e11,
)
A100ISH = Hardware(
    name="a100ish",
    source="user",
    peak_flops={"fp32": 19.5e12, "tf32": 156e12, "bf16": 312e12},
    dram_bytes_per_s=2e12,
)
NO_TENSOR_CORES = Hardware(
    name="p100ish", source="user", peak_flops={"fp32": 10e12, "fp64": 5e12}, dram_bytes_per_s=7e11
)
FP32_SIMT = (
    "volta_sgemm_128x64_nn",
    "ampere_sgemm_32x32_sliced1x4_tn",
    "void implicit_convolve_sgemm<float, float, 128, 6, 7, 3, 3, 5, 1, false, true, true>(int)",
    "cudnn_infer_volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1",
    "void cudnn::winograd_nonfused::winogradForwardOutput4x4<float, float>(Params)",
    "void cutlass::Kernel2<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>(Params)",
    "void gemmSN_TN_kernel<float, 128, 16, 2, 4, 8, 9, false>(Params)",
)
TENSOR_CORE = (
    "volta_h884gemm_64x64_ldg8_nn",
    "volta_s884gemm_fp16_128x128_ldg8_f2f_nn",
    "turing_s1688gemm_fp16_128x128_nn",
    "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_32x6_tn_align4>(Params)",
    "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32_stage4",
    "ampere_fp16_s16816gemm_fp16_128x64_ldg8_f2f_nn",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
    "volta_fp16_scudnn_fp16_128x128_stridedB_winograd_nn",
    "void gemmk1_kernel<float, 256, 5, false, cublasGemvTensorStridedBatched<__half const> >()",
)


def load(tmp_path: Path, events: list[dict[str, Any]], **top: Any) -> Trace:
    top.setdefault("deviceProperties", [DEVICE])
    return load_kineto(write(tmp_path / "trace.json", document(events, **top)))


def back_to_back(names: tuple[str, ...], dur: float = 1000) -> list[dict[str, Any]]:
    """One kernel per name, each launched 5 us before it starts, 2 us apart."""
    events = []
    for i, name in enumerate(names):
        ts = 100 + i * (dur + 2)
        events += [
            runtime("cudaLaunchKernel", ts - 10, 4, corr=i + 1),
            kernel(name, ts, dur, i + 1),
        ]
    return events


# --- tensor cores from kernel names --------------------------------------------------------


@pytest.mark.parametrize(
    ("hardware", "target", "fix_word"),
    [(V100ISH, "fp16", "GradScaler"), (A100ISH, "tf32", "set_float32_matmul_precision")],
)
def test_fp32_simt_kernels_by_name(
    tmp_path: Path, hardware: Hardware, target: str, fix_word: str
) -> None:
    # Half-precision tensor-core kernels only: TF32 is not seen on, so it is advised.
    half = tuple(name for name in TENSOR_CORE if "tensorop_s1688gemm" not in name)
    trace = load(tmp_path, back_to_back(FP32_SIMT + half))
    [hint] = tensor_cores.detect(Analysis(trace, hardware))
    rates = hardware.peak_flops
    assert hint.gain_ns == int(len(FP32_SIMT) * 1000 * US * (1 - rates["fp32"] / rates[target]))
    assert hint.numbers["kernels"] == len(FP32_SIMT)
    assert hint.numbers["tensor_core_precision"] == target
    assert hint.confidence == "low" and "name alone" in hint.gain_method
    assert fix_word in hint.code + " ".join(hint.fix)
    named = set(trace.kernels.loc[trace.kernels["name"].isin(FP32_SIMT), "id"])
    assert set(hint.evidence[0].event_ids) == named


def test_fp32_kernels_beside_tf32_tensor_op_kernels_get_shape_fixes(tmp_path: Path) -> None:
    """cutlass_80_tensorop_s1688gemm runs fp32 inputs on TF32 tensor cores: with it in the
    trace TF32 is on, so the fp32 SIMT kernels stayed off by their shapes, and the finding
    says so instead of advising TF32."""
    trace = load(tmp_path, back_to_back(FP32_SIMT + TENSOR_CORE))
    [hint] = tensor_cores.detect(Analysis(trace, A100ISH))
    assert "TF32 is on already (1 kernel ran fp32 matmuls" in hint.explanation
    assert hint.fix[0].startswith("TF32 is on already") and hint.code == ""
    assert not any("set_float32_matmul_precision" in step for step in hint.fix)


def test_tensor_core_kernels_are_not_flagged(tmp_path: Path) -> None:
    trace = load(tmp_path, back_to_back(TENSOR_CORE))
    assert tensor_cores.detect(Analysis(trace, A100ISH)) == []


def test_silent_without_tensor_core_roofs(tmp_path: Path) -> None:
    trace = load(tmp_path, back_to_back(FP32_SIMT))
    assert tensor_cores.detect(Analysis(trace, NO_TENSOR_CORES)) == []


def test_kernels_the_shape_path_judged_are_not_counted_again(tmp_path: Path) -> None:
    dims = {"Input Dims": [[1024, 1024], [1024, 1024]], "Input type": ["float", "float"]}
    events = [
        cpu_op("aten::mm", 90, 20, ext=1, **dims),
        runtime("cudaLaunchKernel", 95, 4, corr=1),
        kernel("ampere_sgemm_128x64_nn", 200, 1000, 1),
        runtime("cudaLaunchKernel", 1195, 4, corr=2),  # no op: judged by name alone
        kernel("cudnn_ampere_scudnn_128x64_relu_xregs_large_nn_v1", 1202, 1000, 2),
    ]
    trace = load(tmp_path, events, deviceProperties=[{**DEVICE, "computeMajor": 8}])
    hints = tensor_cores.detect(Analysis(trace, A100ISH))
    by_shape = [h for h in hints if "matmuls" in h.title]
    by_name = [h for h in hints if "kernels" in h.title]
    assert len(by_shape) == 1 and len(by_name) == 1
    assert by_name[0].numbers["kernels"] == 1
    assert by_name[0].gain_ns == int(1000 * US * (1 - 19.5 / 156))


# --- launch overhead: host-launch-bound idle -----------------------------------------------


def host_bound(n: int = 30, *, dur: float = 20, gap: float = 30) -> list[dict[str, Any]]:
    """n kernels of ``dur`` us, each launched only after the previous one ended."""
    events = []
    for i in range(n):
        ts = 100 + i * (dur + gap)
        events.append(cpu_op("aten::linear", ts - gap + 1, gap - 2, ext=i + 1))
        events.append(runtime("cudaLaunchKernel", ts - 6, 4, corr=i + 1))
        events.append(kernel("ampere_bf16_s16816gemm_bf16_64x64", ts, dur, i + 1))
    return events


def test_launch_gain_is_the_host_bound_idle_even_for_long_kernels(tmp_path: Path) -> None:
    trace = load(tmp_path, host_bound())
    [hint] = launch_overhead.detect(Analysis(trace, A100ISH))
    # 29 gaps of 30 us, each ended by a kernel launched after it began, less 1 us a replay keeps.
    assert hint.gain_ns == 29 * (30 - 1) * US
    assert hint.numbers["small_kernels"] == 0
    assert "host launching" in hint.gain_method
    assert 'mode="reduce-overhead"' in hint.code


def test_launch_hint_on_a_rank_that_replays_graphs_widens_the_capture(tmp_path: Path) -> None:
    graph = runtime("cudaGraphLaunch", 50, 5, corr=999)
    trace = load(tmp_path, [*host_bound(), graph])
    [hint] = launch_overhead.detect(Analysis(trace, A100ISH))
    assert hint.numbers["graph_launches"] == 1
    assert "already replays CUDA graphs" in hint.explanation
    assert "reduce-overhead" not in hint.code and "captured region" in hint.fix[0]


def test_launch_silent_when_the_work_was_queued_ahead(tmp_path: Path) -> None:
    # Every kernel launched long before the GPU reached it: gaps are not the host's doing.
    events = []
    for i in range(30):
        ts = 1000 + i * 50
        events += [runtime("cudaLaunchKernel", 10 + i, 0.5, corr=i + 1), kernel("k", ts, 20, i + 1)]
    assert launch_overhead.detect(Analysis(load(tmp_path, events), A100ISH)) == []


# --- low occupancy beside other streams ----------------------------------------------------


def small_grid(name: str, ts: float, dur: float, corr: int, stream: int) -> dict[str, Any]:
    return kernel(
        name,
        ts,
        dur,
        corr,
        stream=stream,
        grid=[8, 1, 1],
        block=[512, 1, 1],
        **{"blocks per SM": 8 / 80, "est. achieved occupancy %": 3},
    )


def full_grid(ts: float, dur: float, corr: int, stream: int) -> dict[str, Any]:
    return kernel(
        "gemm_full",
        ts,
        dur,
        corr,
        stream=stream,
        grid=[320, 1, 1],
        block=[256, 1, 1],
        **{"blocks per SM": 4, "est. achieved occupancy %": 50},
    )


def test_low_occupancy_silent_for_a_kernel_beside_compute(tmp_path: Path) -> None:
    # A few-block kernel on stream 20 (NCCL takes few SMs so) while compute fills stream 7.
    events = [small_grid("small_grid_kernel", 100, 1000, 1, 20)]
    events += [full_grid(100 + 250 * i, 250, 2 + i, 7) for i in range(4)]
    assert low_occupancy.detect(Analysis(load(tmp_path, events), A100ISH)) == []


def test_low_occupancy_fires_for_the_lone_part_of_a_small_grid(tmp_path: Path) -> None:
    # 1000 us on 8 of 80 SMs; compute on another stream beside it for its first 300 us.
    events = [small_grid("small_grid_kernel", 100, 1000, 1, 20), full_grid(100, 300, 2, 7)]
    [hint] = low_occupancy.detect(Analysis(load(tmp_path, events), A100ISH))
    idle = 1000 * US * (1 - 8 / 80) * (1 - 300 / 1000)
    assert hint.numbers["idle_capacity_ns"] == pytest.approx(idle, abs=1)
    assert hint.gain_ns == int(0.5 * idle)


# --- attention: the snippet keeps the user's mask ------------------------------------------


def capture(tmp_path: Path, mask: str) -> Trace:
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 128, 32) for _ in range(3))
    causal = torch.ones(128, 128, dtype=torch.bool).triu(1) if mask == "causal" else None
    padding = torch.zeros(1, 1, 1, 128, dtype=torch.bool) if mask == "padding" else None
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        if mask == "causal":
            causal = torch.ones(128, 128, dtype=torch.bool).triu(1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(32)
        if causal is not None:
            scores = scores.masked_fill(causal, float("-inf"))
        if padding is not None:
            scores = scores.masked_fill(padding, float("-inf"))
        torch.softmax(scores, dim=-1) @ v
    path = tmp_path / f"{mask}.json"
    prof.export_chrome_trace(str(path))
    return load_kineto(path)


@pytest.mark.parametrize(
    ("mask", "call"),
    [
        ("none", "scaled_dot_product_attention(q, k, v)\n"),
        ("causal", "scaled_dot_product_attention(q, k, v, is_causal=True)\n"),
        ("padding", "scaled_dot_product_attention(q, k, v, attn_mask=mask)\n"),
    ],
)
def test_attention_snippet_keeps_the_mask(tmp_path: Path, mask: str, call: str) -> None:
    trace = capture(tmp_path, mask)
    [hint] = attention.detect(Analysis(trace, A100ISH))
    assert call in hint.code
    assert hint.code.count("scaled_dot_product_attention(") == 1
    if mask != "causal":
        assert "is_causal=True" not in hint.code
    assert "('" not in hint.explanation and "scores = " in hint.explanation
