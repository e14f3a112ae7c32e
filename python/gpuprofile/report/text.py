"""The report as plain text, for terminals, CI logs and notebooks read without widgets."""

from __future__ import annotations

from typing import Any


def format_ns(ns: float) -> str:
    """A duration with a unit a person reads at a glance."""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(ns) >= scale:
            digits = ".3g" if abs(ns) < 100 * scale else ".0f"
            return f"{ns / scale:{digits}} {unit}"
    return f"{ns:.0f} ns"


def format_bytes(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


def _shorten(name: str, width: int = 80) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def render_text(report: dict[str, Any]) -> str:
    lines = []
    source = report["source"]
    title = f"gpuprofile report ({source['format']}"
    title += f": {source['path']})" if source.get("path") else ")"
    lines.append(title)
    if report.get("partial"):
        lines.append("PARTIAL: the profiled code raised; this covers only what ran before it.")
    for rank in report["ranks"]:
        lines.append("")
        devices = ", ".join(d["name"] for d in rank["devices"] if d.get("name")) or "no device info"
        lines.append(f"rank {rank['rank']} ({devices}); wall {format_ns(rank['wall_ns'])}")
        c = rank["counts"]
        lines.append(
            f"  events: {c['kernels']} kernels, {c['memcpy']} memcpy, {c['memset']} memset, "
            f"{c['ops']} ops, {c['runtime']} runtime calls"
        )
        gpu = rank["gpu"]
        if gpu is None:
            lines.append("  GPU: no GPU activity recorded")
        else:
            lines.append(
                f"  GPU window {format_ns(gpu['window_ns'])}: busy {format_ns(gpu['busy_ns'])} "
                f"({gpu['busy_pct']:.1f}%), idle {format_ns(gpu['idle_ns'])}; "
                f"compute {format_ns(gpu['compute_ns'])}, "
                f"non-compute {format_ns(gpu['non_compute_ns'])}"
            )
        for key, label in (("top_kernels", "top kernels"), ("top_ops", "top ops")):
            if rank[key]:
                lines.append(f"  {label} by total time:")
                for row in rank[key]:
                    lines.append(
                        f"    {format_ns(row['total_ns']):>10}  x{row['count']:<6} "
                        f"{_shorten(row['name'])}"
                    )
        if rank["copies"]:
            lines.append("  host/device copies:")
            for copy in rank["copies"]:
                lines.append(
                    f"    {copy['kind']:<8} x{copy['count']:<6} {format_bytes(copy['bytes']):>9} "
                    f"in {format_ns(copy['total_ns'])} ({copy['gbps']:.2f} GB/s)"
                )
    return "\n".join(lines)
