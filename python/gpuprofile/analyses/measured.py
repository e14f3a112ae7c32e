"""What a tool measured on kernels (Nsight Compute's counters), summed up per kernel name.

An importer puts a launch's own measurements on its kernels row: ``flops`` and ``bytes`` (DRAM
traffic) and, in ``metrics``, percentages under the names in ``MEASURED_METRICS``. A kernel
launched many times is summed up as its launches' total FLOPs and bytes, the bandwidth over
the launches whose bytes were measured, and each percentage as the mean over its launches
weighted by their durations (a long launch says more about the kernel than a short one).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gpuprofile.analyses.names import strings
from gpuprofile.trace.model import Trace

# kernels.metrics key -> what it is, as a reader sees it (a percentage each).
MEASURED_METRICS = {
    "sm_throughput_pct": "SM throughput",
    "memory_throughput_pct": "memory throughput",
    "dram_throughput_pct": "DRAM throughput",
    "achieved_occupancy_pct": "achieved occupancy",
    "tensor_pipe_pct": "tensor pipe busy",
    "l2_hit_rate_pct": "L2 hit rate",
}


def measured_by_name(trace: Trace, rank: int, names: list[str]) -> dict[str, dict[str, Any]]:
    """Per kernel name of ``names`` that has measurements on ``rank``: {"launches" (measured
    ones), "flops", "bytes", "bytes_per_s", and each ``MEASURED_METRICS`` key present}; names
    without any measurement are left out, so a Kineto trace gives {}."""
    kernels = trace.kernels
    if not len(kernels):
        return {}
    metrics = kernels["metrics"].to_numpy()
    flops, nbytes = kernels["flops"].to_numpy(), kernels["bytes"].to_numpy()
    has = (kernels["rank"].to_numpy() == rank) & (
        np.isfinite(flops) | np.isfinite(nbytes) | (metrics != None)  # noqa: E711
    )
    if not has.any():
        return {}
    out: dict[str, dict[str, Any]] = {}
    rows = np.flatnonzero(has)
    name = strings(kernels["name"], rows=rows)
    dur = kernels["dur_ns"].to_numpy()[rows].astype(np.float64)
    for wanted in names:
        at = np.flatnonzero(name == wanted)
        if len(at):
            out[wanted] = _summary(flops[rows[at]], nbytes[rows[at]], dur[at], metrics[rows[at]])
    return out


def _summary(
    flops: np.ndarray, nbytes: np.ndarray, dur: np.ndarray, metrics: np.ndarray
) -> dict[str, Any]:
    sized = np.isfinite(nbytes)
    seconds = float(dur[sized].sum()) * 1e-9
    summary: dict[str, Any] = {
        "launches": len(dur),
        "flops": float(flops[np.isfinite(flops)].sum()) if np.isfinite(flops).any() else None,
        "bytes": float(nbytes[sized].sum()) if sized.any() else None,
        "bytes_per_s": float(nbytes[sized].sum()) / seconds if seconds > 0 else None,
    }
    for key in MEASURED_METRICS:
        pairs = [
            (float(m[key]), float(d))
            for m, d in zip(metrics, dur, strict=True)
            if isinstance(m, dict) and isinstance(m.get(key), int | float) and math.isfinite(m[key])
        ]
        weight = sum(d for _, d in pairs)
        if pairs:
            summary[key] = sum(v * d for v, d in pairs) / weight if weight > 0 else pairs[0][0]
    return summary
