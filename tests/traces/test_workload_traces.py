"""The workload of every shared trace, as a person reads it from PROVENANCE.md and the trace
itself (the names of its ops, kernels and runtime calls, its distributedInfo): phase, engine,
parallelism, execution and device. The table is that reading, written by hand; where it
differs from what a file's title says, the comment says why the trace decides.
"""

from __future__ import annotations

import re
from functools import cache

import pytest

import gpuprofile
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.detectors import run_detectors
from gpuprofile.analyses.hints import Hint
from gpuprofile.analyses.idle import HOST_LAUNCH_BOUND, idle_by_cause
from gpuprofile.analyses.kernel_names import short_kernel_name
from helpers.prerequisites import SHARED_TRACES, require_trace

# path under ../shared/traces: (phase, engine, parallelism, execution, device)
EXPECTED: dict[str, tuple[str, str | None, tuple[str, ...], str, str]] = {
    # "fwd+bwd" of TransformerEngine's fused attention: backward ran.
    "jax/tracelens_jax_te_fused_attn.xplane.pb": ("training", None, (), "compiled", "rocm"),
    # A GEMM microbenchmark: no model, so no phase.
    "jax/tracelens_mi300x_jax08_gemm.xplane.pb": ("unknown", None, (), "compiled", "rocm"),
    # Rank 0 of 16 (DDP); a quarter of its kernel time replays CUDA graphs.
    "kineto/hta_a100_80gb_train_rank0_of16.json.gz": ("training", None, ("dp",), "mixed", "cuda"),
    "kineto/hta_a100_alexnet_critical_path.pt.trace.json.gz": (
        "inference",
        None,
        (),
        "eager",
        "cuda",
    ),
    # Event and stream-wait calls around one matmul: not a model.
    "kineto/hta_a100_cuda_event_sync_multi_stream.json.gz": ("unknown", None, (), "eager", "cuda"),
    # A CNN's forward (conv2d, addmm) under CUPTI's range profiler, which records no kernels.
    "kineto/hta_a100_cupti_range_profiler.json.gz": ("inference", None, (), "eager", "cuda"),
    "kineto/hta_a100_nccl_2rank_rank0.json.gz": ("training", None, ("dp",), "eager", "cuda"),
    "kineto/hta_a100_train_rank3_of8_async_cpu_to_gpu.json.gz": (
        "training",
        None,
        ("dp",),
        "eager",
        "cuda",
    ),
    "kineto/hta_a100_triton_kernel.json.gz": ("unknown", None, (), "compiled", "cuda"),
    # Gloo all-reduces on a CPU rank and nothing else: no model, no parallelism to name.
    "kineto/hta_cpu_only_gloo_rank34.pt.trace.json.gz": ("unknown", None, (), "eager", "cpu"),
    # Named "inference", but it holds kernels and runtime calls only: no host op shows a phase.
    "kineto/hta_legacy_inference_rank1_no_devprops.json.gz": ("unknown", None, (), "eager", "cuda"),
    "kineto/hta_mi250_rocm6_minitoy_train.json.gz": ("training", None, (), "eager", "rocm"),
    "kineto/hta_v100_16gb_train_rank1_of2.json.gz": ("training", None, ("dp",), "mixed", "cuda"),
    # Rank 1 of 2: gradients all-reduced over NCCL (no DDP names in the trace).
    "kineto/hta_v100_32gb_memory_rank1_of2.json.gz": ("training", None, ("dp",), "eager", "cuda"),
    # DDP's names, but its distributedInfo says world size 1: nothing ran in parallel.
    "kineto/hta_v100_32gb_ns_resolution.pt.trace.json.gz": ("training", None, (), "eager", "cuda"),
    "kineto/kineto_docs_h100_cuda_sync_after_fix.json": ("unknown", None, (), "eager", "cuda"),
    "kineto/kineto_docs_h100_cuda_sync_before_fix.json": ("unknown", None, (), "eager", "cuda"),
    "kineto/kineto_plugin_resnet50_no_schema_version.pt.trace.json.gz": (
        "training",
        None,
        (),
        "eager",
        "cuda",
    ),
    "kineto/kineto_tbplugin_gpu_metrics_input_computeProperties.json": (
        "training",
        None,
        (),
        "eager",
        "cuda",
    ),
    "kineto/kineto_tbplugin_resnet50_autograd_api.pt.trace.json.gz": (
        "training",
        None,
        (),
        "eager",
        "cuda",
    ),
    "kineto/kineto_tbplugin_resnet50_v100_memory_shapes.pt.trace.json.gz": (
        "training",
        None,
        (),
        "eager",
        "cuda",
    ),
    "kineto/tracelens_h100_bert_small_inference.json.gz": ("inference", None, (), "eager", "cuda"),
    "kineto/tracelens_h100_falconsai_vit_inference.json.gz": (
        "inference",
        None,
        (),
        "eager",
        "cuda",
    ),
    "kineto/tracelens_h100_owlv2_large_inference.json.gz": ("inference", None, (), "eager", "cuda"),
    "kineto/tracelens_h100_qwen1.5_0.5b_inference.json.gz": (
        "inference",
        None,
        (),
        "eager",
        "cuda",
    ),
    # Called a DDP step, but the trace holds no collective and no DDP op: one GPU's view.
    "kineto/tracelens_mi300x_ddp_resnet18_train.json.gz": ("training", None, (), "eager", "rocm"),
    # Normalization layers' forward and backward (a microbenchmark that runs backward).
    "kineto/tracelens_mi300x_normalization_layers.json.gz": ("training", None, (), "eager", "rocm"),
    "kineto/tracelens_mi300x_resnet_act_checkpoint_rank0_of8.json.gz": (
        "training",
        None,
        ("dp",),
        "eager",
        "rocm",
    ),
    "kineto/tracelens_mi300x_sglang_qwen3_8b_decode.json.gz": (
        "inference",
        "sglang",
        (),
        "cuda-graphs",
        "rocm",
    ),
    "kineto/tracelens_mi300x_torch_compile_triton.json.gz": (
        "inference",
        None,
        (),
        "compiled",
        "rocm",
    ),
    # vLLM on one GPU (rank 0 of 1): its tensor-parallel calls run, but nothing is exchanged.
    "kineto/tracelens_mi300x_vllm_cudagraph_decode_execution.json.gz": (
        "inference",
        "vllm",
        (),
        "cuda-graphs",
        "rocm",
    ),
    # xDiT asks its parallel sizes, on one GPU (rank 0 of 1); Inductor runs most kernels.
    "kineto/tracelens_mi300x_xdit_sd3.5_large_inference.json.gz": (
        "inference",
        None,
        (),
        "compiled",
        "rocm",
    ),
    "kineto/tracelens_mi300xvf_qwen1.5_0.5b_inference.json.gz": (
        "inference",
        None,
        (),
        "eager",
        "rocm",
    ),
    **{
        f"ncu/rtx5070_{name}.csv": ("unknown", None, (), "eager", "cuda")
        for name in (
            "gemm_naive",
            "gemm_register_blocked",
            "gemm_tiled",
            "gemm_vectorized",
            "saxpy",
            "transpose_naive",
            "transpose_tiled",
        )
    },
    "nsys/pipit_nbody_nvtx_pushpop_trace.csv": ("unknown", None, (), "eager", "cuda"),
    # MPI between four GPUs: none of the deep-learning parallelisms.
    "nsys/pipit_perlmutter_4xa100_80gb_cloverleaf.sqlite": ("unknown", None, (), "eager", "cuda"),
    "nsys/pipit_perlmutter_a100_40gb_saxpy_mpi.sqlite": ("unknown", None, (), "eager", "cuda"),
    "tensorrt/trex_a100_resnet_fp16.profile.json": (
        "inference",
        "tensorrt",
        (),
        "compiled",
        "cuda",
    ),
    "tensorrt/trex_mobilenet_qat.profile.json": ("inference", "tensorrt", (), "compiled", "cuda"),
    "tensorrt/trex_rtx3090_tf_resnet_fp16.profile.json": (
        "inference",
        "tensorrt",
        (),
        "compiled",
        "cuda",
    ),
    "kineto-distributed/hta_sampled_128rank": ("training", None, ("dp",), "eager", "cuda"),
    # DLRM: DDP for the dense part; its embeddings' all-to-all is no listed parallelism.
    "kineto-distributed/param_dlrm_8xV100": ("training", None, ("dp",), "eager", "cuda"),
}
# Files that are no trace of their own (TensorRT's side files), or that no reader can read.
NOT_TRACES = ("PROVENANCE.md", ".graph.json", ".timing.json", ".metadata.json")
UNREADABLE = {"jax/xprof_tpu_inference.xplane.pb": "saved through a text decoder (PROVENANCE)"}


def test_the_table_covers_every_shared_trace() -> None:
    root = require_trace(SHARED_TRACES)
    found = {
        str(p.relative_to(root))
        for p in root.glob("*/*")
        if not any(p.name.endswith(s) or s in p.name for s in NOT_TRACES)
    }
    assert found == set(EXPECTED) | set(UNREADABLE)


# Advice that does not fit, by what rules it out (the test's own words for it, not fitting.py's).
TRAINING_ONLY = re.compile(r"DistributedDataParallel|no_sync|FullyShardedDataParallel|zero_grad")
CUDA_ONLY = re.compile(r"cuda|CUDA|TF32|tf32|Triton")
AMPERE_ONLY = re.compile(r"allow_tf32|set_float32_matmul_precision|torch\.bfloat16")
TORCH_OPTIMIZER = re.compile(r"torch\.optim\.(\w+)\(")
STEPPED = re.compile(r"^Optimizer\.step#(\w+)\.step$")
OPTIMIZER_ADVICE = re.compile(r"torch\.optim|optimizer", re.IGNORECASE)


@cache
def _analysis(name: str) -> Analysis:
    return gpuprofile.load(require_trace(SHARED_TRACES / name)).analysis


@cache
def _hints(name: str) -> tuple[Hint, ...]:
    return tuple(run_detectors(_analysis(name)))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_workload_of_each_shared_trace(name: str) -> None:
    analysis = _analysis(name)
    workload = analysis.workload
    found = (
        workload.phase,
        workload.engine,
        workload.parallelism,
        workload.execution,
        workload.device,
    )
    assert found == EXPECTED[name], workload.evidence
    # One sentence of evidence for each decision, each naming what it decided.
    said = [e.split(":", 1)[0] for e in workload.evidence]
    assert f"phase {workload.phase}" in said
    assert f"execution {workload.execution}" in said
    assert f"device {workload.device}" in said
    for kind in workload.parallelism:
        assert f"parallelism {kind}" in said
    if workload.engine:
        assert f"engine {workload.engine}" in said

    # Every hint's fixes fit the workload and the device the trace names.
    trace = analysis.trace
    stepped = {m.group(1) for n in trace.ops["name"].astype(str) if (m := STEPPED.match(n))}
    capabilities = [
        tuple(int(x) for x in str(d["compute_capability"]).split("."))
        for r in trace.ranks
        for d in trace.devices(r)
        if d.get("compute_capability")
    ]
    before_ampere = workload.device == "cuda" and bool(capabilities) and min(capabilities) < (8, 0)
    for hint in _hints(name):
        for text in (*hint.fix, hint.code):
            if workload.phase == "inference":
                assert not TRAINING_ONLY.search(text), (hint.kind, text)
            if workload.device == "cpu":
                assert not CUDA_ONLY.search(text), (hint.kind, text)
            if before_ampere:
                assert not AMPERE_ONLY.search(text), (hint.kind, text)
            if stepped:
                assert {m.group(1) for m in TORCH_OPTIMIZER.finditer(text)} <= stepped, text
            elif workload.phase == "training" and len(trace.ops):
                # A training step whose host ops hold no optimizer step: none to fuse.
                assert not OPTIMIZER_ADVICE.search(text), (hint.kind, text)


# What a short name must never be, or begin with: a keyword, qualifier or return type.
NOT_A_NAME = re.compile(
    r"^(void|const|static|inline|extern|unsigned|signed|__global__|typename|template)\b"
    r"|^std::enable_if|^$"
)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_kernel_keeps_its_function_name(name: str) -> None:
    """Every kernel's short name is its function's, and the names the report prints (the
    short names told apart) are as many as the trace's distinct kernels: no two read alike."""
    analysis = _analysis(name)
    kernels = analysis.trace.kernels["name"].astype(str).unique().tolist()
    for kernel in kernels:
        short = short_kernel_name(kernel)
        assert not NOT_A_NAME.search(short), (kernel, short)
        assert len(short) <= 60, short
        assert analysis.kernel_label(kernel).startswith(short), kernel
    assert len({analysis.kernel_label(kernel) for kernel in kernels}) == len(kernels)


def _union_ns(starts: list[int], ends: list[int]) -> int:
    """The length of a union of [start, end) intervals, merged by hand."""
    total, open_start, open_end = 0, None, None
    for start, end in sorted(zip(starts, ends, strict=True)):
        if open_end is None or start > open_end:
            total += 0 if open_end is None or open_start is None else open_end - open_start
            open_start, open_end = start, end
        else:
            open_end = max(open_end, end)
    return total + (0 if open_end is None or open_start is None else open_end - open_start)


def _span_ns(analysis: Analysis, rank: int) -> int:
    """A rank's wall: its earliest start to its latest end over every timed table."""
    trace = analysis.trace
    starts, ends = [], []
    for table in ("ops", "kernels", "memcpy", "memset", "runtime"):
        frame = trace.table(table)
        frame = frame[frame["rank"] == rank]
        if len(frame):
            starts.append(int(frame["start_ns"].min()))
            ends.append(int((frame["start_ns"] + frame["dur_ns"]).max()))
    return max(ends) - min(starts) if starts else 0


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_gains_never_double_count(name: str) -> None:
    """Every hint of every shared trace: a finding's gain is never more than the time it
    claims; no two findings of a rank give back more than the union of their claims (so no
    nanosecond twice), nor all of them together; the gains of a rank's findings never sum past
    its wall; the launch finding's host-launch-bound figure is the report's; and no idle
    finding on a rank with one stream blames a dependency between streams."""
    analysis = _analysis(name)
    by_rank: dict[int, list[Hint]] = {}
    for hint in _hints(name):
        if hint.rank is not None:
            by_rank.setdefault(hint.rank, []).append(hint)
    idle = idle_by_cause(analysis.idle_gaps)  # what the report's ranks[].idle_by_cause hold
    for rank, hints in by_rank.items():
        claimed = [h for h in hints if h.claim is not None]
        blocks = {
            id(h): (h.claim.starts.tolist(), h.claim.ends.tolist())
            for h in claimed
            if h.claim is not None
        }
        for h in claimed:
            assert h.gain_ns <= _union_ns(*blocks[id(h)]), (h.kind, h.title)
        for i, a in enumerate(claimed):
            for b in claimed[i + 1 :]:
                union = _union_ns(
                    blocks[id(a)][0] + blocks[id(b)][0], blocks[id(a)][1] + blocks[id(b)][1]
                )
                assert a.gain_ns + b.gain_ns <= union, (a.title, b.title)
        every = (
            [s for h in claimed for s in blocks[id(h)][0]],
            [e for h in claimed for e in blocks[id(h)][1]],
        )
        assert sum(h.gain_ns for h in claimed) <= _union_ns(*every)
        assert sum(h.gain_ns for h in hints) <= _span_ns(analysis, rank), [h.title for h in hints]
        copies = analysis.trace.memcpy
        host_device = int(
            ((copies["rank"] == rank) & copies["kind"].astype(str).isin(["HtoD", "DtoH"])).sum()
        )
        for h in hints:
            if h.kind == "launch-overhead":
                assert h.numbers["host_launch_bound_ns"] == idle[rank][HOST_LAUNCH_BOUND]
            if h.kind == "pageable-copy" and "host_device_copies" in h.numbers:
                # The count beside the copy table's HtoD and DtoH rows is that table's.
                assert h.numbers["host_device_copies"] == host_device
                assert f"of its {host_device} host-device copies" in h.explanation
        trace = analysis.trace
        streams = {
            (d, s)
            for table in (trace.kernels, trace.memcpy, trace.memset)
            for d, s in zip(
                table.loc[table["rank"] == rank, "device"],
                table.loc[table["rank"] == rank, "stream"],
            )
        }
        if len(streams) == 1:
            for h in hints:
                if h.kind == "gpu-idle":
                    assert "another stream" not in h.title + h.explanation, h.explanation
