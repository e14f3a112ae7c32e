"""The versioned report: what every view (text, JSON, widget) shows, computed once."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from gpuprofile.analyses.gpu_time import gpu_time
from gpuprofile.analyses.summary import copies, counts, top_kernels, top_ops, wall_ns
from gpuprofile.trace.model import Trace

SCHEMA = "gpuprofile.report/1"


def build_report(trace: Trace, *, partial: bool = False, top: int = 10) -> dict[str, Any]:
    source = trace.meta.get("source", {})
    return {
        "schema": SCHEMA,
        "source": {"path": source.get("path"), "format": source.get("format")},
        "partial": partial,
        "ranks": [_rank_report(trace, rank, top) for rank in trace.ranks],
        "hints": [],
    }


def _rank_report(trace: Trace, rank: int, top: int) -> dict[str, Any]:
    meta = trace.meta["ranks"][rank]
    gpu = gpu_time(trace, rank)
    return {
        "rank": rank,
        "devices": [
            {k: d.get(k) for k in ("id", "name", "memory_bytes", "sm_count", "compute_capability")}
            for d in _used_devices(trace, rank, meta.get("devices", []))
        ],
        "wall_ns": wall_ns(trace, rank),
        "gpu": None
        if gpu is None
        else {
            "window_ns": gpu.window_ns,
            "busy_ns": gpu.busy_ns,
            "idle_ns": gpu.idle_ns,
            "busy_pct": round(gpu.busy_pct, 3),
            "compute_ns": gpu.compute_ns,
            "non_compute_ns": gpu.non_compute_ns,
        },
        "counts": counts(trace, rank),
        "top_kernels": [asdict(k) for k in top_kernels(trace, rank, top)],
        "top_ops": [asdict(o) for o in top_ops(trace, rank, top)],
        "copies": [{**asdict(c), "gbps": round(c.gbps, 3)} for c in copies(trace, rank)],
    }


def _used_devices(trace: Trace, rank: int, devices: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Traces list every device on the host; a rank's report names the ones it ran on."""
    used: set[int] = set()
    for table in (trace.kernels, trace.memcpy, trace.memset):
        used.update(int(d) for d in table.loc[table["rank"] == rank, "device"].unique())
    chosen = [d for d in devices if d.get("id") in used]
    return chosen or devices
