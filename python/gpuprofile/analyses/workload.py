"""What the profiled program is: training or inference, the engine that ran it, how it is
spread over devices, how its GPU work was launched, and on what device. Advice is chosen by it.

Each decision is read from evidence in the trace, and each comes with one sentence of that
evidence (``Workload.evidence``); where there is none the answer is ``unknown`` (phase) or
left out (engine, parallelism). The rules:

- **phase**: ``training`` when autograd's backward ran (``autograd::engine::evaluate_function``,
  ``*Backward*`` and ``*_backward`` ops, backward kernels such as ``*_bwd_*``/``wgrad``) or an
  optimizer stepped (``Optimizer.step#``); ``inference`` when an inference engine ran, or a
  model's forward ran (layer ops: matmuls, convolutions, attention, norms, embeddings, or
  ``nn.Module`` calls) with no backward and no optimizer step; ``mixed`` when both hold: a
  serving engine or ``generate`` beside backward (RL fine-tuning), or recorded steps with a
  backward beside steps of forward alone (evaluation between training steps); else
  ``unknown``, which is what a GPU-only trace with no backward kernels and no host ops gets.
- **engine**: the first whose name the trace's ops, frames, annotations or kernels show:
  vLLM (``vllm::``, ``vllm/``), SGLang (``sglang``, ``sgl_kernel``), TensorRT (an engine
  profile), Megatron (``megatron``), DeepSpeed (``deepspeed``), Hugging Face ``generate``
  (``transformers/generation``, ``GenerationMixin``).
- **parallelism**: ``dp`` (DistributedDataParallel's forward or reducer), ``fsdp``
  (``FullyShardedDataParallel``/``FSDP::``, or all-gather with reduce-scatter in training
  without DDP), ``tp`` (Megatron's tensor-parallel layers; all-reduce in an inference engine;
  custom or multimem all-reduce kernels), ``pp`` (point-to-point sends and receives, or
  pipeline schedules), ``ep`` (expert dispatch/combine kernels; all-to-all beside experts
  or MoE ops), ``cp`` (ring attention, context-parallel ranges). All-to-all with no sign of
  experts is said in the evidence and named none of them: as embedding tables sharded across
  ranks where TorchRec's or FBGEMM's names show it (DLRM), else as a question.
- **execution**: GPU kernel time is split by how each kernel was launched: by a graph launch
  (``cudaGraphLaunch``/``hipGraphLaunch``), inside a torch.compile region or as an Inductor
  kernel, or otherwise eagerly. A mode that holds at least ``_MAIN_SHARE`` of it names the
  trace; otherwise two modes with ``_MINOR_SHARE`` or more each make it ``mixed``. XLA (XPlane)
  and TensorRT programs are ``compiled``; a trace with no kernels is ``compiled`` when it has
  compiled regions, else ``eager``.
- **device**: ``tpu`` for a TPU plane, ``rocm`` for HIP runtime calls, an AMD device or AMD
  code objects (``*.kd``), ``cuda`` for any other GPU work or an NVIDIA tool's file, ``cpu``
  when the trace holds host ops only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
import pandas as pd

from gpuprofile.analyses.collectives import collective_of
from gpuprofile.analyses.kernel_kind import COMMUNICATION
from gpuprofile.analyses.names import Searchable, category_texts, codes, per_category
from gpuprofile.analyses.patterns import COLLECTIVE_OP
from gpuprofile.analyses.steps import step_numbers
from gpuprofile.trace.meta import world_size
from gpuprofile.trace.model import MODULE_PREFIX

if TYPE_CHECKING:
    from gpuprofile.analyses.compiled import CompiledCode
    from gpuprofile.analyses.lookups import Lookups

Phase = Literal["training", "inference", "mixed", "unknown"]
Execution = Literal["eager", "cuda-graphs", "compiled", "mixed"]
DeviceKind = Literal["cpu", "cuda", "rocm", "tpu"]
PARALLELISMS = ("dp", "fsdp", "tp", "pp", "ep", "cp")

_MAIN_SHARE = 0.8  # a launch mode that runs this share of the kernel time names the trace
_MINOR_SHARE = 0.2  # ... and below it, two modes with this share each make it "mixed"
_SHOWN = 2  # names quoted per sentence of evidence

_BACKWARD_OP = re.compile(
    r"^autograd::engine::evaluate_function|Backward\d*$|_backward|^## backward ##"
)
_BACKWARD_KERNEL = re.compile(r"backward|bwd|wgrad|dgrad", re.IGNORECASE)
_OPTIMIZER = re.compile(r"^Optimizer\.step#(?P<cls>[\w.]+?)\.step$")
# Ops a model's forward runs, by the kind of layer: a forward holds two kinds or more (a lone
# matmul is a benchmark or a data step, not a model), or nn.Module calls.
_LAYER_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("matmul", re.compile(r"^aten::(linear|addmm|mm|bmm|baddbmm|matmul)$")),
    ("convolution", re.compile(r"^aten::(conv\w*|cudnn_convolution\w*|miopen_convolution\w*)$")),
    ("attention", re.compile(r"^aten::\w*attention\w*$")),
    ("norm", re.compile(r"^aten::(\w*layer_norm|group_norm|batch_norm|\w*rms_norm)$")),
    ("embedding", re.compile(r"^aten::embedding\w*$")),
)
_LAYER_OP = re.compile(
    "|".join(p.pattern for _, p in _LAYER_KINDS) + "|^" + re.escape(MODULE_PREFIX)
)
_ENGINES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("vllm", re.compile(r"\bvllm(::|/|\.)", re.IGNORECASE)),
    ("sglang", re.compile(r"\bsglang\b|sgl_kernel", re.IGNORECASE)),
    ("megatron", re.compile(r"megatron", re.IGNORECASE)),
    ("deepspeed", re.compile(r"deepspeed", re.IGNORECASE)),
    ("hf-generate", re.compile(r"transformers/generation/|GenerationMixin|\): generate$")),
)
_SERVING = frozenset({"vllm", "sglang", "tensorrt", "hf-generate"})
_DDP = re.compile(
    r"^DistributedDataParallel\.forward|ddp\.reducer|nn\.Module: DistributedDataPar"
    r"|nn/parallel/distributed\.py\(\d+\): forward"
)
_FSDP = re.compile(r"FullyShardedDataParallel|^FSDP::|fsdp", re.IGNORECASE)
# torch.utils.checkpoint and FSDP's checkpoint wrapper: forwards the backward recomputes.
_CHECKPOINTING = re.compile(
    r"torch/utils/checkpoint\.py\(\d+\): (?:forward|checkpoint|pack_hook)"
    r"|checkpoint_wrapper\.py\(\d+\): forward|CheckpointFunction|CheckpointWrapper"
)
# TorchRec's and FBGEMM's sharded embeddings: their input distribution and lookups.
_SHARDED_EMBEDDINGS = re.compile(
    r"KJTAllToAll|PooledEmbeddingsAwaitable|PooledEmbeddingsAllToAll|sparse_data_dist"
    r"|split_embedding_codegen|ShardedEmbedding|torchrec"
)
_TP = re.compile(r"tensor_model_parallel|tensor_parallel|(Column|Row)ParallelLinear")
_TP_KERNEL = re.compile(
    r"multimem|(one|two)_shot_all_reduce|cross_device_reduce|custom_?all_?reduce", re.IGNORECASE
)
_PP = re.compile(r"pipeline_?parallel|PipelineStage|pipelining|_schedule\w*_step", re.IGNORECASE)
_EXPERTS = re.compile(r"expert|\bmoe\b|moe_|_moe|fused_moe|topk_softmax", re.IGNORECASE)
_EP_KERNEL = re.compile(r"deep_?ep::|\b(ep|moe)_?(dispatch|combine)|notify_dispatch", re.I)
_CP = re.compile(r"ring_?attn|ring_attention|context_parallel|_templated_ring", re.IGNORECASE)
_GRAPH_LAUNCH = re.compile(r"^(cuda|hip)GraphLaunch|^cuGraphLaunch")
_HIP = re.compile(r"^hip|^roctx|^hsa_")
_AMD_DEVICE = re.compile(r"\bAMD\b|Instinct|Radeon|\bMI\d{3}|gfx\d", re.IGNORECASE)

# The collectives a trace's communication names stand for (collectives.collective_of).
_COLLECTIVES = frozenset(
    (
        "allreduce",
        "allgather",
        "reduce_scatter",
        "alltoall",
        "broadcast",
        "barrier",
        "sendrecv",
        "dispatch",
        "combine",
        "send",
        "recv",
        "reduce",
        "gather",
        "scatter",
    )
)
_FRAME = re.compile(r"\.py\(\d+\)|^<built-in")  # a Python frame (with_stack), not an op


@dataclass(frozen=True)
class Workload:
    """What the program is (see the module docstring for each rule)."""

    phase: Phase
    engine: str | None
    parallelism: tuple[str, ...]
    execution: Execution
    device: DeviceKind
    evidence: tuple[str, ...]  # one sentence per decision, in the order of the fields
    optimizers: tuple[str, ...] = ()  # the optimizer classes that stepped ("AdamW")


def workload(analysis: Lookups, compiled: CompiledCode) -> Workload:
    """The workload of the analysis' trace, all ranks together; ``compiled``: its
    torch.compile regions and Inductor kernels (Analysis.compiled)."""
    trace = analysis.trace
    names = _Names(
        ops=Searchable(_distinct(trace.ops["name"])),
        kernels=Searchable(_distinct(trace.kernels["name"])),
        runtime=Searchable(_distinct(trace.runtime["name"])),
        annotations=Searchable(_distinct(trace.gpu_annotations["name"])),
    )
    fmt = trace.meta.source.format
    evidence: list[str] = []
    engine = _engine(names, fmt, evidence)
    phase = _phase(analysis, names, engine, evidence)
    if phase in ("training", "mixed") and (recomputed := _with(_CHECKPOINTING, names.ops)):
        evidence.append(
            f"activation checkpointing: {_quoted(recomputed)} (the backward runs the "
            "checkpointed forwards again; checkpoint fewer layers where memory allows)"
        )
    parallelism = _parallelism(analysis, names, engine, phase, evidence)
    execution = _execution(analysis, compiled, fmt, evidence)
    device = _device(analysis, names, fmt, evidence)
    optimizers = tuple(
        sorted({m.group("cls") for n in names.ops.texts if (m := _OPTIMIZER.match(n)) is not None})
    )
    return Workload(phase, engine, parallelism, execution, device, tuple(evidence), optimizers)


@dataclass(frozen=True)
class _Names:
    """The distinct names of each table: every rule reads these, never the rows."""

    ops: Searchable
    kernels: Searchable
    runtime: Searchable
    annotations: Searchable

    @property
    def host(self) -> tuple[Searchable, Searchable]:
        return self.ops, self.annotations


def _distinct(column: pd.Series) -> list[str]:
    """The names a column's rows use (a categorical keeps unused categories after a slice)."""
    if not len(column):
        return []
    if not isinstance(column.dtype, pd.CategoricalDtype):
        return sorted({str(n) for n in column.dropna().tolist()})
    found = np.unique(codes(column))
    texts: list[str] = category_texts(column)[found[found >= 0]].tolist()
    return texts


def _quoted(found: Iterable[str]) -> str:
    """The first names found (ops before Python frames, which read worse), and how many more."""
    shown = sorted(dict.fromkeys(found), key=lambda n: bool(_FRAME.search(n)))
    text = ", ".join(shown[:_SHOWN])
    return text + (f" and {len(shown) - _SHOWN} more" if len(shown) > _SHOWN else "")


def _with(pattern: re.Pattern[str], *groups: Searchable) -> list[str]:
    """The names of the groups, in order, that the pattern matches (search)."""
    return [g.texts[i] for g in groups for i in g.matching(pattern)]


def _engine(names: _Names, fmt: str, evidence: list[str]) -> str | None:
    if fmt == "tensorrt":
        evidence.append("engine tensorrt: a TensorRT engine profile")
        return "tensorrt"
    # The program's own names first: a kernel library names the engine it was written for
    # (SGLang runs kernels templated on vllm:: types).
    for where in (names.host, (names.kernels,)):
        for engine, pattern in _ENGINES:
            if found := _with(pattern, *where):
                evidence.append(f"engine {engine}: {_quoted(found)}")
                return engine
    return None


def _phase(analysis: Lookups, names: _Names, engine: str | None, evidence: list[str]) -> Phase:
    backward = _with(_BACKWARD_OP, names.ops) or _with(_BACKWARD_KERNEL, names.kernels)
    optimizer = _with(_OPTIMIZER, names.ops)
    trains = bool(backward or optimizer)
    why = ", ".join(
        part
        for part in (
            f"backward ({_quoted(backward)})" if backward else "",
            f"optimizer step ({_quoted(optimizer)})" if optimizer else "",
        )
        if part
    )
    if trains and engine in _SERVING:
        evidence.append(f"phase mixed: {why}, beside the {engine} engine")
        return "mixed"
    if trains:
        forward_only = _forward_only_steps(analysis)
        if forward_only:
            evidence.append(
                f"phase mixed: {why}; {forward_only} recorded steps ran a forward without one"
            )
            return "mixed"
        evidence.append(f"phase training: {why}")
        return "training"
    if engine in _SERVING:
        evidence.append(f"phase inference: the {engine} engine, no backward")
        return "inference"
    layers = _with(_LAYER_OP, names.ops)
    found = Searchable(layers)
    kinds = {kind for kind, pattern in _LAYER_KINDS if _with(pattern, found)}
    if len(kinds) >= 2 or any(n.startswith(MODULE_PREFIX) for n in layers):
        evidence.append(f"phase inference: a forward ({_quoted(layers)}), no backward or optimizer")
        return "inference"
    evidence.append(
        "phase unknown: no backward, no optimizer step, no forward of two kinds of layer"
        + ("" if names.ops.texts else " (no host ops)")
    )
    return "unknown"


def _forward_only_steps(analysis: Lookups) -> int:
    """Recorded steps (ProfilerStep#N) that ran layer ops and no backward, in a trace where
    other steps ran a backward: evaluation between training steps. 0 without steps."""
    ops = analysis.trace.ops
    numbers = step_numbers(ops["name"])
    if np.count_nonzero(numbers >= 0) < 2:
        return 0
    name_codes = codes(ops["name"])
    layer = _flags(ops["name"], "workload_layer", _LAYER_OP)[name_codes]
    backward = _flags(ops["name"], "workload_backward", _BACKWARD_OP)[name_codes]
    forward_only = with_backward = 0
    for rank in np.unique(ops["rank"].to_numpy()).tolist():
        rows = analysis.rank_rows("ops", rank)
        start = ops["start_ns"].to_numpy()[rows]
        order = np.argsort(start, kind="stable")
        start = start[order]
        # Counts of layer and backward ops up to each position in start order.
        layers = np.concatenate(([0], np.cumsum(layer[rows][order])))
        backwards = np.concatenate(([0], np.cumsum(backward[rows][order])))
        steps = rows[numbers[rows] >= 0]
        begin = ops["start_ns"].to_numpy()[steps]
        first = np.searchsorted(start, begin, side="left")
        last = np.searchsorted(start, begin + ops["dur_ns"].to_numpy()[steps], side="left")
        has_backward = backwards[last] > backwards[first]
        has_layer = layers[last] > layers[first]
        with_backward += int(has_backward.sum())
        forward_only += int((has_layer & ~has_backward).sum())
    return forward_only if with_backward else 0


def _flags(names: pd.Series, key: str, pattern: re.Pattern[str]) -> np.ndarray:
    return per_category(names, key, lambda n: bool(pattern.search(n)), bool, False)


def _collectives(analysis: Lookups, names: _Names) -> set[str]:
    """The collectives the trace ran: its communication ops' and kernels' kinds (Python frames
    of torch.distributed, which run for any program, are not communication)."""
    comm_ops = [n for n in _with(COLLECTIVE_OP, names.ops) if not _FRAME.search(n)]
    kinds = analysis.kernel_classes
    comm_kernels = [n for n in names.kernels.texts if kinds.of(n)[0] == COMMUNICATION]
    return {collective_of(n) for n in comm_ops + comm_kernels} & _COLLECTIVES


def _parallelism(
    analysis: Lookups, names: _Names, engine: str | None, phase: Phase, evidence: list[str]
) -> tuple[str, ...]:
    """Parallelism needs communication: a name alone (a framework asking its tensor-parallel
    size, a DDP wrapper) says what the program could do, not what this run did."""
    size = world_size(analysis.trace.meta)
    if size == 1:
        evidence.append("parallelism none: the trace declares a world size of 1")
        return ()
    host, kernels = names.host, names.kernels
    collectives = _collectives(analysis, names)
    found: dict[str, str] = {}
    if tp := _with(_TP_KERNEL, kernels):
        found["tp"] = _quoted(tp)
    if not collectives and not found:
        return ()
    training = phase in ("training", "mixed")
    if ddp := _with(_DDP, *host):
        found["dp"] = _quoted(ddp)
    if fsdp := _with(_FSDP, *host):
        found["fsdp"] = _quoted(fsdp)
    elif training and "dp" not in found and {"allgather", "reduce_scatter"} <= collectives:
        found["fsdp"] = "all-gather and reduce-scatter in training"
    reduces = {"allreduce", "allgather", "reduce_scatter"} & collectives
    if "tp" not in found and reduces:
        if tp := _with(_TP, *host):
            found["tp"] = f"{_quoted(tp)}, with {_quoted(sorted(reduces))}"
        elif engine in _SERVING or phase == "inference":
            found["tp"] = f"{_quoted(sorted(reduces))} in inference"
    if training and "allreduce" in collectives and not found.keys() & {"dp", "fsdp", "tp"}:
        found["dp"] = "all-reduce in training (of gradients)"
    if {"send", "recv"} & collectives:
        pp = _with(_PP, *host)
        found["pp"] = _quoted(pp) if pp else "point-to-point sends and receives"
    experts = _with(_EXPERTS, *host, kernels)
    if ep := _with(_EP_KERNEL, kernels, *host):
        found["ep"] = _quoted(ep)
    elif "alltoall" in collectives and experts:
        found["ep"] = f"all-to-all beside experts ({_quoted(experts)})"
    if cp := _with(_CP, *host, kernels):
        found["cp"] = _quoted(cp)
    chosen = tuple(p for p in PARALLELISMS if p in found)
    for kind in chosen:
        evidence.append(f"parallelism {kind}: {found[kind]}")
    if "alltoall" in collectives and "ep" not in found:
        if sharded := _with(_SHARDED_EMBEDDINGS, *host, kernels):
            evidence.append(
                f"embedding tables sharded across ranks (model parallel): all-to-all beside "
                f"{_quoted(sharded)}; none of the six parallelisms names it"
            )
        else:
            evidence.append(
                "all-to-all with no experts (sharded embeddings?): no parallelism named"
            )
    if not chosen and collectives:
        evidence.append(f"collectives ({', '.join(sorted(collectives))}) but no parallelism named")
    return chosen


def _execution(
    analysis: Lookups, compiled: CompiledCode, fmt: str, evidence: list[str]
) -> Execution:
    if fmt == "xplane":
        evidence.append("execution compiled: XLA runs compiled modules")
        return "compiled"
    if fmt == "tensorrt":
        evidence.append("execution compiled: a TensorRT engine is built ahead of time")
        return "compiled"
    trace = analysis.trace
    kernels = trace.kernels
    if not len(kernels):
        if len(compiled.regions):
            evidence.append(
                f"execution compiled: {len(compiled.regions)} torch.compile region calls"
            )
            return "compiled"
        evidence.append("execution eager: no kernels, no compiled regions")
        return "eager"
    dur = kernels["dur_ns"].to_numpy(np.float64)
    total = dur.sum() or 1.0
    graph = _graph_launched(analysis)
    inductor = np.zeros(len(kernels), dtype=bool)
    if len(compiled.kernels):
        on_gpu = compiled.kernels[compiled.kernels["table"] == "kernels"]
        inductor = kernels["id"].isin(on_gpu["id"]).to_numpy() & ~graph
    shares = {
        "cuda-graphs": float(dur[graph].sum() / total),
        "compiled": float(dur[inductor].sum() / total),
    }
    shares["eager"] = max(0.0, 1.0 - shares["cuda-graphs"] - shares["compiled"])
    said = ", ".join(f"{mode} {share:.0%}" for mode, share in shares.items() if share > 0)
    main = max(shares, key=lambda m: shares[m])
    if shares[main] >= _MAIN_SHARE:
        mode: Execution = main  # type: ignore[assignment]
    elif sum(1 for s in shares.values() if s >= _MINOR_SHARE) >= 2:
        mode = "mixed"
    else:
        mode = main  # type: ignore[assignment]
    evidence.append(f"execution {mode}: kernel time {said}")
    return mode


def _graph_launched(analysis: Lookups) -> np.ndarray:
    """Per kernel: launched by a CUDA/HIP graph launch (its correlation is a graph launch's)."""
    trace = analysis.trace
    kernels, runtime = trace.kernels, trace.runtime
    if not len(runtime):
        return np.zeros(len(kernels), dtype=bool)
    launches = runtime[
        _flags(runtime["name"], "graph_launch", _GRAPH_LAUNCH)[codes(runtime["name"])]
    ]
    if not len(launches):
        return np.zeros(len(kernels), dtype=bool)
    # (rank, correlation) pairs, compared rank by rank: integers both (trace/model.py).
    out = np.zeros(len(kernels), dtype=bool)
    rank, correlation = kernels["rank"].to_numpy(), kernels["correlation"].to_numpy()
    launch_rank = launches["rank"].to_numpy()
    launch_correlation = launches["correlation"].to_numpy()
    for r in np.unique(launch_rank).tolist():
        mine = rank == r
        out[mine] = np.isin(correlation[mine], launch_correlation[launch_rank == r])
    return out


def _device(analysis: Lookups, names: _Names, fmt: str, evidence: list[str]) -> DeviceKind:
    devices = [
        str(d.get("name") or "")
        for rank in analysis.trace.meta.ranks.values()
        for d in rank.devices
    ]
    if any("TPU" in d for d in devices):
        evidence.append(f"device tpu: {_quoted(d for d in devices if 'TPU' in d)}")
        return "tpu"
    hip = _with(_HIP, names.runtime)
    amd = [d for d in devices if _AMD_DEVICE.search(d)]
    code_objects = [k for k in names.kernels.texts if k.endswith(".kd")]
    if hip or amd or code_objects:
        evidence.append(f"device rocm: {_quoted(hip or amd or code_objects)}")
        return "rocm"
    trace = analysis.trace
    gpu_work = len(trace.kernels) + len(trace.memcpy) + len(trace.memset) + len(names.runtime.texts)
    if gpu_work or fmt in ("nsys", "ncu", "tensorrt"):
        said = _quoted(devices) if any(devices) else f"GPU work in a {fmt} trace"
        evidence.append(f"device cuda: {said}")
        return "cuda"
    if fmt == "memory-snapshot":  # the CUDA caching allocator's own record, no kernels
        evidence.append("device cuda: a CUDA caching allocator's snapshot")
        return "cuda"
    evidence.append("device cpu: host ops only, no GPU work")
    return "cpu"
