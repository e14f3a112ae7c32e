"""Matmuls and convolutions that miss the tensor cores: fp32 math, or dims the units cannot tile.

Two findings per GPU rank, from analyses/flops.py's per-op facts (ops counted once, at the
outermost op that has FLOPs) and the GPU time of the kernels each op owns:

1. fp32 matmul-like ops whose ``tensor_core_roof`` is "": under PyTorch's defaults they run on
   the fp32 vector units (torch.backends.cuda.matmul.allow_tf32 is False; fp32 convolutions
   already use TF32 through cuDNN and are not listed). Gain on known hardware: per op,
   time at the fp32 roof minus time at the tensor-core roof,
   ``max(F / peak_fp32, B / dram) - max(F / peak_tc, B_tc / dram)``, at most the op's time;
   peak_tc is TF32 where the device has it (no change of storage dtype: B_tc = B), else
   bf16/fp16 (autocast halves the bytes). On unknown hardware: half the ops' time, because
   every tensor-core generation runs its half-precision matmuls at 4x or more of its fp32
   vector rate (V100 125 vs 15.7 TFLOP/s, A100 312 vs 19.5, H100 SXM 989 vs 67; vendor
   datasheets) and 2x leaves room for memory-bound shapes and casts. Silent where the trace
   says the GPU has no tensor cores (CUDA compute capability below 7.0).
2. fp16/bf16/fp8/int8 matmul-like ops whose GEMM dims are not multiples of 16 bytes' worth of
   elements (8 for fp16/bf16, 16 for fp8/int8): cuBLAS/cuDNN then fall back to narrow-
   alignment tensor-core kernels or none (NVIDIA, Matrix Multiplication Background User's
   Guide, "Tensor Core Requirements"). Gain: a quarter of those ops' time, a documented guess
   (confidence low): the guide's measurements show misaligned sizes several times slower, but
   how much depends on the shape and library version.

3. fp32 GEMM/convolution kernels known by name alone (patterns.FP32_SIMT_KERNEL: cuBLAS
   volta_/ampere_sgemm_*, cuDNN *_scudnn_*, implicit_convolve_sgemm<float>, winograd<float>,
   CUTLASS simt sgemm, ...), for traces without shapes (nsys, ncu, Kineto without
   record_shapes) and for fp32 convolutions, which path 1 leaves to cuDNN. Only on hardware
   whose roofs include a tensor-core rate (TF32, else bf16, else fp16: V100 gets autocast to
   fp16). Gain: kernel time x (1 - fp32 rate / tensor-core rate), i.e. the kernels run at the
   fp32 roof and would run at the tensor-core roof; confidence low, the names being the only
   evidence. Kernels owned by ops path 1 flagged are left to it (never counted twice).

CPU-only ranks are left alone: a CPU has no tensor cores to miss.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np
import pandas as pd

from gpuprofile.analyses import recorded
from gpuprofile.analyses.claims import frame_claim, op_ids_claim
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.fixes import (
    ALIGN_CODE,
    ALIGN_FIX,
    CONV_TF32_FIX,
    FP16_CODE,
    FP16_FIX,
    FP32_CODE,
    FP32_FIX,
)
from gpuprofile.analyses.fixes_by_framework import (
    ALIGN,
    CONV_TF32,
    FP16,
    FP32,
    Fix,
    pick,
    pick_text,
)
from gpuprofile.analyses.flops import TF32_KERNEL
from gpuprofile.analyses.framework import Framework
from gpuprofile.analyses.hints import (
    MAX_EVIDENCE_EVENTS,
    Evidence,
    Hint,
    heaviest_events,
    largest,
)
from gpuprofile.analyses.lookups import rows_by_id
from gpuprofile.analyses.names import code_texts, codes, matches, strings
from gpuprofile.analyses.patterns import FP32_SIMT_KERNEL, TENSOR_CORE_KERNEL
from gpuprofile.analyses.thresholds import worth_reporting
from gpuprofile.hardware.model import Hardware
from gpuprofile.hardware.properties import trace_devices
from gpuprofile.trace.codes import sums_by_key
from gpuprofile.trace.model import Trace
from gpuprofile.trace.precisions import LOW_PRECISIONS
from gpuprofile.units import format_count, format_flops_per_s, format_fraction, format_time

UNKNOWN_HARDWARE_SPEEDUP = 2.0
MISALIGNED_SHARE = 0.25
TOP_SHAPES = 3
TOP_KERNELS = 3
# Tensor-core precisions a fp32 kernel can move to, most alike to fp32 first: TF32 keeps the
# storage dtype (one switch), bf16/fp16 need autocast.
TENSOR_CORE_TARGETS = ("tf32", "bf16", "fp16")


TF32_DEFAULT_NOTE = " (torch.backends.cuda.matmul.allow_tf32 is off by default)"
TF32_ON_FIX = (
    "TF32 is on already (see the explanation): these matmuls stayed on the vector units by "
    "their shapes. Pad the dims they multiply over (K and N) to multiples of 4 for TF32, 8 or "
    "more is better, and batch many small matmuls into one (torch.bmm, grouped GEMMs).",
    "Or run them in bf16/fp16 under torch.autocast, where the tensor-core kernels take most "
    "shapes.",
)


def detect(analysis: Analysis) -> list[Hint]:
    trace = analysis.trace
    if trace.kernels.empty:
        return []
    kernel_costs = analysis.kernel_costs if not trace.ops.empty else None
    hints = []
    # Per op owning kernels, their GPU time and whether it ran on tensor cores: the same for
    # every rank, so found once.
    by_op = None
    if kernel_costs is not None:
        by_op = _by_owner(kernel_costs)
    for rank in trace.ranks:
        if not len(analysis.rank_rows("kernels", rank)) or not _has_tensor_cores(trace, rank):
            continue
        wall = analysis.wall_ns(rank)
        judged = np.empty(0, dtype=np.int64)
        if kernel_costs is not None and by_op is not None:
            fp32, half = _shape_findings(analysis, rank, *by_op)
            judged = fp32["op_id"].to_numpy(np.int64)
            for hint, ops in (
                (_fp32_hint(analysis, rank, fp32, kernel_costs, wall), fp32),
                (_alignment_hint(analysis, rank, half, kernel_costs, wall), half),
            ):
                if hint is not None:
                    hints.append(replace(hint, related=_point_keys(analysis, rank, ops)))
        named = _named_fp32_hint(analysis, rank, kernel_costs, judged, wall)
        if named is not None:
            hints.append(named)
    return hints


def _shape_findings(
    analysis: Analysis, rank: int, gpu_ns: pd.Series, on_tensor_cores: pd.Series
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The rank's fp32 matmul-like ops off the tensor cores, and its misaligned half-precision
    ones, judged from recorded shapes and dtypes, each op with its GPU time (time_ns).

    Parameters:
        gpu_ns: per op id owning kernels, their summed duration.
        on_tensor_cores: per such op id, whether most of that time ran on tensor cores."""
    costs = analysis.op_costs
    mine = costs[(costs["rank"] == rank) & costs["counted"] & costs["matmul_like"]]
    mine = mine.assign(time_ns=gpu_ns.reindex(mine["op_id"]).fillna(0).to_numpy())
    mine = mine[mine["time_ns"] > 0]
    # allow_tf32 was on by default before torch 1.12: trust the kernels over the default.
    tc = on_tensor_cores.reindex(mine["op_id"]).fillna(False).to_numpy(bool)
    fp32 = mine[(mine["dtype"] == "fp32") & (mine["tensor_core_roof"] == "") & ~tc]
    half = mine[mine["dtype"].isin(LOW_PRECISIONS) & ~mine["dims_aligned"]]
    return fp32, half


def _named_fp32_hint(
    analysis: Analysis,
    rank: int,
    kernel_costs: pd.DataFrame | None,
    judged_ops: np.ndarray,
    wall: int,
) -> Hint | None:
    """fp32 SIMT GEMM/convolution kernels found by name alone (traces without shapes: nsys,
    ncu, Kineto without record_shapes; fp32 convolutions, which the shape path leaves to
    cuDNN). Kernels of ops the shape path flagged are its own: never counted twice."""
    trace = analysis.trace
    hardware, kind = analysis.hardware, analysis.framework
    peaks: Mapping[str, float] = hardware.peak_flops
    fp32_rate = peaks.get("fp32")
    target = next((p for p in TENSOR_CORE_TARGETS if peaks.get(p)), None)
    if not fp32_rate or target is None:
        return None  # no tensor-core roof: nothing to move to, or nothing known of it
    names = trace.kernels["name"]
    simt = matches(names, FP32_SIMT_KERNEL) & ~matches(names, TENSOR_CORE_KERNEL)
    on_rank = np.zeros(len(simt), bool)
    on_rank[analysis.rank_rows("kernels", rank)] = True
    simt &= on_rank
    if kernel_costs is not None and len(judged_ops):
        simt &= ~np.isin(kernel_costs["cost_op_id"].to_numpy(np.int64), judged_ops)
    kernels = trace.kernels[simt]
    if kernels.empty:
        return None
    tc_rate = float(peaks[target])
    time_ns = int(kernels["dur_ns"].sum())
    gain = int(time_ns * max(1.0 - fp32_rate / tc_rate, 0.0))
    if not worth_reporting("tensor-cores-unused", gain, wall):
        return None
    # Labelled once per distinct name: thousands of kernels run a few dozen names.
    used, at = np.unique(codes(names)[simt], return_inverse=True)
    texts = code_texts(names)  # code -1, a missing name, reads NaN: "nan", as str() spells it
    short = np.array([analysis.kernel_label(str(texts[c])) for c in used.tolist()], object)[at]
    top = (
        pd.DataFrame({"name": short, "dur": kernels["dur_ns"].to_numpy()})
        .groupby("name")["dur"]
        .agg(["count", "sum"])
        .sort_values("sum", ascending=False)
        .head(TOP_KERNELS)
    )
    heaviest = "; ".join(
        f"{name} x{int(n)}, {format_time(float(ns))}"
        for name, n, ns in zip(top.index, top["count"], top["sum"])
    )
    cast = pick_text(kind, "autocast", {"cuda": "casting"})
    switch = f"{cast} to {target}" if target != "tf32" else "TF32 (same storage, one switch)"
    tf32_kernels = _tf32_kernels(analysis, rank) if target == "tf32" else 0
    if tf32_kernels:
        switch = (
            f"TF32 is on already ({format_count(tf32_kernels, 'kernel')} ran fp32 matmuls on "
            "TF32 tensor cores), so these were left on the vector units by their shapes: "
            "padding their dims or bf16/fp16"
        )
    rates = f"{format_flops_per_s(tc_rate)} against {format_flops_per_s(fp32_rate)} fp32"
    return Hint(
        kind="tensor-cores-unused",
        subject="fp32 kernels by name",
        title=f"{len(kernels)} fp32 GEMM/convolution kernels run without tensor cores",
        basis_ns=wall,
        gain_ns=gain,
        claim=frame_claim(kernels),
        gain_method=(
            f"Kernel time x (1 - fp32 rate / {target.upper()} tensor-core rate) on "
            f"{hardware.name} ({rates}), for kernels found by name alone: it assumes they run "
            "at the fp32 roof, so memory-bound shapes gain less."
        ),
        confidence="low",
        explanation=(
            f"{len(kernels)} kernels whose names mark fp32 GEMMs or convolutions on the vector "
            f"(SIMT) units ran for {format_time(time_ns)} of GPU time. {hardware.name} has "
            f"{target.upper()} tensor cores at {rates}, and {switch} would move this work "
            "there. The trace records no shapes or dtypes for these kernels' ops, so their "
            f"names are the only evidence. Heaviest: {heaviest}."
        ),
        numbers={
            "kernels": len(kernels),
            "time_ns": time_ns,
            "tensor_core_precision": target,
            "fp32_flops_per_s": float(fp32_rate),
            "tensor_core_flops_per_s": tc_rate,
            "saved_ns": gain,
        },
        fix=TF32_ON_FIX
        if tf32_kernels and kind == "pytorch"
        else (*_precision_fix(kind, target).fix, pick_text(kind, CONV_TF32_FIX, CONV_TF32)),
        code="" if tf32_kernels and kind == "pytorch" else _precision_fix(kind, target).code,
        evidence=(
            heaviest_events(
                kernels, "kernels", rank, "fp32 SIMT GEMM/convolution kernels, longest first"
            ),
        ),
        rank=rank,
    )


def _point_keys(analysis: Analysis, rank: int, ops: pd.DataFrame) -> tuple[str, ...]:
    """Keys of the roofline's op-level points that these ops belong to, heaviest first."""
    points = analysis.roofline.points
    points = points[(points["level"] == "op") & (points["rank"] == rank)]
    ids = set(ops["op_id"].tolist())
    hit = [bool(ids.intersection(e)) for e in points["event_ids"]]
    chosen = points[np.array(hit, dtype=bool)] if len(points) else points
    return tuple(str(k) for k in chosen.sort_values("time_ns", ascending=False)["key"].head(50))


def tensor_core_gain(
    flops: np.ndarray, nbytes: np.ndarray, time_ns: np.ndarray, hardware: Hardware
) -> tuple[np.ndarray, str]:
    """Per op, the ns a tensor-core precision saves over fp32, and that precision.

    Known hardware: time at the fp32 roof minus time at the tensor-core roof (bytes halved
    for bf16/fp16, unchanged for TF32), within the op's time. Otherwise the op's time times
    (1 - 1/UNKNOWN_HARDWARE_SPEEDUP).
    """
    peaks: Mapping[str, float] = hardware.peak_flops
    fp32 = peaks.get("fp32")
    target = next((p for p in TENSOR_CORE_TARGETS if peaks.get(p)), None)
    if not hardware.known or not fp32 or target is None:
        return time_ns * (1.0 - 1.0 / UNKNOWN_HARDWARE_SPEEDUP), ""
    dram = hardware.dram_bytes_per_s or np.inf
    flops = np.nan_to_num(flops)
    nbytes = np.nan_to_num(nbytes)
    at_fp32 = np.maximum(flops / fp32, nbytes / dram) * 1e9
    scale = 1.0 if target == "tf32" else 0.5
    at_tc = np.maximum(flops / peaks[target], nbytes * scale / dram) * 1e9
    return np.clip(at_fp32 - at_tc, 0, time_ns), target


def _fp32_hint(
    analysis: Analysis,
    rank: int,
    ops: pd.DataFrame,
    kernel_costs: pd.DataFrame,
    wall: int,
) -> Hint | None:
    if ops.empty:
        return None
    hardware, kind = analysis.hardware, analysis.framework
    saved, target = tensor_core_gain(
        ops["flops"].to_numpy(np.float64),
        ops["bytes"].to_numpy(np.float64),
        ops["time_ns"].to_numpy(np.float64),
        hardware,
    )
    ops = ops.assign(saved_ns=saved)
    gain = int(ops["saved_ns"].sum())
    if not worth_reporting("tensor-cores-unused", gain, wall):
        return None
    time_ns = int(ops["time_ns"].sum())
    flops = float(np.nansum(ops["flops"].to_numpy(np.float64)))
    achieved = flops / time_ns * 1e9 if time_ns else 0.0
    shapes = _top_shapes(ops)
    tf32_kernels = _tf32_kernels(analysis, rank) if target in ("", None, "tf32") else 0
    if target:
        ratio = hardware.peak_flops[target] / hardware.peak_flops["fp32"]
        method = (
            f"Per op, time at the fp32 roof minus time at the {target.upper()} tensor-core roof "
            f"of {hardware.name} ({ratio:.1f}x the fp32 FLOP rate), at most the op's GPU time."
        )
        roof_text = (
            f" On {hardware.name} the fp32 roof is "
            f"{format_flops_per_s(hardware.peak_flops['fp32'])}, {target.upper()} tensor cores "
            f"{format_flops_per_s(hardware.peak_flops[target])}."
        )
        confidence = "medium"
    else:
        method = (
            "Hardware roofs unknown: half of these ops' GPU time (every tensor-core GPU runs "
            "half-precision matmuls at 4x or more of its fp32 rate; 2x is the conservative "
            "assumption)."
        )
        roof_text = " The hardware's roofs are unknown, so the gain assumes a 2x speed-up."
        confidence = "low"
    return Hint(
        kind="tensor-cores-unused",
        subject="fp32 matmuls",
        title=f"{len(ops)} fp32 matmuls run without tensor cores",
        basis_ns=wall,
        gain_ns=gain,
        claim=op_ids_claim(analysis, rank, ops["op_id"].tolist()),
        gain_method=method,
        confidence=confidence,
        explanation=(
            f"{len(ops)} matmul/attention ops ran in fp32 on the vector units for "
            f"{format_time(time_ns)} of GPU time at {format_flops_per_s(achieved)}"
            + (
                f". TF32 is on: {format_count(tf32_kernels, 'kernel')} on this rank ran fp32 "
                "matmuls on TF32 tensor cores, so these were left on the vector units by their "
                "shapes"
                if tf32_kernels
                else pick_text(kind, TF32_DEFAULT_NOTE, {"cuda": ""})
            )
            + f".{roof_text} Heaviest: {shapes}."
        ),
        numbers={
            "ops": len(ops),
            "time_ns": time_ns,
            "flops": flops,
            "achieved_flops_per_s": achieved,
            "tensor_core_precision": target or "unknown",
            "saved_ns": gain,
        },
        **(
            Fix(TF32_ON_FIX, "")
            if tf32_kernels and kind == "pytorch"
            else _precision_fix(kind, target)
        )._asdict(),
        evidence=_evidence(rank, ops, kernel_costs, analysis),
        rank=rank,
    )


def _tf32_kernels(analysis: Analysis, rank: int) -> int:
    """How many of the rank's kernel launches ran fp32 matmuls on TF32 tensor cores."""
    return int(matches(analysis.rank_table("kernels", rank)["name"], TF32_KERNEL).sum())


def _alignment_hint(
    analysis: Analysis,
    rank: int,
    ops: pd.DataFrame,
    kernel_costs: pd.DataFrame,
    wall: int,
) -> Hint | None:
    if ops.empty:
        return None
    kind = analysis.framework
    time_ns = int(ops["time_ns"].sum())
    gain = int(MISALIGNED_SHARE * time_ns)
    if not worth_reporting("tensor-cores-unused", gain, wall):
        return None
    ops = ops.assign(saved_ns=ops["time_ns"] * MISALIGNED_SHARE)
    dtypes = ", ".join(sorted(set(ops["dtype"])))
    return Hint(
        kind="tensor-cores-unused",
        subject="dims not multiples of 8",
        title=f"{len(ops)} {dtypes} matmuls with dims not multiples of 8",
        basis_ns=wall,
        gain_ns=gain,
        claim=op_ids_claim(analysis, rank, ops["op_id"].tolist()),
        gain_method=(
            f"A quarter of these ops' GPU time ({format_fraction(MISALIGNED_SHARE, 0)}): "
            "misaligned GEMMs fall back to narrow-alignment kernels; the loss depends on shape "
            "and library."
        ),
        confidence="low",
        explanation=(
            f"{len(ops)} {dtypes} matmul/conv ops ({format_time(time_ns)} of GPU time) "
            "multiply over dims that are not multiples of 8 elements (16 for fp8/int8), so "
            f"tensor cores cannot tile them at full speed. Heaviest: {_top_shapes(ops)}."
        ),
        numbers={
            "ops": len(ops),
            "time_ns": time_ns,
            "saved_ns": gain,
            "misaligned_shapes": _top_shapes(ops, with_time=False),
        },
        **pick(kind, Fix(ALIGN_FIX, ALIGN_CODE), ALIGN)._asdict(),
        evidence=_evidence(rank, ops, kernel_costs, analysis),
        rank=rank,
    )


def _precision_fix(kind: Framework, target: str | None) -> Fix:
    if target == "fp16":
        return pick(kind, Fix(FP16_FIX, FP16_CODE), FP16)
    return pick(kind, Fix(FP32_FIX, FP32_CODE), FP32)


def _by_owner(kernel_costs: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Per op id that owns kernels (cost_op_id, ascending): their summed duration, and whether
    most of it ran in tensor-core kernels."""
    owner = kernel_costs["cost_op_id"].to_numpy()
    dur = kernel_costs["dur_ns"].to_numpy(np.float64)
    owners, total = sums_by_key(owner, dur)
    _, tc = sums_by_key(owner, np.where(matches(kernel_costs["name"], TENSOR_CORE_KERNEL), dur, 0))
    share = np.where(total > 0, tc / np.where(total > 0, total, 1.0), 0.0)
    index = pd.Index(owners, name="cost_op_id")
    return pd.Series(total.astype(np.int64), index=index), pd.Series(share >= 0.5, index=index)


def _top_shapes(ops: pd.DataFrame, with_time: bool = True) -> str:
    names = strings(ops["name"])
    shapes = np.array(["?" if pd.isna(s) else str(s) for s in ops["shapes"].tolist()], object)
    # Group on integer codes, then order the groups by (name, shapes) as a sorted groupby on
    # the two texts would: the sums and the sort below then see what they always saw.
    name_code = pd.factorize(names)[0]
    shape_code, shape_uniques = pd.factorize(shapes)
    group = pd.factorize(name_code * (len(shape_uniques) + 1) + shape_code)[0]
    first = np.unique(group, return_index=True)[1]
    time_ns = pd.Series(ops["time_ns"].to_numpy()).groupby(group, sort=False).sum().to_numpy()
    count = np.bincount(group, minlength=len(first))
    labels = [(str(names[r]), str(shapes[r])) for r in first.tolist()]
    by_text = sorted(range(len(labels)), key=labels.__getitem__)
    grouped = (
        pd.DataFrame(
            {
                "name": [labels[g][0] for g in by_text],
                "shapes": [labels[g][1] for g in by_text],
                "count": count[by_text],
                "time_ns": time_ns[by_text],
            }
        )
        .sort_values("time_ns", ascending=False)
        .head(TOP_SHAPES)
    )
    parts = []
    rows = zip(grouped["name"], grouped["shapes"], grouped["count"], grouped["time_ns"])
    for name, shape, n, ns in rows:
        text = f"{name} {_tensor_shapes(str(shape))} x{int(n)}"
        parts.append(f"{text}, {format_time(float(ns))}" if with_time else text)
    return "; ".join(parts)


def _tensor_shapes(raw: str) -> str:
    """The tensor inputs of an "Input Dims" text: [[2, 3], [], [3, 4]] -> [2, 3] x [3, 4]."""
    dims = recorded.decoded_list(raw)
    if dims is None:
        return raw
    tensors = [list(t) for t in map(recorded.tensor_shape, dims) if t]
    return " x ".join(str(t) for t in tensors) if tensors else raw


def _has_tensor_cores(trace: Trace, rank: int) -> bool:
    """False only when the trace says the GPU predates tensor cores (CUDA CC < 7.0)."""
    devices = trace_devices(trace, rank).devices  # checked: a capability is "major.minor"
    capabilities = [d["compute_capability"] for d in devices if d.get("compute_capability")]
    names = " ".join(d["name"] for d in devices)
    if not capabilities or "AMD" in names or "Instinct" in names:
        return True
    return any(int(c.split(".")[0]) >= 7 for c in capabilities)


def _evidence(
    rank: int, ops: pd.DataFrame, kernel_costs: pd.DataFrame, analysis: Analysis
) -> tuple[Evidence, ...]:
    trace = analysis.trace
    # nlargest's picks, on the columns read (hints.largest): kernel_costs is wide and long.
    ids = ops["op_id"].to_numpy()[largest(ops["time_ns"].to_numpy(), MAX_EVIDENCE_EVENTS)]
    rows = rows_by_id(analysis, "ops", ids)
    start = trace.ops["start_ns"].to_numpy(np.int64)[rows]
    windows = tuple(zip(start.tolist(), (start + trace.ops["dur_ns"].to_numpy()[rows]).tolist()))
    theirs = np.flatnonzero(np.isin(kernel_costs["cost_op_id"].to_numpy(), ids))
    theirs = theirs[largest(kernel_costs["dur_ns"].to_numpy()[theirs], MAX_EVIDENCE_EVENTS)]
    kernel_ids = kernel_costs["kernel_id"].to_numpy()[theirs]
    krows = rows_by_id(analysis, "kernels", kernel_ids)
    kstart = trace.kernels["start_ns"].to_numpy(np.int64)[krows]
    kdur = trace.kernels["dur_ns"].to_numpy()[krows]
    return (
        Evidence("ops", rank, tuple(int(i) for i in ids), windows, "ops, most GPU time first"),
        Evidence(
            "kernels",
            rank,
            tuple(int(i) for i in kernel_ids),
            tuple(zip(kstart.tolist(), (kstart + kdur).tolist())),
            "their kernels, longest first",
        ),
    )
