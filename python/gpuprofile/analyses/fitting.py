"""Fixes that fit the program and its device: the findings pipeline passes every hint through
``fitted`` once, so no detector has to remember what the workload rules out.

A fix sentence (and a code sketch line) is left out when it cannot apply:

- training's advice (DDP and FSDP settings, ``no_sync``, gradient accumulation and scaling,
  optimizer settings) in an inference; DDP's to a job that shards with FSDP, and FSDP's to one
  that runs DDP;
- CUDA's (device types, TF32, CUDA graphs, pinned copies, Triton) on a CPU run;
- TF32 before compute capability 8.0 (Ampere), and torch.compile / Triton before 7.0 (Volta:
  Triton needs it), where the trace names the device's capability.

A sentence that names ``torch.optim.AdamW`` is said of the optimizer that ran instead: another
``torch.optim`` class by its name; a fused one of another library (``FusedAdam``) already is,
so the sentence goes. A code sketch that loses a line keeps the rest; one left with comments
alone goes.
"""

from __future__ import annotations

import re
from dataclasses import replace

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
# torch.optim classes with fused or foreach implementations (torch 2.4+).
_TORCH_OPTIMIZERS = frozenset(
    ("SGD", "Adam", "AdamW", "Adagrad", "Adamax", "NAdam", "RAdam", "RMSprop", "Adadelta")
)


def fitted(hint: Hint, workload: Workload, capability: tuple[int, int] | None) -> Hint:
    """The hint with only the fix sentences and code lines that fit; itself when all fit.
    ``capability``: the trace's GPU compute capability (None: not known, nothing ruled out by
    it)."""
    fix = tuple(f for s in hint.fix if (f := _said(s, workload, capability)) is not None)
    code = _code(hint.code, workload, capability)
    if fix == hint.fix and code == hint.code:
        return hint
    return replace(hint, fix=fix, code=code)


def _said(
    text: str, workload: Workload, capability: tuple[int, int] | None, *, code: bool = False
) -> str | None:
    """The text as it fits the workload: None when it does not apply at all."""
    training = _TRAINING_CODE if code else _TRAINING_TEXT
    if workload.phase == "inference" and training.search(text):
        return None
    if workload.device == "cpu" and _CUDA.search(text):
        return None
    named = {kind for kind, pattern in _BY_PARALLELISM if pattern.search(text)}
    if named and workload.parallelism and not named & set(workload.parallelism):
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
    if _ADAMW.search(text) and workload.optimizers and "AdamW" not in workload.optimizers:
        ran = workload.optimizers[0]
        if ran not in _TORCH_OPTIMIZERS:
            return None  # FusedAdam, Shampoo: not torch.optim's; the advice is not theirs
        return _ADAMW.sub(f"torch.optim.{ran}", text)
    return text


def _code(code: str, workload: Workload, capability: tuple[int, int] | None) -> str:
    """The sketch less the lines that do not fit; "" when what is left is no code, or when a
    line that opens a block goes (its body would be left without it)."""
    lines = []
    for line in code.splitlines():
        kept = _said(line, workload, capability, code=True)
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
