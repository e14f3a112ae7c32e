"""A hand-written norm or activation: a chain of elementwise ops and row reductions in one
module call (``x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w``), each reading
its input from memory and writing its output back (analyses/code_patterns.py).

One fused op (F.rms_norm, F.layer_norm, F.gelu, F.silu) or a torch.compile kernel reads the
input once and writes the output once, forward and backward. Gain (medium: measured time and a
model of the ops a fused kernel removes): the chain's time, GPU kernel time on a GPU rank or
host time on a CPU-only one, forward and its backward engine ops, less the costliest op each
way (the fused op is taken to cost about as much as that one).

Overlaps: a chain inside a Python loop's window is left out of the python-loop finding's gain.
The memory-bound finding claims an op's time beyond what its bytes take at the achievable
share of DRAM bandwidth (thresholds.ACHIEVABLE_ROOF_SHARE); where the roofs are known, each op
counts here only up to that time, so the two findings never claim the same time.
"""

from __future__ import annotations

import numpy as np

from gpuprofile.analyses.code_patterns import Occurrence, groups, line_text, where
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.hints import Hint, heaviest_events
from gpuprofile.analyses.thresholds import worth_reporting
from gpuprofile.units import format_time

# What the chain computes, from the ops it holds (checked in order), and its replacement.
SHAPES = (
    (
        "RMSNorm",
        {"aten::pow", "aten::mean", "aten::rsqrt"},
        "Use F.rms_norm(x, (dim,), weight, eps) or nn.RMSNorm(dim, eps): one op each way.",
        "y = F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)  # or nn.RMSNorm(dim)\n",
    ),
    (
        "LayerNorm",
        {"aten::mean", "aten::sub"},
        "Use F.layer_norm(x, (dim,), weight, bias, eps) or nn.LayerNorm(dim).",
        "y = F.layer_norm(x, (x.shape[-1],), self.weight, self.bias, self.eps)\n",
    ),
    (
        "GELU",
        {"aten::tanh"},
        'Use F.gelu(x, approximate="tanh") (or F.gelu(x) for the erf form).',
        'y = F.gelu(x, approximate="tanh")  # the tanh approximation, as written by hand\n',
    ),
    (
        "GELU",
        {"aten::erf"},
        "Use F.gelu(x): the erf form, one op.",
        "y = F.gelu(x)\n",
    ),
    (
        "SiLU",
        {"aten::sigmoid", "aten::mul"},
        "Use F.silu(x) (x * sigmoid(x) in one op).",
        "y = F.silu(x)\n",
    ),
)
COMPILE_FIX = (
    "Or compile the module: torch.compile(module) fuses the chain into one generated kernel "
    "per direction."
)
COMPILE_CODE = "module = torch.compile(module)  # one fused kernel for the chain\n"


def detect(analysis: Analysis) -> list[Hint]:
    hints = []
    for subject, found in groups(analysis.modules, analysis.code_patterns.chains):
        rank = found[0].rank
        gain = sum(o.removable_ns for o in found)
        wall = analysis.wall_ns(rank)
        if worth_reporting("unfused-elementwise", gain, wall):
            hints.append(_hint(analysis, subject, found, gain, wall))
    return hints


def shape_of(names: tuple[str, ...]) -> tuple[str, tuple[str, ...], str]:
    """(what the chain computes, the fix, the code) from its op names."""
    bare = {n.rstrip("_") for n in names}
    for label, needs, fix, code in SHAPES:
        if needs <= bare:
            return label, (fix, COMPILE_FIX), code
    return "elementwise chain", (COMPILE_FIX,), COMPILE_CODE


def _backward_text(found: list[Occurrence]) -> str:
    back = sum(o.backward_ns for o in found)
    return f", {format_time(back)} of it in their backward" if back else ""


def _hint(analysis: Analysis, subject: str, found: list[Occurrence], gain: int, wall: int) -> Hint:
    rank = found[0].rank
    names = found[0].names
    label, fix, code = shape_of(names)
    modules = where(analysis.modules, found)
    total = sum(o.time_ns for o in found)
    device = "GPU kernel" if found[0].on_gpu else "host"
    rows = analysis.trace.ops.iloc[np.concatenate([o.rows for o in found])]
    written = "Hand-written " + label if label != "elementwise chain" else "Elementwise chain"
    return Hint(
        kind="unfused-elementwise",
        subject=subject,
        title=f"{written} in {modules}: {len(names)} ops (x{len(found)})",
        basis_ns=wall,
        gain_ns=int(gain),
        gain_method=(
            f"The chain's {device} time, forward ops and their backward engine ops, less the "
            "costliest op each way: a fused op runs the chain as one, taken to cost about as "
            "much as its costliest op. Where the roofs are known, each op counts only up to "
            "the time its bytes take at the achievable share of DRAM bandwidth (the "
            "memory-bound finding claims the rest)."
        ),
        confidence="medium",
        explanation=(
            f"In {modules}{line_text(found)}, {len(names)} elementwise ops in a row "
            f"({' -> '.join(n.removeprefix('aten::') for n in names)}) each read the tensor "
            "from memory and wrote it back, where one fused op reads it once. "
            f"{len(found)} such chain{'s' if len(found) > 1 else ''} took "
            f"{format_time(total)} of {device} time{_backward_text(found)}."
        ),
        numbers={"ops": len(names), "calls": len(found), "chain_ns": int(total)},
        fix=fix,
        code=code,
        evidence=(heaviest_events(rows, "ops", rank, "the chain's ops, heaviest first"),),
        rank=rank,
    )
