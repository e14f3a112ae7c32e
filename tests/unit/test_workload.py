"""The workload (analyses/workload.py): each rule on traces made here from the names that
decide it, and on real torch.profiler captures of a training step, an inference and a loop
that evaluates between training steps. The expected answers are what the test built."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import torch

import gpuprofile
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.fitting import fitted
from gpuprofile.analyses.hints import Hint
from gpuprofile.analyses.workload import Workload
from gpuprofile.report.workload_text import workload_line
from gpuprofile.trace.meta import RankMeta, Source, TraceMeta
from gpuprofile.trace.model import Trace, make_table
from helpers.html_page import div_markup


def _workload(fmt: str = "kineto", **tables: Any) -> Workload:
    meta = tables.pop("meta", {})
    built = {
        name: rows if not isinstance(rows, dict) else make_table(name, rows)
        for name, rows in tables.items()
    }
    return Analysis(Trace(**built, meta=TraceMeta(source=Source(format=fmt), **meta))).workload


def _ops(*names: str) -> dict[str, Any]:
    n = len(names)
    return {
        "id": list(range(n)),
        "name": list(names),
        "category": ["cpu_op"] * n,
        "start_ns": [i * 10 for i in range(n)],
        "dur_ns": [5] * n,
    }


def _kernels(*names: str, dur: list[int] | None = None, correlation: list[int] | None = None):
    n = len(names)
    return {
        "id": list(range(n)),
        "name": list(names),
        "start_ns": [i * 100 for i in range(n)],
        "dur_ns": dur or [10] * n,
        "correlation": correlation or list(range(100, 100 + n)),
        "stream": [7] * n,
    }


def _world(size: int) -> dict[str, Any]:
    return {"ranks": {0: RankMeta(distributed={"rank": 0, "world_size": size})}}


# --- phase ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ops", "kernels", "phase"),
    [
        (("aten::linear", "autograd::engine::evaluate_function: AddmmBackward0"), (), "training"),
        (("aten::add", "Optimizer.step#AdamW.step"), (), "training"),
        (("aten::linear", "aten::layer_norm"), (), "inference"),
        (("aten::matmul", "aten::mm"), (), "unknown"),  # one kind of layer: a benchmark
        (("nn.Module: Net.fc (Linear)", "aten::add"), (), "inference"),
        (("aten::copy_", "aten::add"), (), "unknown"),  # no layer: a data step, not a model
        ((), ("gemm_kernel", "elementwise"), "unknown"),  # GPU only, nothing says backward
        ((), ("flash_bwd_kernel", "gemm_kernel"), "training"),
    ],
)
def test_phase(ops: tuple[str, ...], kernels: tuple[str, ...], phase: str) -> None:
    tables: dict[str, Any] = {}
    if ops:
        tables["ops"] = _ops(*ops)
    if kernels:
        tables["kernels"] = _kernels(*kernels)
    found = _workload(**tables)
    assert found.phase == phase
    assert any(e.startswith(f"phase {phase}") for e in found.evidence)


def test_the_optimizer_that_stepped_is_named() -> None:
    found = _workload(ops=_ops("Optimizer.step#SGD.step", "Optimizer.zero_grad#SGD.zero_grad"))
    assert found.optimizers == ("SGD",)


def test_an_engine_beside_backward_is_mixed() -> None:
    found = _workload(ops=_ops("vllm::unified_attention", "AddmmBackward0"))
    assert (found.phase, found.engine) == ("mixed", "vllm")


# --- engine --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "kernels", "engine"),
    [
        (("vllm/v1/worker/gpu_model_runner.py(3380): execute_model",), (), "vllm"),
        (("sglang/srt/managers/scheduler.py(29): run_batch",), ("paged<vllm::Fp8KV>",), "sglang"),
        (("megatron/core/pipeline.py(10): forward",), (), "megatron"),
        (("deepspeed/runtime/engine.py(1): step",), (), "deepspeed"),
        (("transformers/generation/utils.py(2000): generate",), (), "hf-generate"),
        (("aten::mm",), ("void paged_attention<vllm::Fp8KV>(int)",), "vllm"),  # kernels only
        (("aten::mm",), (), None),
    ],
)
def test_engine(host: tuple[str, ...], kernels: tuple[str, ...], engine: str | None) -> None:
    tables: dict[str, Any] = {"ops": _ops(*host)}
    if kernels:
        tables["kernels"] = _kernels(*kernels)
    assert _workload(**tables).engine == engine


def test_a_tensorrt_profile_is_the_tensorrt_engine_compiled() -> None:
    found = _workload("tensorrt", ops=_ops("conv1 + relu"))
    assert (found.engine, found.phase, found.execution) == ("tensorrt", "inference", "compiled")


# --- parallelism ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ops", "kernels", "parallelism"),
    [
        (("DistributedDataParallel.forward", "AddBackward0", "nccl:all_reduce"), (), ("dp",)),
        (("AddBackward0", "c10d::allreduce_"), (), ("dp",)),  # gradients' all-reduce
        (("FSDP::all_gather", "AddBackward0", "nccl:_all_gather_base"), (), ("fsdp",)),
        (("AddBackward0", "nccl:_all_gather_base", "nccl:_reduce_scatter_base"), (), ("fsdp",)),
        (
            ("vllm::unified_attention", "aten::linear"),
            ("ncclDevKernel_AllReduce_Sum_bf16",),
            ("tp",),
        ),
        (("aten::linear",), ("void cross_device_reduce_1stage<bf16>(int)",), ("tp",)),
        (("AddBackward0", "c10d::send", "c10d::recv_"), (), ("pp",)),
        (("AddBackward0", "c10d::alltoall_base_", "aten::linear"), ("moe_expert_ffn",), ("ep",)),
        (("aten::linear",), ("void deep_ep::intranode::dispatch<8>(int)",), ("ep",)),
        (("AddBackward0", "c10d::alltoall_base_"), (), ()),  # no experts: not named
        # A framework asking its tensor-parallel size is no tensor parallelism: no communication.
        (
            ("xfuser/parallel_state.py(62): get_tensor_model_parallel_world_size", "aten::mm"),
            (),
            (),
        ),
    ],
)
def test_parallelism(
    ops: tuple[str, ...], kernels: tuple[str, ...], parallelism: tuple[str, ...]
) -> None:
    tables: dict[str, Any] = {"ops": _ops(*ops)}
    if kernels:
        tables["kernels"] = _kernels(*kernels)
    found = _workload(**tables)
    assert found.parallelism == parallelism
    for kind in parallelism:
        assert any(e.startswith(f"parallelism {kind}:") for e in found.evidence)


def test_all_to_all_without_experts_is_said_not_named() -> None:
    found = _workload(ops=_ops("AddBackward0", "c10d::alltoall_base_"))
    assert any("(sharded embeddings?)" in e for e in found.evidence)
    assert found.parallelism == ()
    # TorchRec's input distribution beside it says what is sharded: the embedding tables.
    torchrec = _workload(
        ops=_ops("AddBackward0", "c10d::alltoall_base_", "## KJTAllToAllSplitsAwaitable wait() ##")
    )
    assert any(e.startswith("embedding tables sharded across ranks") for e in torchrec.evidence)
    assert torchrec.parallelism == ()


@pytest.mark.parametrize(
    ("names", "said"),
    [
        (("AddBackward0", "torch/utils/checkpoint.py(1101): pack_hook"), True),
        (("AddBackward0", "nn.Module: CheckpointWrapper_0"), True),
        (("AddBackward0", "aten::linear"), False),  # training, nothing recomputed
        # No backward: nothing is recomputed whatever the wrapper is called.
        (("aten::linear", "aten::conv2d", "nn.Module: CheckpointWrapper_0"), False),
    ],
)
def test_activation_checkpointing_is_said_of_a_training(names: tuple[str, ...], said: bool) -> None:
    found = _workload(ops=_ops(*names))
    recomputed = [e for e in found.evidence if e.startswith("activation checkpointing: ")]
    assert bool(recomputed) is said
    if said:
        assert names[1] in recomputed[0] and "checkpoint fewer layers" in recomputed[0]


def test_a_world_of_one_is_no_parallelism_whatever_the_names() -> None:
    ops = _ops("DistributedDataParallel.forward", "AddBackward0", "nccl:all_reduce")
    found = _workload(ops=ops, meta=_world(1))
    assert found.parallelism == ()
    assert "parallelism none: the trace declares a world size of 1" in found.evidence
    assert _workload(ops=ops, meta=_world(8)).parallelism == ("dp",)


# --- execution -----------------------------------------------------------------------------


def _graph_trace(graph_share_ns: int, eager_ns: int) -> dict[str, Any]:
    kernels = _kernels("gemm", "elementwise", dur=[graph_share_ns, eager_ns], correlation=[1, 2])
    runtime = {
        "id": [0, 1],
        "name": ["cudaGraphLaunch", "cudaLaunchKernel"],
        "category": ["cuda_runtime"] * 2,
        "start_ns": [0, 50],
        "dur_ns": [5, 5],
        "correlation": [1, 2],
    }
    return {"kernels": kernels, "runtime": runtime}


@pytest.mark.parametrize(
    ("graph_ns", "eager_ns", "execution"),
    [(90, 10, "cuda-graphs"), (50, 50, "mixed"), (10, 90, "eager")],
)
def test_execution_by_kernel_time(graph_ns: int, eager_ns: int, execution: str) -> None:
    found = _workload(**_graph_trace(graph_ns, eager_ns))
    assert found.execution == execution
    said = next(e for e in found.evidence if e.startswith("execution"))
    assert f"cuda-graphs {graph_ns}%" in said


def test_inductor_kernels_are_compiled_execution() -> None:
    found = _workload(kernels=_kernels("triton_poi_fused_add_cos_sin_0"))
    assert found.execution == "compiled"


def test_xla_is_compiled() -> None:
    assert _workload("xplane", kernels=_kernels("fusion.1")).execution == "compiled"


# --- device --------------------------------------------------------------------------------


def test_device() -> None:
    hip = {
        "id": [0],
        "name": ["hipLaunchKernel"],
        "category": ["cuda_runtime"],
        "start_ns": [0],
        "dur_ns": [1],
        "correlation": [1],
    }
    assert _workload(runtime=hip, kernels=_kernels("k")).device == "rocm"
    assert _workload(kernels=_kernels("Cijk_Alik.kd")).device == "rocm"
    assert _workload(kernels=_kernels("k")).device == "cuda"
    assert _workload("ncu", kernels=_kernels("k")).device == "cuda"
    assert _workload(ops=_ops("aten::mm")).device == "cpu"
    tpu = {"ranks": {0: RankMeta(devices=({"id": 0, "name": "TPU v6 Lite"},))}}
    assert _workload("xplane", kernels=_kernels("fusion"), meta=tpu).device == "tpu"


# --- real captures -------------------------------------------------------------------------


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))


def _train_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> None:
    loss = model(torch.randn(8, 16)).square().mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()


def test_a_captured_training_step_is_training_on_the_cpu() -> None:
    model = _model()
    optimizer = torch.optim.AdamW(model.parameters())
    with gpuprofile.profile(interval=None) as p:
        _train_step(model, optimizer)
    found = Analysis(p.trace).workload
    assert (found.phase, found.engine, found.parallelism) == ("training", None, ())
    assert (found.execution, found.device, found.optimizers) == ("eager", "cpu", ("AdamW",))


def test_a_captured_inference_is_inference_and_the_report_says_it_first(tmp_path: Any) -> None:
    model = _model()
    with gpuprofile.profile(interval=None) as p, torch.no_grad():
        model(torch.randn(8, 16))
    report = p.typed_report()
    assert report.workload is not None and report.workload.phase == "inference"
    assert p.report()["workload"]["phase"] == "inference"
    line = workload_line(report.workload)
    assert line == "workload: inference · parallelism none seen · eager · cpu"
    # First in the text (after its title), and in the HTML page before the notices.
    assert p.text().splitlines()[1] == line
    page = tmp_path / "report.html"
    p.save_html(page)
    markup = div_markup(page.read_text())
    assert markup.index(line) < markup.index("Source:")
    assert markup.index("phase inference: a forward") < markup.index("Source:")


def test_evaluation_between_training_steps_is_mixed() -> None:
    model = _model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with gpuprofile.profile(steps=(0, 4), interval=None) as p:
        for _ in range(2):
            _train_step(model, optimizer)
            gpuprofile.step()
            with torch.no_grad():
                model(torch.randn(8, 16))
            gpuprofile.step()
    found = Analysis(p.trace).workload
    assert found.phase == "mixed", found.evidence
    said = next(e for e in found.evidence if e.startswith("phase"))
    assert "2 recorded steps ran a forward without one" in said


# --- fixes that fit (analyses/fitting.py) ----------------------------------------------------


def _hint(fix: tuple[str, ...], code: str = "") -> Hint:
    return Hint(
        kind="communication",
        title="t",
        gain_ns=1,
        gain_method="M.",
        confidence="low",
        explanation="e",
        numbers={},
        fix=fix,
        code=code,
    )


def _of(phase: str = "training", device: str = "cuda", **more: Any) -> Workload:
    fields: dict[str, Any] = {
        "engine": None,
        "parallelism": (),
        "execution": "eager",
        "evidence": (),
        **more,
    }
    return Workload(phase=phase, device=device, **fields)  # type: ignore[arg-type]


DDP = "Tune DistributedDataParallel(bucket_cap_mb=...)."
FSDP = "Prefetch: FullyShardedDataParallel(forward_prefetch=True)."
TF32 = 'Allow TF32: torch.set_float32_matmul_precision("high").'
NO_TF32 = "This GPU's tensor cores take fp16 (no TF32 or bf16 before Ampere): use fp16."
COMPILE = "Fuse the chain: torch.compile(model)."
ADAMW = "Use torch.optim.AdamW(..., fused=True)."
AUTOCAST = 'Run under torch.autocast(device_type="cuda", dtype=torch.bfloat16).'


def test_an_inference_gets_no_training_advice() -> None:
    hint = _hint((DDP, COMPILE), "model = DistributedDataParallel(model)\nout = model(x)\n")
    fit = fitted(hint, _of("inference"), None)
    assert fit.fix == (COMPILE,)
    assert fit.code == "out = model(x)\n"
    assert fitted(hint, _of("training", parallelism=("dp",)), None) is hint


def test_a_cpu_run_gets_no_cuda_advice() -> None:
    fit = fitted(_hint((AUTOCAST, TF32, COMPILE)), _of(device="cpu"), None)
    assert fit.fix == (COMPILE,)


def test_a_cpu_run_gets_no_finding_about_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever a detector returns, a run with no GPU keeps none of the GPU's findings (its
    idle time, its launches), however they are worded; its own (a collective over gloo) stay.
    The same findings on a CUDA run all stay."""
    from gpuprofile.analyses import detectors

    made = [
        replace(_hint((COMPILE,)), kind=kind, title=kind, gain_ns=10**6, rank=0)
        for kind in ("gpu-idle", "launch-overhead", "communication")
    ]
    monkeypatch.setattr(detectors, "DETECTORS", ("one",))
    monkeypatch.setattr(detectors, "detector", lambda name: lambda analysis: list(made))

    def kinds(device_kernels: bool) -> set[str]:
        tables: dict[str, Any] = {"ops": make_table("ops", _ops("aten::mm", "aten::relu"))}
        if device_kernels:
            tables["kernels"] = make_table("kernels", _kernels("gemm"))
        analysis = Analysis(Trace(**tables, meta=TraceMeta(source=Source(format="kineto"))))
        return {hint.kind for hint in detectors.run_detectors(analysis)}

    assert kinds(device_kernels=False) == {"communication"}
    assert kinds(device_kernels=True) == {"gpu-idle", "launch-overhead", "communication"}


def test_no_optimizer_advice_where_no_optimizer_stepped(monkeypatch: pytest.MonkeyPatch) -> None:
    """A GPU-only trace (HTA's legacy inference: four kernels, no host ops) holds no optimizer
    step, so a launch finding's fused-optimizer sentence has nothing to act on; a training
    step with Optimizer.step#AdamW.step keeps it."""
    from gpuprofile.analyses import detectors

    made = replace(_hint((ADAMW, COMPILE)), kind="launch-overhead", gain_ns=10**6, rank=0)
    monkeypatch.setattr(detectors, "DETECTORS", ("one",))
    monkeypatch.setattr(detectors, "detector", lambda name: lambda analysis: [made])

    def fixes(**tables: Any) -> tuple[str, ...]:
        built = {name: make_table(name, rows) for name, rows in tables.items()}
        trace = Trace(**built, meta=TraceMeta(source=Source(format="kineto")))
        (hint,) = detectors.run_detectors(Analysis(trace))
        return hint.fix

    assert fixes(kernels=_kernels("gemm", "relu")) == (COMPILE,)
    training = _ops("aten::mm", "MmBackward0", "Optimizer.step#AdamW.step")
    assert fixes(ops=training, kernels=_kernels("gemm")) == (ADAMW, COMPILE)


def test_advice_needs_the_gpu_generation_it_names() -> None:
    hint = _hint(
        (TF32, NO_TF32, AUTOCAST, COMPILE),
        "with torch.autocast('cuda', dtype=torch.bfloat16):\n    y = m(x)\n",
    )
    turing = fitted(hint, _of(), (7, 5))
    assert turing.fix == (NO_TF32, COMPILE)
    assert "torch.float16" in turing.code and "bfloat16" not in turing.code
    pascal = fitted(hint, _of(), (6, 1))
    assert pascal.fix == (NO_TF32,)  # Triton, so torch.compile, needs 7.0
    assert fitted(hint, _of(), (8, 0)) is hint
    assert fitted(hint, _of(), None) is hint  # capability unknown: nothing ruled out


def test_optimizer_advice_names_the_optimizer_that_ran() -> None:
    hint = _hint((ADAMW,), "optimizer = torch.optim.AdamW(model.parameters(), fused=True)\n")
    sgd = fitted(hint, _of(optimizers=("SGD",)), None)
    assert sgd.fix == ("Use torch.optim.SGD(..., fused=True).",)
    assert "torch.optim.SGD(model.parameters()" in sgd.code
    assert fitted(hint, _of(optimizers=("FusedAdam",)), None).fix == ()
    assert fitted(hint, _of(optimizers=("AdamW",)), None) is hint
    assert fitted(hint, _of(), None) is hint  # no optimizer stepped in the trace
    # ... where the trace's host ops show the training step without one: nothing to fuse.
    absent = fitted(hint, _of(), None, optimizer_absent=True)
    assert absent.fix == () and absent.code == ""
    # Adagrad's fused kernel is CPU-only: on a GPU its multi-tensor path is foreach.
    adagrad = fitted(hint, _of(optimizers=("Adagrad",)), None)
    assert adagrad.fix == ("Use torch.optim.Adagrad(..., foreach=True).",)
    assert "foreach=True" in adagrad.code and "fused" not in adagrad.code
    assert fitted(hint, _of(device="cpu", optimizers=("Adagrad",)), None).fix == (
        "Use torch.optim.Adagrad(..., fused=True).",
    )


def test_data_parallel_advice_for_the_kind_that_ran() -> None:
    hint = _hint((DDP, FSDP, COMPILE))
    assert fitted(hint, _of(parallelism=("dp",)), None).fix == (DDP, COMPILE)
    assert fitted(hint, _of(parallelism=("fsdp",)), None).fix == (FSDP, COMPILE)
    # No data parallelism seen (a sample of gloo all-reduces): neither wrapper's settings.
    assert fitted(hint, _of(), None).fix == (COMPILE,)


def test_a_sketch_that_loses_a_block_opener_goes_whole() -> None:
    code = "for batch in loader:\n    with model.no_sync():\n        loss.backward()\n"
    assert fitted(_hint((COMPILE,), code), _of("inference"), None).code == ""


def test_the_engine_knob_comes_first() -> None:
    graphs = "Capture the step in a CUDA graph: torch.cuda.graphs."
    hint = replace(_hint((graphs,)), kind="launch-overhead")
    fit = fitted(hint, _of("inference", engine="vllm"), None)
    assert fit.fix[0].startswith("vLLM:") and "enforce_eager" in fit.fix[0]
    assert fit.fix[1:] == (graphs,)
    sglang = fitted(hint, _of("inference", engine="sglang"), None)
    assert "--cuda-graph-max-bs" in sglang.fix[0]
    # A run that already replays CUDA graphs has no graph setting to turn on.
    graphed = fitted(hint, _of("inference", engine="sglang", execution="cuda-graphs"), None)
    assert graphed.fix == (graphs,)
    # No engine, or a finding the engine has no knob for: the fixes as they were.
    assert fitted(hint, _of("inference"), None) is hint
    assert fitted(replace(hint, kind="sync-stall"), _of("inference", engine="vllm"), None).fix == (
        graphs,
    )


@pytest.mark.parametrize(
    ("engine", "knobs"),
    [
        ("vllm", ("max_num_seqs", "gpu_memory_utilization", "kv_cache_dtype")),
        ("sglang", ("--max-running-requests", "--mem-fraction-static", "--kv-cache-dtype")),
        ("hf-generate", ("padding_side", 'cache_implementation="static"')),
    ],
)
def test_memory_bound_decoding_gets_the_engines_batch_and_cache_knobs(
    engine: str, knobs: tuple[str, ...]
) -> None:
    hint = replace(_hint((COMPILE,)), kind="memory-bound")
    fit = fitted(hint, _of("inference", engine=engine), None)
    assert all(knob in fit.fix[0] for knob in knobs), fit.fix[0]
    assert fit.fix[1:] == (COMPILE,)


def test_cuda_advice_on_rocm_says_it_applies() -> None:
    graphs = "Capture the step in a CUDA graph: torch.cuda.graphs."
    jax = "Capture the step in a CUDA graph: jit the whole step."
    fit = fitted(_hint((COMPILE, jax, graphs, graphs)), _of(device="rocm"), None)
    assert fit.fix[:2] == (COMPILE, jax)  # speaks no CUDA; not PyTorch's
    fit = replace(fit, fix=fit.fix[1:])
    assert fit.fix[1].endswith("torch.backends.cudnn MIOpen, and NCCL is RCCL.)")
    assert fit.fix[2] == graphs  # said once a hint
    assert fitted(_hint((graphs,)), _of(device="cuda"), None).fix == (graphs,)
