"""Fixes that fit the program and its device: the findings pipeline passes every hint through
``fitted`` once, so no detector has to remember what the workload rules out.

A fix sentence (and a code sketch line) is left out when it cannot apply:

- training's advice (DDP and FSDP settings, ``no_sync``, gradient accumulation and scaling,
  optimizer settings) in an inference; DDP's only to a job that runs DDP (or all-reduces its
  gradients), FSDP's only to one that shards with FSDP (none to a job where neither is seen:
  a sample of gloo all-reduces); optimizer advice only where the trace holds an optimizer step
  (not to a forward and backward benchmark, nor to a GPU-only trace);
- CUDA's (device types, TF32, CUDA graphs, pinned copies, Triton) on a CPU run;
- TF32 before compute capability 8.0 (Ampere), and torch.compile / Triton before 7.0 (Volta:
  Triton needs it), where the trace names the device's capability.

A finding about the GPU itself (``GPU_ONLY``: its idle time, launches, syncs, copies, kernels'
occupancy and memory access, tensor cores, TensorRT layers) is no finding of a CPU run at all:
``fits_device`` drops it whole, whatever its wording.

A sentence that names ``torch.optim.AdamW`` is said of the optimizer that ran instead: another
``torch.optim`` class by its name; a fused one of another library (``FusedAdam``) already is,
so the sentence goes. A code sketch that loses a line keeps the rest; one left with comments
alone goes.

Where the engine that ran has its own knob for a finding, the knob comes first (``ENGINE_FIX``:
vLLM's and SGLang's CUDA-graph settings for launch-bound idle, their batch and KV-cache sizes
for memory-bound decoding, their custom all-reduce for a tensor-parallel all-reduce; batched
prompts and a static cache for transformers' generate). On ROCm, the first PyTorch fix that
speaks CUDA says that it applies as written (PyTorch's torch.cuda drives HIP, its cudnn
settings MIOpen; NCCL is RCCL there), once a hint.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from functools import partial

from gpuprofile.analyses.hints import Hint
from gpuprofile.analyses.workload import Workload

# Training's advice, in a sentence: a sentence that says "for training" of a step that fits
# inference too (fp16 autocast "with a GradScaler for training") keeps it.
_TRAINING_TEXT = re.compile(
    r"DistributedDataParallel|bucket_cap_mb|no_sync|FullyShardedDataParallel|fully_shard"
    r"|BackwardPrefetch|forward_prefetch|\bFSDP\b|\bDDP\b|zero_grad|torch\.optim\."
    r"|fused optimizers|accumulate gradients|gradient accumulation|register_comm_hook|PowerSGD"
)
# ... and in a code sketch's line.
_TRAINING_CODE = re.compile(
    _TRAINING_TEXT.pattern + r"|GradScaler|scaler\.|\.backward\(|optimizer\.|bf16_compress"
)
_CUDA = re.compile(
    r"device_type=\"cuda\"|\"cuda\"|\.cuda\(|torch\.cuda|torch\.backends\.cuda|cudnn|TF32|tf32"
    r"|CUDA graph|cudaMalloc|cudaMemcpy|pin_memory|pinned|non_blocking|Triton|NCCL|nvidia-smi"
    r"|CUDA_",
)
# Advice to use TF32, or bf16, which arrive with Ampere (8.0) (a sentence that says there is no
# TF32 before Ampere is no such advice).
_TF32 = re.compile(r"allow_tf32|set_float32_matmul_precision|Allow TF32")
_BF16 = re.compile(r"torch\.bfloat16")
_TRITON = re.compile(r"torch\.compile|Triton|Inductor")
# Advice for one kind of data parallelism, said to a job that runs another.
_BY_PARALLELISM = (
    ("dp", re.compile(r"DistributedDataParallel|bucket_cap_mb|\bDDP\b|no_sync|register_comm_hook")),
    ("fsdp", re.compile(r"FullyShardedDataParallel|fully_shard|\bFSDP\b|BackwardPrefetch")),
)
_ADAMW = re.compile(r"torch\.optim\.AdamW")
_OPTIMIZER_ADVICE = re.compile(r"torch\.optim\.|fused optimizer|optimizer\.step")
# torch.optim classes with fused or foreach implementations (torch 2.4+).
# ... of which these have a fused GPU implementation (Adagrad's fused one is CPU-only; the rest
# have foreach only).
_FUSED_ON_GPU = frozenset(("SGD", "Adam", "AdamW"))
_TORCH_OPTIMIZERS = frozenset(
    ("SGD", "Adam", "AdamW", "Adagrad", "Adamax", "NAdam", "RAdam", "RMSprop", "Adadelta")
)


# An engine's own knob for a finding, said before the general fixes: (engine, hint kinds, fix).
ENGINE_FIX = (
    (
        "vllm",
        ("launch-overhead", "gpu-idle"),
        "vLLM: let the engine replay CUDA graphs: do not run it eager (enforce_eager=True, "
        "--enforce-eager), and make its captured batch sizes cover the ones you serve "
        "(compilation_config cudagraph_capture_sizes; batches above the largest run eager).",
    ),
    (
        "sglang",
        ("launch-overhead", "gpu-idle"),
        "SGLang: keep CUDA graphs on (no --disable-cuda-graph) and raise --cuda-graph-max-bs "
        "to the largest batch you serve (larger batches run without the graph).",
    ),
    (
        "vllm",
        ("memory-bound",),
        "vLLM: batch more sequences per step so each weight read serves more tokens: raise "
        "max_num_seqs (--max-num-seqs) and max_num_batched_tokens, and make room for their KV "
        'cache (gpu_memory_utilization; kv_cache_dtype="fp8" halves its bytes).',
    ),
    (
        "sglang",
        ("memory-bound",),
        "SGLang: batch more requests per step so each weight read serves more tokens: raise "
        "--max-running-requests, and make room for their KV cache (--mem-fraction-static; "
        "--kv-cache-dtype fp8_e5m2 halves its bytes).",
    ),
    (
        "hf-generate",
        ("memory-bound", "launch-overhead", "gpu-idle"),
        'transformers generate: give it a batch of prompts (padding_side="left") rather than '
        'one at a time, and a static KV cache (cache_implementation="static") so '
        "torch.compile can capture the decode step.",
    ),
    (
        "vllm",
        ("communication",),
        "vLLM: keep its custom all-reduce for tensor parallelism on one node "
        "(disable_custom_all_reduce=False, the default); NCCL's all-reduce is slower for the "
        "small messages of decoding.",
    ),
    (
        "sglang",
        ("communication",),
        "SGLang: keep its custom all-reduce for tensor parallelism on one node (no "
        "--disable-custom-all-reduce).",
    ),
)
# Findings about the GPU's own work: on a run with no GPU, none applies.
GPU_ONLY = frozenset(
    (
        "gpu-idle",
        "launch-overhead",
        "sync-stall",
        "pageable-copy",
        "allocator-churn",
        "tensor-cores-unused",
        "low-occupancy",
        "uncoalesced-access",
        "layout-conversion",
        "precision-fallback",
        "reformat-overhead",
        "unfused-layers",
        "dla-fallback",
    )
)


def fits_device(hint: Hint, workload: Workload) -> bool:
    """Whether a finding can be about the run's device: no GPU finding for a CPU run."""
    return not (workload.device == "cpu" and hint.kind in GPU_ONLY)


ROCM_NOTE = (
    " (On ROCm this applies as written: torch.cuda drives HIP, torch.backends.cudnn MIOpen, and "
    "NCCL is RCCL.)"
)


def fitted(
    hint: Hint,
    workload: Workload,
    capability: tuple[int, int] | None,
    *,
    optimizer_absent: bool = False,
) -> Hint:
    """The hint with only the fix sentences and code lines that fit, its engine's knob first,
    CUDA's advice said of ROCm where it ran; itself when all fit. ``capability``: the trace's
    GPU compute capability (None: not known, nothing ruled out by it)."""
    said = partial(_said, workload=workload, capability=capability, absent=optimizer_absent)
    fix = tuple(f for s in hint.fix if (f := said(s)) is not None)
    knobs = tuple(
        text
        for engine, kinds, text in ENGINE_FIX
        if engine == workload.engine
        and hint.kind in kinds
        # Graph settings for a run that already replays graphs: nothing to turn on.
        and not (workload.execution == "cuda-graphs" and "CUDA graph" in text)
    )
    fix = (*knobs, *fix)
    if workload.device == "rocm":
        # PyTorch's advice only: torch.cuda is what drives HIP (JAX's and CUDA C's say nothing).
        at = next((i for i, f in enumerate(fix) if _CUDA.search(f) and "torch" in f), None)
        if at is not None and "ROCm" not in fix[at]:
            fix = (*fix[:at], fix[at] + ROCM_NOTE, *fix[at + 1 :])
    code = _code(hint.code, said)
    if fix == hint.fix and code == hint.code:
        return hint
    return replace(hint, fix=fix, code=code)


def _said(
    text: str,
    *,
    workload: Workload,
    capability: tuple[int, int] | None,
    absent: bool = False,
    code: bool = False,
) -> str | None:
    """The text as it fits the workload: None when it does not apply at all. ``absent``: the
    trace holds no optimizer step."""
    training = _TRAINING_CODE if code else _TRAINING_TEXT
    if workload.phase == "inference" and training.search(text):
        return None
    if workload.device == "cpu" and _CUDA.search(text):
        return None
    named = {kind for kind, pattern in _BY_PARALLELISM if pattern.search(text)}
    if named and not named & set(workload.parallelism):
        return None
    if capability is not None:
        if capability < (8, 0) and _TF32.search(text):
            return None
        if capability < (8, 0) and _BF16.search(text):
            if not code:
                return None
            text = _BF16.sub("torch.float16", text)  # the same sketch in the precision it has
        if capability < (7, 0) and _TRITON.search(text):
            return None
    if absent and _OPTIMIZER_ADVICE.search(text):
        return None  # a training step whose optimizer is not in the trace: nothing to fuse
    if _ADAMW.search(text) and workload.optimizers and "AdamW" not in workload.optimizers:
        ran = workload.optimizers[0]
        if ran not in _TORCH_OPTIMIZERS:
            return None  # FusedAdam, Shampoo: not torch.optim's; the advice is not theirs
        text = _ADAMW.sub(f"torch.optim.{ran}", text)
        if ran not in _FUSED_ON_GPU and workload.device != "cpu":
            text = text.replace("fused=True", "foreach=True")  # its fused kernel is CPU-only
        return text
    return text


def _code(code: str, said: Callable[..., str | None]) -> str:
    """The sketch less the lines that do not fit; "" when what is left is no code, or when a
    line that opens a block goes (its body would be left without it)."""
    lines = []
    for line in code.splitlines():
        kept = said(line, code=True)
        if kept is None and line.split("#", 1)[0].rstrip().endswith(":"):
            return ""
        if kept is not None:
            lines.append(kept)
    return "\n".join(lines) + "\n" if any(_is_code(line) for line in lines) else ""


def _is_code(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith(("#", "import ", "from "))


def capability_of(devices: list[dict[str, object]]) -> tuple[int, int] | None:
    """The lowest compute capability the devices name ("8.0"), or None where none does."""
    found = []
    for device in devices:
        text = str(device.get("compute_capability") or "")
        if m := re.fullmatch(r"(\d+)\.(\d+)", text):
            found.append((int(m.group(1)), int(m.group(2))))
    return min(found) if found else None
