"""An out-of-memory post-mortem: the capture's code raised torch.OutOfMemoryError (or the CPU
allocator's "can't allocate memory"); what was live where the trace ends, the allocation that
failed, and the fixes ranked by the bytes each would free there.

What each fix frees is counted from the blocks live at the failure (analyses/memory_use.py):
- activation checkpointing of the module holding the most activations: that module's
  activations (it keeps only its inputs; their size is not subtracted, so this is an upper
  bound);
- half the batch or sequence: half the activations and temporaries (both scale with it);
- SDPA instead of a materialised score matrix: the live softmax outputs and the blocks of the
  same size made in the same module (the scores before the softmax, masks, dropout);
- optimizer state sharded over a job's ranks (ZeRO, FSDP): all but 1/world of the state, only
  where the trace is a job of several ranks;
- ``expandable_segments`` for fragmentation, on CUDA only: the memory reserved by PyTorch but
  unallocated, as the error reports it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import msgspec

from gpuprofile.trace.meta import world_size
from gpuprofile.units import format_bytes

if TYPE_CHECKING:
    from gpuprofile.analyses.memory_moments import LiveBlock, MemoryFacts, MemoryMoment

_OOM = re.compile(
    r"OutOfMemoryError|out of memory|can't allocate memory|not enough memory", re.IGNORECASE
)
_UNITS = {"B": 1, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}
_TRIED_CUDA = re.compile(r"Tried to allocate ([\d.]+) ([KMGT]iB|B)", re.IGNORECASE)
_TRIED_CPU = re.compile(r"you tried to allocate (\d+) bytes", re.IGNORECASE)
_FREE = re.compile(r"(?:of which|had) ([\d.]+) ([KMGT]iB|B) (?:is )?free", re.IGNORECASE)
_UNUSED = re.compile(r"([\d.]+) ([KMGT]iB|B) is reserved by PyTorch but unallocated", re.IGNORECASE)
_SCORES = frozenset({"aten::softmax", "aten::_softmax", "aten::_safe_softmax"})


class MemoryFix(msgspec.Struct, frozen=True):
    fix: str  # what to change
    frees_bytes: int  # what it would free at the failure, counted from the live blocks
    why: str  # the blocks counted
    # Whether that covers what the request lacked (MemoryFailure.needed_bytes); None: unknown.
    enough: bool | None = None


class MemoryFailure(msgspec.Struct, frozen=True):
    """The capture's code ran out of memory: what it asked for and what would free it."""

    error: str  # the exception as raised (type: message), untrusted text
    requested_bytes: int | None  # the allocation that failed, as the error names it
    fixes: list[MemoryFix]  # largest first; only those that free something here
    # What the request lacked: its size less the device's free memory, as a CUDA error says
    # it; None where the error does not (the CPU allocator's).
    needed_bytes: int | None = None
    # Where it was asked for (the allocator's [OutOfMemory] event's op): "" when unknown.
    op: str = ""
    module: str = ""
    line: str = ""


_GPU = re.compile(r"\bGPU (\d+)\b")


def failed_device(failure: str | None) -> int | None:
    """The GPU an out-of-memory error names ("GPU 0 has a total capacity ...", "on GPU 1")."""
    found = _GPU.search(failure) if is_out_of_memory(failure) and failure else None
    return int(found.group(1)) if found else None


def is_out_of_memory(failure: str | None) -> bool:
    return failure is not None and _OOM.search(failure) is not None


def requested_bytes(error: str) -> int | None:
    """The failed allocation's size, as torch's CUDA or CPU allocator words it."""
    if cpu := _TRIED_CPU.search(error):
        return int(cpu.group(1))
    return _size(_TRIED_CUDA.search(error))


def memory_failure(
    analysis: MemoryFacts,
    at: MemoryMoment,
    live: list[LiveBlock],
    device: int,
    where: tuple[str, str, str] = ("", "", ""),
) -> MemoryFailure | None:
    """The post-mortem of an out-of-memory failure at ``at`` (the moment the trace ends), whose
    live blocks are ``live``; ``where``: the (op, module, line) that asked."""
    error = analysis.trace.meta.failure
    if error is None or not is_out_of_memory(error):
        return None
    asked = requested_bytes(error)
    free = _size(_FREE.search(error))
    needed = max(asked - free, 0) if asked is not None and free is not None else None
    fixes = [
        msgspec.structs.replace(fix, enough=None if needed is None else fix.frees_bytes >= needed)
        for fix in _fixes(analysis, at, live, device, error)
        if fix.frees_bytes > 0
    ]
    op, module, line = where
    return MemoryFailure(
        error=error,
        requested_bytes=asked,
        fixes=sorted(fixes, key=lambda f: -f.frees_bytes),
        needed_bytes=needed,
        op=op,
        module=module,
        line=line,
    )


def _size(found: re.Match[str] | None) -> int | None:
    return round(float(found.group(1)) * _UNITS[found.group(2).upper()]) if found else None


def _fixes(
    analysis: MemoryFacts, at: MemoryMoment, live: list[LiveBlock], device: int, error: str
) -> list[MemoryFix]:
    fixes = []
    held = _activations_by_subtree(live, analysis.modules.paths)
    phase = analysis.workload.phase
    recorded = _autograd_recorded(analysis)
    # Cut short in a forward that autograd recorded, the trace cannot tell training from an
    # inference that forgot no_grad: both fixes are offered, each for its case.
    unsure = phase == "inference" and recorded and analysis.trace.meta.partial
    if held and (phase in ("training", "mixed") or unsure):
        module, nbytes = max(held.items(), key=lambda kv: (kv[1], kv[0].count(".")))
        fixes.append(MemoryFix(
            ("if this forward trains: " if unsure else "")
            + f"checkpoint {module} (torch.utils.checkpoint; each module like it too): its "
            "activations are recomputed in the backward instead of kept",
            nbytes,
            f"{format_bytes(nbytes)} of activations made in {module} and the modules in it "
            "were live (its inputs stay: an upper bound)",
        ))  # fmt: skip
    if held and phase == "inference" and recorded:
        nbytes = at.by_category["activations"]
        fixes.append(MemoryFix(
            ("if this forward is inference: " if unsure else "")
            + "run it under torch.inference_mode() (or torch.no_grad()): autograd recorded "
            "the forward, keeping its activations for a backward that never comes",
            nbytes,
            f"at most the {format_bytes(nbytes)} of the forward's blocks live",
        ))  # fmt: skip
    scaled = at.by_category["activations"] + at.by_category["temporaries"]
    if scaled:
        fixes.append(MemoryFix(
            "halve the batch (or the sequence length), with gradient accumulation to keep the "
            "effective batch",
            scaled // 2,
            f"half of the {format_bytes(scaled)} of activations and temporaries live",
        ))  # fmt: skip
    scores = _score_bytes(live)
    if scores:
        fixes.append(MemoryFix(
            "use torch.nn.functional.scaled_dot_product_attention instead of softmax(QK^T): "
            "the score matrix is never materialised",
            scores,
            f"{format_bytes(scores)} of softmax outputs and same-sized score blocks were live",
        ))  # fmt: skip
    world = world_size(analysis.trace.meta) or len(analysis.trace.ranks)
    state = at.by_category["optimizer state"]
    if state and world > 1:
        fixes.append(MemoryFix(
            f"shard the optimizer state over the {world} ranks (ZeRO-1: "
            "torch.distributed.optim.ZeroRedundancyOptimizer, or FSDP)",
            state - state // world,
            f"all but 1/{world} of {format_bytes(state)} of optimizer state",
        ))  # fmt: skip
    unused = _size(_UNUSED.search(error))
    if device >= 0 and unused:
        frees = unused
        fixes.append(MemoryFix(
            "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True before torch starts: "
            "reserved blocks too fragmented to hold the request are reused",
            frees,
            f"{format_bytes(frees)} reserved by PyTorch but unallocated, as the error says",
        ))  # fmt: skip
    return fixes


def _activations_by_subtree(live: list[LiveBlock], paths: tuple[str, ...]) -> dict[str, int]:
    """Activation bytes by called module below the root, each with the modules inside it: what
    checkpointing that module would recompute instead of keep."""
    called = set(paths)
    held: dict[str, int] = {}
    for block in live:
        if block.category != "activations":
            continue
        parts = block.module.split(".")
        for depth in range(2, len(parts) + 1):  # not the root: that is the whole model
            path = ".".join(parts[:depth])
            if path in called:
                held[path] = held.get(path, 0) + block.bytes
    return held


def _autograd_recorded(analysis: MemoryFacts) -> bool:
    """Whether the forward's ops made autograd nodes (their sequence numbers)."""
    return bool((analysis.trace.ops["sequence"].to_numpy() >= 0).any())


def _score_bytes(live: list[LiveBlock]) -> int:
    """Softmax outputs, and the blocks of the same size made in the same module."""
    sizes = {(b.module, b.bytes) for b in live if b.op in _SCORES}
    return sum(b.bytes for b in live if (b.module, b.bytes) in sizes)
