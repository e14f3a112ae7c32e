"""The roofline: each op (by name and input shapes) and each kernel (by name) against the roofs.

Points come at two levels (column ``level``), one row per rank:
- "op": the ops whose FLOPs are counted (analyses/flops.py: the outermost op with a formula),
  grouped by (name, input shapes), plus, on GPU traces, the launching ops of kernels no formula
  covers (their FLOPs unknown, so the time without a formula stays visible). Time is GPU time,
  the durations of the kernels the ops own; on a trace without kernels it is the ops' own
  inclusive CPU durations (``Roofline.time_basis`` says which).
- "kernel": kernels grouped by name, with the FLOPs and bytes they inherit from their ops.

A group can mix members with known and unknown FLOPs (one copy kernel launched under a matmul
and under an op without a formula): ``flops`` and ``bytes`` sum the known members, and the rates,
the distance from the roof and the time to save are computed over ``known_time_ns``, the time of
those members; ``time_ns`` is the whole group's.

The roofs, from the Hardware: the compute roof is the tensor-core peak of ``tensor_core_roof``
(flops.py: bf16/fp16/fp8/int8 matmul-like ops, "tf32" for fp32 convolutions; fp32 matmuls use
the fp32 vector roof since PyTorch leaves torch.backends.cuda.matmul.allow_tf32 off by default)
when the Hardware lists it, else the vector peak: "fp64" for fp64, "fp32" for everything else
(elementwise kernels compute 16-bit dtypes in fp32). The memory roof is DRAM bandwidth; the
ridge point is peak / bandwidth, and a point below it is memory-bound. With
attainable = min(peak, intensity * bandwidth):
- pct_of_roof = achieved FLOP/s / attainable * 100 (for 0-FLOP copies: achieved bytes/s over
  bandwidth), which is time_at_roof_ns / known_time_ns * 100;
- time_at_roof_ns = flops / attainable = max(flops / peak, bytes / bandwidth) in ns;
- saved_ns = known_time_ns - time_at_roof_ns, at least 0.
Minimal bytes ignore caches, so a point that reuses data from L2 can exceed 100%.
Without known hardware (Hardware.known False) every point's bound is "unknown" and the roof
columns are NaN: run gpuprofile's calibrate() or pass a Hardware.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from gpuprofile.hardware.model import Hardware
from gpuprofile.trace.model import NO_ID, Trace

MAX_EVENT_IDS = 50
_ROOF_NUMBERS = (
    "peak_flops_per_s", "ridge_intensity", "attainable_flops_per_s", "pct_of_roof",
    "time_at_roof_ns", "saved_ns",
)  # fmt: skip
TENSOR_CORE_ROOFS = ("tf32", "fp16", "bf16", "fp8", "int8")
COLUMNS = (
    "key", "level", "name", "shapes", "rank", "count", "time_ns", "known_time_ns", "flops",
    "bytes", "flops_source", "precision", "tensor_cores", "intensity", "achieved_flops_per_s",
    "achieved_bytes_per_s", "bound", "roof", "peak_flops_per_s", "ridge_intensity",
    "attainable_flops_per_s", "pct_of_roof", "time_at_roof_ns", "saved_ns", "event_ids",
)  # fmt: skip


@dataclass(frozen=True)
class Roofline:
    points: pd.DataFrame
    coverage: float  # share of GPU (or, without kernels, op) time with known FLOPs
    hardware: Hardware
    time_basis: str = "gpu"  # "gpu": kernel durations; "cpu": the ops' inclusive durations


def roofline(
    trace: Trace, hardware: Hardware, op_costs: pd.DataFrame, kernel_costs: pd.DataFrame
) -> Roofline:
    from gpuprofile.analyses.flops import coverage

    gpu = len(kernel_costs) > 0
    members = [_op_members(trace, op_costs, kernel_costs, gpu)]
    if gpu:
        members.append(_kernel_members(kernel_costs))
    groups = [_aggregate(m) for m in members if len(m)]
    points = pd.concat(groups, ignore_index=True) if groups else _empty()
    if len(points) and points["rank"].nunique() > 1:
        points["key"] = points["key"] + "|rank=" + points["rank"].astype(str)
    points = _with_roofs(points, hardware)
    return Roofline(
        points=points.loc[:, list(COLUMNS)],
        coverage=coverage(trace, op_costs, kernel_costs),
        hardware=hardware,
        time_basis="gpu" if gpu else "cpu",
    )


def _op_members(
    trace: Trace, op_costs: pd.DataFrame, kernel_costs: pd.DataFrame, gpu: bool
) -> pd.DataFrame:
    """One row per op that is a point's member, with its time."""
    if gpu:
        owner = kernel_costs["cost_op_id"].to_numpy()
        owner = np.where(owner == NO_ID, kernel_costs["op_id"].to_numpy(), owner)
        attributed = owner != NO_ID
        time = (
            pd.Series(kernel_costs["dur_ns"].to_numpy()[attributed])
            .groupby(owner[attributed])
            .sum()
        )
        ops = op_costs.loc[time.index.to_numpy()]
        time_ns = time.to_numpy()
    else:
        ops = op_costs[op_costs["counted"].to_numpy()]
        durations = pd.Series(trace.ops["dur_ns"].to_numpy(), index=trace.ops["id"].to_numpy())
        time_ns = durations.reindex(ops.index.to_numpy()).to_numpy()
    return pd.DataFrame(
        {
            "level": "op",
            "id": ops["op_id"].to_numpy(),
            "rank": ops["rank"].to_numpy(),
            "name": ops["name"].astype(str).to_numpy(),
            "shapes": ops["shapes"].fillna("").astype(str).to_numpy(),
            "time_ns": np.asarray(time_ns, dtype=np.int64),
            "flops": ops["flops"].to_numpy(),
            "bytes": ops["bytes"].to_numpy(),
            "source": ops["flops_source"].astype(str).to_numpy(),
            "dtype": ops["dtype"].astype(str).to_numpy(),
            "tensor_core_roof": ops["tensor_core_roof"].astype(str).to_numpy(),
        }
    )


def _kernel_members(kernel_costs: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "level": "kernel",
            "id": kernel_costs["kernel_id"].to_numpy(),
            "rank": kernel_costs["rank"].to_numpy(),
            "name": kernel_costs["name"].astype(str).to_numpy(),
            "shapes": "",
            "time_ns": kernel_costs["dur_ns"].to_numpy().astype(np.int64),
            "flops": kernel_costs["flops"].to_numpy(),
            "bytes": kernel_costs["bytes"].to_numpy(),
            "source": kernel_costs["flops_source"].astype(str).to_numpy(),
            "dtype": kernel_costs["dtype"].astype(str).to_numpy(),
            "tensor_core_roof": kernel_costs["tensor_core_roof"].astype(str).to_numpy(),
        }
    )


def _aggregate(members: pd.DataFrame) -> pd.DataFrame:
    """Points from members: sums over the members with known FLOPs; facts of the heaviest."""
    known = np.isfinite(members["flops"].to_numpy())
    # Heaviest first, members with known FLOPs ahead: "first" then reads the heaviest known one.
    m = members.assign(known=known).sort_values(
        ["known", "time_ns"], ascending=False, kind="stable"
    )
    known = m["known"].to_numpy()
    m = m.assign(
        known_time_ns=np.where(known, m["time_ns"], 0),
        known_flops=np.where(known, m["flops"], 0.0),
        known_bytes=np.where(known, m["bytes"], 0.0),
        bytes_missing=known & ~np.isfinite(m["bytes"].to_numpy()),
        measured=known & (m["source"].to_numpy() == "measured"),
    )
    by = ["rank", "name", "shapes"]
    grouped = m.groupby(by, sort=False)
    points = grouped.agg(
        level=("level", "first"),
        count=("id", "size"),
        time_ns=("time_ns", "sum"),
        known_time_ns=("known_time_ns", "sum"),
        flops=("known_flops", "sum"),
        bytes=("known_bytes", "sum"),
        n_known=("known", "sum"),
        n_bytes_missing=("bytes_missing", "sum"),
        n_measured=("measured", "sum"),
        precision=("dtype", "first"),
        tensor_core_roof=("tensor_core_roof", "first"),
    ).reset_index()
    by_time = m.sort_values("time_ns", ascending=False, kind="stable")
    heaviest = by_time.groupby(by, sort=False).head(MAX_EVENT_IDS)
    ids = heaviest.groupby(by, sort=False)["id"].agg(tuple).reset_index(name="event_ids")
    points = points.merge(ids, on=by, how="left")
    none_known = points["n_known"].to_numpy() == 0
    points["flops"] = np.where(none_known, np.nan, points["flops"])
    bytes_unknown = none_known | (points["n_bytes_missing"].to_numpy() > 0)
    points["bytes"] = np.where(bytes_unknown, np.nan, points["bytes"])
    all_measured = points["n_measured"].to_numpy() == points["n_known"].to_numpy()
    points["flops_source"] = np.where(
        none_known, "unknown", np.where(all_measured, "measured", "computed")
    )
    level = points["level"].to_numpy()
    suffix = np.where(level == "op", "|" + points["shapes"], "")
    points["key"] = level + ":" + points["name"] + suffix
    return points.sort_values("time_ns", ascending=False, kind="stable", ignore_index=True)


def _with_roofs(points: pd.DataFrame, hardware: Hardware) -> pd.DataFrame:
    flops = points["flops"].to_numpy(dtype=np.float64)
    nbytes = points["bytes"].to_numpy(dtype=np.float64)
    seconds = points["known_time_ns"].to_numpy(dtype=np.float64) * 1e-9
    with np.errstate(divide="ignore", invalid="ignore"):
        intensity = flops / nbytes
        achieved_flops = np.where(seconds > 0, flops / seconds, np.nan)
        achieved_bytes = np.where(seconds > 0, nbytes / seconds, np.nan)
    points = points.assign(
        intensity=intensity,
        achieved_flops_per_s=achieved_flops,
        achieved_bytes_per_s=achieved_bytes,
    )
    n = len(points)
    if not hardware.known or not n:
        unknown = dict.fromkeys(_ROOF_NUMBERS, np.full(n, np.nan))
        return points.assign(bound="unknown", roof=np.full(n, None), tensor_cores=False, **unknown)
    pairs = zip(points["precision"], points["tensor_core_roof"])
    roof_key = np.array([_compute_roof(p, tc, hardware) for p, tc in pairs], dtype=object)
    peak = np.array([hardware.peak_flops.get(k, np.nan) for k in roof_key], dtype=np.float64)
    bandwidth = float(hardware.dram_bytes_per_s or np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        ridge = peak / bandwidth
        at_roof_s = np.fmax(flops / peak, nbytes / bandwidth)
        attainable = np.minimum(peak, intensity * bandwidth)
        valid = (seconds > 0) & np.isfinite(flops) & np.isfinite(nbytes) & np.isfinite(peak)
        compute = valid & (intensity >= ridge)
        pct = np.where(valid, at_roof_s / seconds * 100.0, np.nan)
    time_at_roof = np.where(valid, at_roof_s * 1e9, np.nan)
    return points.assign(
        bound=np.where(valid, np.where(compute, "compute", "memory"), "unknown"),
        roof=np.where(valid, np.where(compute, roof_key, "dram"), np.full(n, None)),
        tensor_cores=compute & np.isin(roof_key, TENSOR_CORE_ROOFS),
        peak_flops_per_s=np.where(valid, peak, np.nan),
        ridge_intensity=np.where(valid, ridge, np.nan),
        attainable_flops_per_s=np.where(valid, attainable, np.nan),
        pct_of_roof=pct,
        time_at_roof_ns=time_at_roof,
        saved_ns=np.where(valid, np.maximum(seconds * 1e9 - time_at_roof, 0.0), np.nan),
    )


def _compute_roof(precision: str, tensor_core_roof: str, hardware: Hardware) -> str:
    if tensor_core_roof and tensor_core_roof in hardware.peak_flops:
        return tensor_core_roof
    return "fp64" if precision == "fp64" else "fp32"


def _empty() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "level": pd.Series(dtype=object),
            "name": pd.Series(dtype=object),
            "shapes": pd.Series(dtype=object),
            "rank": pd.Series(dtype=np.int32),
            "count": pd.Series(dtype=np.int64),
            "time_ns": pd.Series(dtype=np.int64),
            "known_time_ns": pd.Series(dtype=np.int64),
            "flops": pd.Series(dtype=np.float64),
            "bytes": pd.Series(dtype=np.float64),
            "flops_source": pd.Series(dtype=object),
            "precision": pd.Series(dtype=object),
            "tensor_core_roof": pd.Series(dtype=object),
            "event_ids": pd.Series(dtype=object),
            "key": pd.Series(dtype=object),
        }
    )
