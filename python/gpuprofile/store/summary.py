"""What the history keeps of a run for listing and a glance: figures from its report and the
step times of its digest, whole-job (summed over ranks)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from gpuprofile.report.schema import NameTotal, Report, TopKernel

TOP = 5  # kernels and ops kept in a summary


def run_summary(report: Report, digest: dict[str, Any]) -> dict[str, Any]:
    """wall_ns, busy_ns, idle_ns (None without a GPU timeline), idle_by_cause, steps (count,
    median/p10/p90/min/max ns and where they came from; None without steps), top_kernels and
    top_ops ({name, count, total_ns}, TOP longest), device, ranks, source (format, path)."""
    ranks = report.ranks
    gpus = [r.gpu for r in ranks if r.gpu is not None]
    steps = np.asarray(digest["steps"], dtype=float)
    devices = sorted({d.name for r in ranks for d in r.devices if d.name})
    hardware = report.hardware.name
    return {
        "device": ", ".join(devices) or (hardware if hardware != "unknown" else None),
        "ranks": len(ranks),
        "source": {"format": report.source.format, "path": report.source.path},
        "partial": report.partial,
        "wall_ns": sum(r.wall_ns for r in ranks),
        "busy_ns": sum(g.busy_ns for g in gpus) if gpus else None,
        "idle_ns": sum(g.idle_ns for g in gpus) if gpus else None,
        "idle_by_cause": dict(report.idle_by_cause),
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
        "top_kernels": _top(r.top_kernels for r in ranks),
        "top_ops": _top(r.top_ops for r in ranks),
    }


def hint_rows(report: Report) -> list[dict[str, Any]]:
    """Each hint, ranked as the report ranks them: kind, title, severity, gain_ns, rank."""
    return [
        {
            "kind": h.kind,
            "title": h.title,
            "severity": h.severity,
            "gain_ns": h.gain_ns,
            "rank": h.rank,
        }
        for h in report.hints
    ]


def _top(per_rank: Iterable[Sequence[NameTotal | TopKernel]]) -> list[dict[str, Any]]:
    totals: dict[str, list[int]] = {}
    for rows in per_rank:
        for row in rows:
            total = totals.setdefault(row.name, [0, 0])
            total[0] += row.count
            total[1] += row.total_ns
    ranked = sorted(totals.items(), key=lambda item: (-item[1][1], item[0]))[:TOP]
    return [{"name": name, "count": c, "total_ns": t} for name, (c, t) in ranked]
