"""Reports written by hand for tests of one view: every field the contract requires
(report/schema.py), empty or unknown unless a test gives it, so a test names only what it
checks."""

from __future__ import annotations

from typing import Any

from gpuprofile.report.schema import Report, to_report


def hardware(**fields: Any) -> dict[str, Any]:
    return {
        "name": "unknown", "source": "unknown", "peak_flops": {}, "dram_bytes_per_s": None,
        "link_bytes_per_s": None, "peer_link_bytes_per_s": None, "sm_count": None,
        "l2_bytes": None, "memory_bytes": None, "citation": None, "notes": "",
        **fields,
    }  # fmt: skip


def point(**fields: Any) -> dict[str, Any]:
    """A roofline point, unknown but for ``fields``."""
    return {
        "key": str(fields.get("name", "p")), "level": "kernel", "name": "p", "shapes": "",
        "rank": 0, "count": 1, "time_ns": 0, "flops": None, "bytes": None,
        "flops_source": "unknown", "bytes_source": "unknown", "precision": "",
        "tensor_cores": False, "intensity": None, "achieved_flops_per_s": None,
        "achieved_bytes_per_s": None, "bound": "unknown", "roof": None,
        "attainable_flops_per_s": None, "pct_of_roof": None, "time_at_roof_ns": None,
        "saved_ns": None, "event_ids": [],
        **fields,
    }  # fmt: skip


def evidence(table: str, event_ids: list[int], **fields: Any) -> dict[str, Any]:
    return {"table": table, "rank": 0, "event_ids": event_ids, "windows": [], "label": "", **fields}


def hint(**fields: Any) -> dict[str, Any]:
    """A low gpu-idle hint without evidence, but for ``fields``."""
    return {
        "kind": "gpu-idle", "title": "a hint", "severity": "low", "gain_ns": 0,
        "gain_method": "", "confidence": "low", "explanation": "", "numbers": {}, "fix": [],
        "code": "", "evidence": [], "rank": None, "related": [],
        **fields,
    }  # fmt: skip


def module_row(path: str, forward_ns: int, backward_ns: int = 0, **fields: Any) -> dict[str, Any]:
    """A module row of ``path`` (depth from its dots), unknown but for ``fields``."""
    return {
        "path": path, "type": "", "depth": path.count("."), "calls": 1,
        "forward_ns": forward_ns, "backward_ns": backward_ns, "self_ns": 0, "gpu_ns": 0,
        "flops": None, "achieved_flops_per_s": None, "pct_of_roof": None,
        "alloc_bytes": None, "peak_bytes": None, "evidence": [],
        **fields,
    }  # fmt: skip


def rank(**fields: Any) -> dict[str, Any]:
    """A rank without events, but for ``fields``."""
    return {
        "rank": 0, "devices": [], "wall_ns": 0, "gpu": None,
        "counts": {k: 0 for k in ("ops", "runtime", "kernels", "memcpy", "memset")},
        "top_kernels": [], "top_ops": [], "copies": [], "sampled": None, "idle_by_cause": {},
        "distributed": None,
        **fields,
    }  # fmt: skip


def report(**sections: Any) -> Report:
    """A report of nothing found, but for ``sections`` (plain JSON, as report() gives them)."""
    plain = {
        "schema": "gpuprofile.report/1",
        "source": {"path": None, "format": "kineto", "version": None},
        "partial": False, "dropped": None, "capture_errors": [], "notices": [],
        "hardware": hardware(), "gauges": [], "hints": [], "idle_by_cause": {},
        "roofline": {"coverage": None, "points": [], "missing_flops": ""},
        "ranks": [], "distributed": None, "inference": None,
        **sections,
    }  # fmt: skip
    return to_report(plain)
