"""Kernels that leave SMs idle: grids with fewer blocks than SMs, and a mostly empty last wave.

A kernel's blocks run in waves of (SMs x resident blocks per SM). The idle share of a kernel is
the part of its waves' capacity that no block used: ``1 - waves / ceil(waves)``. With fewer
blocks than SMs that is ``1 - blocks / SMs`` (one wave, SMs left empty). With more blocks, the
resident blocks per SM come from Kineto's "est. achieved occupancy %", which Kineto computes
as ``min(blocks / SMs, max active blocks per SM) * threads per block / max threads per SM``
(libkineto CudaDeviceProperties.cpp, kernelOccupancy): where the grid is larger than one
wave, occupancy * max threads per SM / threads per block gives the max active blocks per SM.

Nsight Compute measures the resident blocks per SM itself: the smallest of its occupancy limits
(``launch__occupancy_limit_registers``, ``_shared_mem``, ``_warps``, ``_blocks``), whose
resource the finding names ("capped at 2 by registers"). Otherwise only kernels whose trace
carries CUPTI's launch facts ("blocks per SM", written by Kineto for CUDA kernels) are
judged: ROCm traces write work-items for some launches and workgroups for others in "grid", so
a block count cannot be read from them. Nsight Systems' kernel table holds CUPTI's grid in blocks
for every kernel: there a launch of fewer blocks than SMs is judged from the device's SM count
(resident blocks per SM, which a larger grid needs, are not in it). Kernels shorter than
LAUNCH_LATENCY_NS are left to the launch-overhead detector (their time is launch latency, not SM
work), and collectives are left alone (NCCL uses few blocks by design). So is any kernel that
ran mostly (MOSTLY_OVERLAPPED) beside kernels on other streams of its device: the SMs it left
empty were running those, so the GPU was not idle; the rest are discounted by the share of
their time that overlapped.

A kernel qualifies when MIN_IDLE_WAVE_SHARE of its waves' capacity sat idle, or, for a launch
of less than one wave, MIN_ONE_WAVE_IDLE (thresholds.py): the SMs it leaves empty stay empty for
its whole time.

Gain: half the idle share of each qualifying kernel's lone (not overlapped) time. Filling
idle SMs needs more, smaller blocks (split-K, smaller tiles, a different launch
configuration), which costs something; the full idle share, an upper bound, is in the
numbers.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gpuprofile.analyses.claims import frame_claim
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.fixes_by_framework import OCCUPANCY, Fix, pick
from gpuprofile.analyses.hints import Hint, heaviest_events
from gpuprofile.analyses.intervals import IntervalSet
from gpuprofile.analyses.kernel_kind import COMMUNICATION
from gpuprofile.analyses.names import string_column
from gpuprofile.analyses.thresholds import (
    LAUNCH_LATENCY_NS,
    MIN_IDLE_WAVE_SHARE,
    MIN_ONE_WAVE_IDLE,
    worth_reporting,
)
from gpuprofile.hardware.properties import trace_devices
from gpuprofile.trace.model import Trace
from gpuprofile.units import format_count, format_percent, format_time

ACHIEVABLE = 0.5
# Formats whose grid is CUPTI's, in blocks, for every kernel (Nsight Systems' kernel table):
# a launch with fewer blocks than SMs is judged there without Kineto's "blocks per SM".
GRID_IN_BLOCKS = frozenset(("nsys",))
LOW_OCCUPANCY_PCT = 25.0
# More SMs than any GPU has (hundreds today): a launch whose SM count exceeds it is corrupt.
MAX_SMS = 2**16
# A kernel that ran beside other streams' kernels for at least this share of its time is not
# leaving the GPU idle (NCCL and other side-stream kernels take few SMs by design).
MOSTLY_OVERLAPPED = 0.5

FIX = (
    "Give small grids more blocks: split the work along another dimension (split-K for "
    "GEMMs with small M x N and large K, more rows per reduction), or batch several small "
    "launches into one (torch._foreach_* ops, grouped GEMM, torch.compile).",
    "For a mostly empty last wave, pick a tile or batch size whose block count is a "
    "multiple of SMs x resident blocks per SM, or let cuBLAS choose a different algorithm "
    "(torch.backends.cuda.matmul.allow_tf32 / cuBLASLt heuristics change tile sizes).",
    "Larger batches raise the block count of every kernel: if memory allows, increase the "
    "batch size (or use gradient accumulation less).",
    "Hand-written Triton/CUDA kernels: lower registers per thread or shared memory per block "
    "so more blocks fit on an SM (Triton: fewer num_warps/num_stages, smaller BLOCK_SIZE).",
)


def detect(analysis: Analysis) -> list[Hint]:
    trace = analysis.trace
    hints = []
    for rank in trace.ranks:
        table = kernel_waves(analysis, rank, analysis.hardware.sm_count)
        if table.empty:
            continue
        hint = _hint(analysis, rank, table)
        if hint is not None:
            hints.append(hint)
    return hints


def kernel_waves(analysis: Analysis, rank: int, default_sms: int | None) -> pd.DataFrame:
    """Per kernel with CUPTI launch facts: blocks, SMs, resident blocks per SM, waves, idle."""
    trace = analysis.trace
    k = analysis.rank_table("kernels", rank)
    per_sm = k["blocks_per_sm"].to_numpy(np.float64)
    measured_slots, _, _ = ncu_launch(k)
    with np.errstate(invalid="ignore"):
        launched = (k["grid_x"] > 0).to_numpy() & (k["block_x"] > 0).to_numpy()
        known = (
            (np.isfinite(per_sm) & (per_sm >= 0))
            | np.isfinite(measured_slots)
            | (trace.meta.source.format in GRID_IN_BLOCKS)
        )
        k = k[launched & known]
    if k.empty:
        return pd.DataFrame()
    k = k[analysis.kernel_classes.kinds_of(k["name"]) != COMMUNICATION]
    blocks = _product(k, "grid")
    threads = _product(k, "block")
    facts = _devices(trace, rank)
    device = k["device"].to_numpy()
    devices, which = np.unique(device, return_inverse=True)
    known = [facts.get(int(d), (None, None)) for d in devices]  # one lookup per device
    sms = np.array([f[0] or default_sms or 0 for f in known], np.float64)[which]
    # Without a device table, Kineto's blocks per SM (= blocks / SMs) gives the SM count, or
    # Nsight Compute's own launch__sm_count.
    measured_slots, limiter, measured_sms = ncu_launch(k)
    derived = np.rint(blocks / np.maximum(k["blocks_per_sm"].to_numpy(np.float64), 1e-9))
    derived = np.where(np.isfinite(measured_sms), measured_sms, derived)
    sms = np.where(sms > 0, sms, derived).astype(np.float64)
    # A kernel whose SM count is none a GPU has (launch facts edited or corrupt) is not judged.
    judged = np.isfinite(sms) & (sms >= 1) & (sms <= MAX_SMS)
    if not judged.all():
        k, blocks, threads, sms = k[judged], blocks[judged], threads[judged], sms[judged]
        which, measured_slots, limiter = which[judged], measured_slots[judged], limiter[judged]
    max_threads = np.array([f[1] or 0 for f in known], np.float64)[which]
    occupancy = k["occupancy"].to_numpy(np.float64)
    # A percentage outside 0..100 is none Kineto computed: unknown, as when not written.
    with np.errstate(invalid="ignore"):
        occupancy = np.where((occupancy >= 0) & (occupancy <= 100), occupancy, np.nan)
    active = occupancy / 100.0 * max_threads / np.maximum(threads, 1)
    # Occupancy tells the resident blocks per SM only when the grid was larger than that;
    # Kineto writes whole percents, so "larger" must beat one percent's worth of blocks.
    tolerance = 0.01 * max_threads / np.maximum(threads, 1)
    limited = (max_threads > 0) & (occupancy > 0) & (blocks / sms > active + tolerance)
    slots = np.where(limited, np.maximum(np.rint(active), 1), np.nan)
    # Nsight Compute measured the resident blocks per SM: its smallest occupancy limit.
    measured = np.isfinite(measured_slots)
    limited = np.where(measured, blocks > sms, limited)
    slots = np.where(measured, measured_slots, slots)
    underfilled = blocks < sms
    waves = np.where(underfilled, blocks / sms, blocks / (sms * slots))
    idle = np.where(
        underfilled | limited, 1.0 - waves / np.ceil(np.where(np.isnan(waves), 1, waves)), 0.0
    )
    overlapped = overlapped_share(analysis, rank, k)
    return pd.DataFrame(
        {
            "id": k["id"].to_numpy(),
            "name": string_column(k["name"]),
            "start_ns": k["start_ns"].to_numpy(),
            "dur_ns": k["dur_ns"].to_numpy(),
            "blocks": blocks,
            "threads": threads,
            "sms": sms.astype(np.int64),
            "slots": slots,
            "waves": waves,
            "idle": np.nan_to_num(idle),
            "underfilled": underfilled,
            "occupancy": occupancy,
            "overlapped": overlapped,
            "limiter": limiter,
        }
    )


def overlapped_share(analysis: Analysis, rank: int, kernels: pd.DataFrame) -> np.ndarray:
    """Per kernel (rows of ``kernels``, all of ``rank``), the share of its time during which
    kernels on other streams of its device ran: the SMs it leaves empty were theirs to use."""
    mine = analysis.rank_table("kernels", rank)
    start_all = mine["start_ns"].to_numpy(np.int64)
    end_all = start_all + mine["dur_ns"].to_numpy(np.int64)
    device_all, stream_all = mine["device"].to_numpy(), mine["stream"].to_numpy()
    start = kernels["start_ns"].to_numpy(np.int64)
    dur = kernels["dur_ns"].to_numpy(np.int64)
    device, stream = kernels["device"].to_numpy(), kernels["stream"].to_numpy()
    covered = np.zeros(len(kernels), np.int64)
    for d, s in sorted(set(zip(device.tolist(), stream.tolist()))):
        others = (device_all == d) & (stream_all != s)
        if not others.any():
            continue
        rows = (device == d) & (stream == s)
        beside = IntervalSet(start_all[others], end_all[others])
        covered[rows] = beside.coverage(start[rows], start[rows] + dur[rows])
    return np.asarray(np.where(dur > 0, covered / np.maximum(dur, 1), 0.0))


def _hint(analysis: Analysis, rank: int, table: pd.DataFrame) -> Hint | None:
    kind = analysis.framework
    # A launch of less than one wave leaves SMs idle for its whole time, not only in a tail.
    idle_enough = (table["idle"] >= MIN_IDLE_WAVE_SHARE) | (
        (table["waves"] < 1) & (table["idle"] >= MIN_ONE_WAVE_IDLE)
    )
    qualifies = (
        (table["dur_ns"] >= LAUNCH_LATENCY_NS)
        & idle_enough
        & (table["overlapped"] < MOSTLY_OVERLAPPED)
    )
    # SMs left empty while other streams' kernels run are not idle: only the lone time counts.
    hits = table[qualifies].assign(
        idle_ns=lambda t: t["dur_ns"] * t["idle"] * (1.0 - t["overlapped"])
    )
    beside = table[
        (table["dur_ns"] >= LAUNCH_LATENCY_NS)
        & idle_enough
        & (table["overlapped"] >= MOSTLY_OVERLAPPED)
    ]
    wall = analysis.wall_ns(rank)
    gain = int(ACHIEVABLE * hits["idle_ns"].sum())
    if hits.empty or not worth_reporting("low-occupancy", gain, wall):
        return None
    under = hits[hits["underfilled"]]
    tail = hits[~hits["underfilled"]]
    sms = int(table["sms"].mode().iloc[0])
    with_occ = table[table["occupancy"].notna()]
    total = float(with_occ["dur_ns"].sum())
    weighted_occ = (
        float((with_occ["occupancy"] * with_occ["dur_ns"]).sum() / total) if total else 0.0
    )
    low_occ_pct = (
        100.0
        * float(with_occ.loc[with_occ["occupancy"] < LOW_OCCUPANCY_PCT, "dur_ns"].sum())
        / total
        if total
        else 0.0
    )
    # Said only of kernels whose trace gives their occupancy (Kineto's estimate).
    occupancy_text = (
        f" Over the kernels with an occupancy estimate, time-weighted estimated occupancy is "
        f"{format_percent(weighted_occ, 0)} and {format_percent(low_occ_pct, 0)} of their time "
        f"ran below {format_percent(LOW_OCCUPANCY_PCT, 0)} occupancy (by itself not a problem: "
        "tensor-core GEMMs run at low occupancy by design)."
        if total
        else ""
    )
    lines = [_describe(analysis.kernel_label(name), rows) for name, rows in _top_names(hits, 3)]
    kernel_ns = int(table["dur_ns"].sum())
    parts = []
    if len(under):
        parts.append(
            f"{format_count(len(under), 'kernel')} ({format_time(under['dur_ns'].sum())}) launched "
            f"fewer blocks than the GPU's {sms} SMs"
        )
    if len(tail):
        parts.append(
            f"{format_count(len(tail), 'kernel')} ({format_time(tail['dur_ns'].sum())}) ended "
            "with a mostly empty last wave"
        )
    beside_text = (
        f" Left out: {format_count(len(beside), 'kernel')} with as few blocks that ran mostly "
        "beside other streams' kernels, which had the SMs they left."
        if len(beside)
        else ""
    )
    return Hint(
        kind="low-occupancy",
        subject="under-filled kernels",
        title=f"{format_count(len(hits), 'kernel')} leave SMs idle ({sms} SMs)",
        basis_ns=wall,
        gain_ns=gain,
        claim=frame_claim(hits),
        gain_method=(
            "Half the idle SM capacity of each kernel of 10 µs or more, from launch "
            "facts: duration x (1 - waves / ceil(waves)) x (1 - share of it overlapped by "
            "other streams' kernels), waves = blocks / (SMs x resident blocks per SM); "
            "half, because spreading work over more blocks has its own cost."
        ),
        confidence="low",
        explanation=(
            f"{' and '.join(parts)}; {format_time(hits['idle_ns'].sum())} of SM capacity sat "
            f"idle in them. Heaviest: {'; '.join(lines)}.{occupancy_text}{beside_text}"
        ),
        numbers={
            "sm_count": sms,
            "kernels_underfilled": len(under),
            "underfilled_ns": int(under["dur_ns"].sum()),
            "kernels_tail": len(tail),
            "tail_ns": int(tail["dur_ns"].sum()),
            "idle_capacity_ns": int(hits["idle_ns"].sum()),
            "kernel_ns": kernel_ns,
            **(
                {
                    "time_weighted_occupancy_pct": round(weighted_occ, 1),
                    "time_below_25pct_occupancy_pct": round(low_occ_pct, 1),
                }
                if total
                else {}
            ),
            "kernels_beside_other_streams": len(beside),
        },
        **pick(kind, Fix(FIX, ""), OCCUPANCY)._asdict(),
        evidence=(
            heaviest_events(
                hits, "kernels", rank, "kernels with idle SMs, most idle time first", by="idle_ns"
            ),
        ),
        rank=rank,
    )


def _describe(label: str, rows: pd.DataFrame) -> str:
    first = rows.iloc[0]
    if bool(first["underfilled"]):
        shape = f"{format_count(int(first['blocks']), 'block')} on {int(first['sms'])} SMs"
    else:
        shape = f"{first['waves']:.2f} waves of {int(first['sms'])}x{int(first['slots'])} blocks"
        if first["limiter"]:
            shape += f" (blocks per SM capped at {int(first['slots'])} by {first['limiter']})"
    return f"{label} x{len(rows)}, {format_time(rows['dur_ns'].sum())}, {shape}"


# Nsight Compute's occupancy limits: how many blocks of the launch fit on one SM by each
# resource; the smallest is the resident blocks per SM, and its resource caps it.
NCU_LIMITS = {
    "launch__occupancy_limit_registers": "registers",
    "launch__occupancy_limit_shared_mem": "shared memory",
    "launch__occupancy_limit_warps": "warps",
    "launch__occupancy_limit_blocks": "the blocks-per-SM limit",
}


def ncu_launch(k: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per kernel, what Nsight Compute measured of its launch: resident blocks per SM (its
    smallest occupancy limit), the resource that sets it ("" unknown) and the SM count (NaN
    where not measured)."""
    slots = np.full(len(k), np.nan)
    sms = np.full(len(k), np.nan)
    limiter = np.full(len(k), "", dtype=object)
    for i, metrics in enumerate(k["metrics"].to_numpy()):
        if not isinstance(metrics, dict):
            continue
        limits = {
            what: float(metrics[name])
            for name, what in NCU_LIMITS.items()
            if isinstance(metrics.get(name), int | float) and 0 < metrics[name] < MAX_SMS
        }
        if limits:
            limiter[i] = min(limits, key=lambda what: limits[what])
            slots[i] = limits[limiter[i]]
        count = metrics.get("launch__sm_count")
        if isinstance(count, int | float) and 0 < count <= MAX_SMS:
            sms[i] = float(count)
    return slots, limiter, sms


def _top_names(hits: pd.DataFrame, limit: int) -> list[tuple[str, pd.DataFrame]]:
    order = hits.groupby("name")["idle_ns"].sum().sort_values(ascending=False).index[:limit]
    return [(str(name), hits[hits["name"] == name]) for name in order]


def _product(k: pd.DataFrame, key: str) -> np.ndarray:
    # In floats: three large int64 dims (a corrupt launch) would wrap around in int64.
    dims = [np.maximum(k[f"{key}_{axis}"].to_numpy(np.float64), 1.0) for axis in "xyz"]
    return np.asarray(dims[0] * dims[1] * dims[2])


def _devices(trace: Trace, rank: int) -> dict[int, tuple[int | None, int | None]]:
    """Device id -> (SM count, max threads per SM) from the trace's device properties."""
    out: dict[int, tuple[int | None, int | None]] = {}
    for device in trace_devices(trace, rank).devices:  # checked: counts above zero or None
        if device.get("id") is None:
            continue
        props = device["properties"]
        out[device["id"]] = (device.get("sm_count"), props.get("maxThreadsPerMultiprocessor"))
    return out
