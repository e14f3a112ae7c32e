"""Ops far below their roof: memory-bound ones short of DRAM bandwidth, compute-bound ones short
of the compute peak (analyses/roofline.py's op-level points).

The points and the gain each contributes are ``Analysis.far_points`` (analyses/roofline.py
says which count): other findings read there what this one claims.

Silent when the hardware is unknown: without roofs there is no distance to report, and the
report says that the roofs are unknown instead of guessing them.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from gpuprofile.analyses.claims import NOTHING, Claim, ids_claim
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.fixes_by_framework import COMPUTE_BOUND, MEMORY_BOUND, Fix, pick
from gpuprofile.analyses.framework import Framework
from gpuprofile.analyses.hints import MAX_EVIDENCE_EVENTS, Evidence, Hint
from gpuprofile.analyses.lookups import rows_by_id
from gpuprofile.analyses.roofline import FAR_PCT, point_members
from gpuprofile.analyses.thresholds import (
    ACHIEVABLE_ROOF_SHARE,
    worth_reporting,
)
from gpuprofile.hardware.model import Hardware
from gpuprofile.trace.precisions import FLOATING
from gpuprofile.units import (
    format_bytes_per_s,
    format_count,
    format_flops_per_s,
    format_fraction,
    format_percent,
    format_time,
)

if TYPE_CHECKING:
    from gpuprofile.analyses.workload import Workload

ACHIEVABLE = ACHIEVABLE_ROOF_SHARE  # thresholds.py: the unfused-elementwise finding reads it too
TOP_POINTS = 3
MAX_RELATED = 50

# PyTorch fixes, each said only where the points show its cause: autocast where fp32 holds most
# of their time (a bf16 model is past it), channels_last and cudnn.benchmark where they hold a
# convolution, batching where a matrix product is memory-bound (decoding's batch 1 only in
# an inference), max-autotune (and ROCm's TunableOp) where they hold a matrix product.
FUSE = (
    "Fuse chains of elementwise and reduction ops so intermediates stay in registers: "
    "torch.compile(model) (Inductor generates fused Triton kernels)."
)
AUTOCAST = "Move fewer bytes: run in bf16/fp16 under torch.autocast (half the bytes per element)."
COPIES = "Avoid .contiguous()/.clone() copies and transposes between ops."
CHANNELS_LAST = "Keep convolutions' activations in channels_last (no layout copies around them)."
BATCH_INFERENCE = (
    "Raise arithmetic intensity: matrix-vector products (batch 1, decoding) are bandwidth-"
    "bound by nature; batch requests or tokens together so weights are read once per batch."
)
BATCH_TRAINING = (
    "Raise arithmetic intensity: matrix products this thin read their weights for little work; "
    "a larger micro-batch per step does more with each read."
)
FUSED_OPS = "Use fused implementations: fused layer norm, F.scaled_dot_product_attention."
FUSED_OPTIMIZER = "Step the optimizer in one fused kernel: torch.optim.AdamW(..., fused=True)."
CUDNN_BENCHMARK = (
    "Let cuDNN pick faster convolution kernels: torch.backends.cudnn.benchmark = True for "
    "convolutions with fixed shapes."
)
AUTOTUNE = 'Let the compiler pick faster GEMMs: torch.compile(model, mode="max-autotune").'
TUNABLE_OP = (
    "On ROCm, let PyTorch tune each GEMM shape: PYTORCH_TUNABLEOP_ENABLED=1 (TunableOp tries "
    "hipBLASLt and rocBLAS solutions and keeps the fastest)."
)
TILES = (
    "Keep GEMM and convolution dims multiples of 8 (fp16/bf16) or 64 so tensor-core tiles "
    "fill completely; pad vocabulary, hidden size and channels."
)
FILL = (
    "Give each GEMM enough work to fill the GPU: larger batch or sequence per launch, grouped "
    "GEMMs instead of many small ones."
)
FUSE_CODE = "model = torch.compile(model)  # fuses elementwise chains into single kernels\n"
AUTOCAST_CODE = """\
with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
    out = model(batch)
"""
_CONVOLUTION = re.compile(r"conv", re.IGNORECASE)
_MATRIX_PRODUCT = re.compile(
    r"^aten::(?:mm|addmm|bmm|baddbmm|matmul|linear|mv|addmv)$|gemm|gemv|Cijk_", re.IGNORECASE
)
_WIDE = frozenset(("fp32", "fp64"))


def detect(analysis: Analysis) -> list[Hint]:
    hardware = analysis.hardware
    if not hardware.known:
        return []
    far = analysis.far_points
    if far.empty:
        return []
    hints = []
    for _, rows in far.groupby(["rank", "bound"], sort=True):
        rank, bound = int(rows["rank"].iloc[0]), str(rows["bound"].iloc[0])
        hint = _hint(analysis, rank, bound, rows, hardware, analysis.framework)
        if hint is not None:
            hints.append(hint)
    return hints


def _hint(
    analysis: Analysis,
    rank: int,
    bound: str,
    rows: pd.DataFrame,
    hardware: Hardware,
    kind: Framework,
) -> Hint | None:
    gain = int(rows["gain_ns"].sum())
    wall = analysis.wall_ns(rank)
    if not worth_reporting(f"{bound}-bound", gain, wall):
        return None
    rows = rows[rows["gain_ns"] > 0]
    time_ns = int(rows["known_time_ns"].sum())
    weights = rows["known_time_ns"].to_numpy(np.float64)
    mean_pct = float(np.average(rows["pct_of_roof"].to_numpy(np.float64), weights=weights))
    memory = bound == "memory"
    if memory:
        roof_text = f"DRAM bandwidth ({format_bytes_per_s(hardware.dram_bytes_per_s or 0)})"
    else:
        roofs = ", ".join(
            f"{r} {format_flops_per_s(hardware.peak_flops[r])}"
            for r in sorted(set(rows["roof"].dropna()))
            if r in hardware.peak_flops
        )
        roof_text = f"the compute peak ({roofs})"
    head = rows.head(TOP_POINTS)
    top = [
        dict(zip(_DESCRIBED, r, strict=True)) for r in zip(*(head[c].tolist() for c in _DESCRIBED))
    ]
    heaviest = "; ".join(_describe(r, memory) for r in top)
    return Hint(
        kind="memory-bound" if memory else "compute-bound",
        subject="ops far below their roof",
        title=(
            f"{format_count(len(rows), f'{bound}-bound op')} at "
            f"{format_percent(mean_pct, 0)} of "
            f"{'DRAM bandwidth' if memory else 'compute peak'}"
        ),
        basis_ns=wall,
        gain_ns=gain,
        claim=_claim(analysis, rank, set(rows["key"])),
        gain_method=(
            f"Per op (name and shapes) at or below {format_percent(FAR_PCT, 0)} of its roof, its "
            f"time minus the time it would take at {format_fraction(ACHIEVABLE, 0)} of the roof "
            f"on {hardware.name} ({hardware.source} figures): the part a tuned kernel could "
            "reach."
        ),
        confidence="medium" if hardware.source in ("datasheet", "calibrated", "user") else "low",
        explanation=(
            f"{format_count(len(rows), 'op')} (by name and shapes; "
            f"{int(rows['count'].sum())} calls, {format_time(time_ns)}) ran "
            f"{bound}-bound at a time-weighted {format_percent(mean_pct, 0)} of {roof_text}. "
            f"Heaviest: {heaviest}."
        ),
        numbers={
            "points": len(rows),
            "calls": int(rows["count"].sum()),
            "time_ns": time_ns,
            "time_at_roof_ns": int(rows["time_at_roof_ns"].sum()),
            "mean_pct_of_roof": round(mean_pct, 1),
            "roof": "dram" if memory else ",".join(sorted(set(rows["roof"].dropna()))),
        },
        **pick(
            kind,
            _pytorch_fix(rows, memory, analysis.workload),
            MEMORY_BOUND if memory else COMPUTE_BOUND,
        )._asdict(),
        evidence=_evidence(analysis, rank, rows),
        rank=rank,
        related=tuple(str(k) for k in rows["key"].head(MAX_RELATED)),
    )


def _pytorch_fix(rows: pd.DataFrame, memory: bool, workload: Workload) -> Fix:
    """The PyTorch fixes whose cause the points show (see FUSE above)."""
    names = rows["name"].astype(str)
    convolution = bool(names.str.contains(_CONVOLUTION).any())
    matrix_product = bool(names.str.contains(_MATRIX_PRODUCT).any())
    if not memory:
        fix = (
            *((CUDNN_BENCHMARK,) if convolution else ()),
            *((TUNABLE_OP,) if matrix_product and workload.device == "rocm" else ()),
            *((AUTOTUNE,) if matrix_product else ()),
            TILES,
            FILL,
        )
        code = ("torch.backends.cudnn.benchmark = True\n" if convolution else "") + (
            'model = torch.compile(model, mode="max-autotune")\n' if matrix_product else ""
        )
        return Fix(fix, code)
    time = rows["known_time_ns"].to_numpy(np.float64)
    known = rows["precision"].astype(str).isin(FLOATING).to_numpy()
    wide = rows["precision"].astype(str).isin(_WIDE).to_numpy()
    # Unknown precisions say nothing either way: autocast is advised unless 16-bit and narrower
    # dtypes hold most of the time whose precision is known.
    autocast = not known.any() or time[wide].sum() * 2 >= time[known].sum()
    batch = (
        ()
        if not matrix_product
        else ((BATCH_TRAINING,) if workload.phase == "training" else (BATCH_INFERENCE,))
    )
    fix = (
        FUSE,
        *((AUTOCAST,) if autocast else ()),
        *((CHANNELS_LAST,) if convolution else ()),
        COPIES,
        *batch,
        FUSED_OPS,
        FUSED_OPTIMIZER,
    )
    return Fix(fix, FUSE_CODE + (AUTOCAST_CODE if autocast else ""))


# The points' columns a heaviest point is described by.
_DESCRIBED = (
    "name", "shapes", "count", "known_time_ns", "achieved_bytes_per_s", "achieved_flops_per_s",
    "pct_of_roof", "time_at_roof_ns",
)  # fmt: skip


def _describe(row: dict[str, Any], memory: bool) -> str:
    rate = (
        f"{format_bytes_per_s(row['achieved_bytes_per_s'])}"
        if memory
        else f"{format_flops_per_s(row['achieved_flops_per_s'])}"
    )
    return (
        f"{row['name']} {row['shapes']} x{row['count']}: {format_time(row['known_time_ns'])} at "
        f"{rate} ({format_percent(row['pct_of_roof'], 0)} of roof; "
        f"{format_time(row['time_at_roof_ns'])} at the roof)"
    )


def _evidence(analysis: Analysis, rank: int, rows: pd.DataFrame) -> tuple[Evidence, ...]:
    ids: list[int] = []
    for event_ids in rows["event_ids"]:
        ids.extend(int(i) for i in event_ids[: MAX_EVIDENCE_EVENTS - len(ids)])
        if len(ids) >= MAX_EVIDENCE_EVENTS:
            break
    ops = analysis.trace.ops
    at = rows_by_id(analysis, "ops", np.array(ids, np.int64))
    start = ops["start_ns"].to_numpy(np.int64)[at]
    windows = tuple(zip(start.tolist(), (start + ops["dur_ns"].to_numpy()[at]).tolist()))
    return (
        Evidence("ops", rank, tuple(ids), windows, "ops of the farthest points, heaviest first"),
    )


def _claim(analysis: Analysis, rank: int, keys: set[str]) -> Claim:
    """The time of every member of the points (the points keep only their heaviest ids).

    One claim per table of all its points' members: a claim is a union of blocks, and each
    op claim walks the whole op tree, so one per point cost a walk per point."""
    ids: dict[str, list[int]] = {}
    for found in point_members(analysis.roofline_members, keys).values():
        ids.setdefault(found.table, []).extend(found.ids.tolist())
    claim = NOTHING
    for table, members in ids.items():
        claim = claim.union(ids_claim(analysis, rank, table, members))
    return claim
