"""What the history keeps of a run for listing and a glance: figures from its report and the
step times of its digest, whole-job (summed over ranks)."""

from __future__ import annotations

from typing import Any

import numpy as np

TOP = 5  # kernels and ops kept in a summary


def run_summary(report: dict[str, Any], digest: dict[str, Any]) -> dict[str, Any]:
    """wall_ns, busy_ns, idle_ns (None without a GPU timeline), idle_by_cause, steps (count,
    median/p10/p90/min/max ns and where they came from; None without steps), top_kernels and
    top_ops ({name, count, total_ns}, TOP longest), device, ranks, source (format, path)."""
    ranks = report["ranks"]
    gpus = [r["gpu"] for r in ranks if r["gpu"] is not None]
    steps = np.asarray(digest["steps"], dtype=float)
    devices = sorted({d["name"] for r in ranks for d in r["devices"] if d.get("name")})
    hardware = report.get("hardware") or {}
    return {
        "device": ", ".join(devices)
        or (hardware.get("name") if hardware.get("name") != "unknown" else None),
        "ranks": len(ranks),
        "source": {"format": report["source"]["format"], "path": report["source"]["path"]},
        "partial": bool(report.get("partial")),
        "wall_ns": sum(int(r["wall_ns"]) for r in ranks),
        "busy_ns": sum(int(g["busy_ns"]) for g in gpus) if gpus else None,
        "idle_ns": sum(int(g["idle_ns"]) for g in gpus) if gpus else None,
        "idle_by_cause": {k: int(v) for k, v in report["idle_by_cause"].items()},
        "steps": {
            "count": len(steps),
            "median_ns": float(np.median(steps)),
            "p10_ns": float(np.quantile(steps, 0.1)),
            "p90_ns": float(np.quantile(steps, 0.9)),
            "min_ns": float(steps.min()),
            "max_ns": float(steps.max()),
            "source": digest["steps_from"],
        }
        if len(steps)
        else None,
        "top_kernels": _top(r["top_kernels"] for r in ranks),
        "top_ops": _top(r["top_ops"] for r in ranks),
    }


def hint_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Each hint, ranked as the report ranks them: kind, title, severity, gain_ns, rank."""
    return [
        {k: hint.get(k) for k in ("kind", "title", "severity", "gain_ns", "rank")}
        for hint in report["hints"]
    ]


def _top(per_rank: Any) -> list[dict[str, Any]]:
    totals: dict[str, list[int]] = {}
    for rows in per_rank:
        for row in rows:
            total = totals.setdefault(row["name"], [0, 0])
            total[0] += int(row["count"])
            total[1] += int(row["total_ns"])
    ranked = sorted(totals.items(), key=lambda item: (-item[1][1], item[0]))[:TOP]
    return [{"name": name, "count": c, "total_ns": t} for name, (c, t) in ranked]
