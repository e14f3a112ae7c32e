"""The history as text: ``gpuprofile history`` (one line a run) and ``history show ID``."""

from __future__ import annotations

import os
import time
from typing import Any

from gpuprofile.store.history import StoredRun
from gpuprofile.units import format_count, format_fraction, format_time

_COLUMNS = ("ID", "WHEN", "LABEL", "WALL", "STEP", "GPU BUSY", "TOP HINT", "FROM")
_HINT_WIDTH = 44
_FROM_WIDTH = 36


def render_runs(runs: list[StoredRun], where: str) -> str:
    """One line per run, newest first, under a header; ``where``: the store's path."""
    if not runs:
        return f"no runs recorded yet (history {where})\n"
    rows = [_COLUMNS] + [_row(run) for run in runs]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    return "\n".join([*lines, f"({format_count(len(runs), 'run')}; history {where})"]) + "\n"


def _row(run: StoredRun) -> tuple[str, ...]:
    summary = run.summary
    steps = summary.get("steps")
    busy, wall = summary.get("busy_ns"), summary.get("wall_ns")
    window = (busy or 0) + (summary.get("idle_ns") or 0)
    top = run.hints[0]["title"] if run.hints else ""
    return (
        run.id,
        _when(run.time),
        run.label or "",
        format_time(wall),
        format_time(steps["median_ns"]) if steps else "",
        format_fraction(busy / window) if busy is not None and window else "",
        _clip(top, _HINT_WIDTH),
        _clip(_from(run), _FROM_WIDTH, keep_end=True),
    )


def render_run(run: StoredRun) -> str:
    """A run in full: where it came from, its summary, its hints."""
    s = run.summary
    origin = run.origin
    lines = [
        f"run {run.id}" + (f" ({run.label})" if run.label else "") + f", {_when(run.time)}",
        f"  from:     {_from(run) or 'unknown'}",
    ]
    if origin.cell_id:
        lines.append(f"  cell:     {origin.cell_id}")
    for name, value in (
        ("code hash", origin.code_hash),
        ("git", origin.git_commit),
        ("device", run.device),
        ("torch", run.torch_version),
        ("CUDA", run.cuda_version),
        ("trace", run.trace_path or "not kept (--keep-trace keeps it)"),
    ):
        if value:
            lines.append(f"  {name + ':':<9} {value}")
    lines.append(
        f"  wall:     {format_time(s['wall_ns'])}" + (" (partial)" if s["partial"] else "")
    )
    if s.get("busy_ns") is not None:
        lines.append(
            f"  GPU:      busy {format_time(s['busy_ns'])}, idle {format_time(s['idle_ns'])}"
        )
        for cause, ns in sorted(s["idle_by_cause"].items(), key=lambda kv: -kv[1]):
            if ns:
                lines.append(f"            idle {cause}: {format_time(ns)}")
    steps = s.get("steps")
    if steps:
        lines.append(
            f"  steps:    {format_count(steps['count'], 'step')}, median "
            f"{format_time(steps['median_ns'])} (p10 {format_time(steps['p10_ns'])}, p90 "
            f"{format_time(steps['p90_ns'])}; from {steps['source']})"
        )
    lines += _top("top kernels", s["top_kernels"]) + _top("top ops", s["top_ops"])
    lines.append("  hints:" if run.hints else "  hints:    none")
    lines += [f"    {i}. {_hint(h)}" for i, h in enumerate(run.hints, 1)]
    return "\n".join(lines) + "\n"


def _top(title: str, rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return []
    return [f"  {title}:"] + [
        f"    {format_time(r['total_ns']):>9}  x{r['count']:<6} {_clip(r['name'], 100)}"
        for r in rows
    ]


def _hint(hint: dict[str, Any]) -> str:
    gain = f" (gain up to {format_time(hint['gain_ns'])})" if hint.get("gain_ns") else ""
    return f"{hint['title']}{gain}"


def _from(run: StoredRun) -> str:
    origin = run.origin
    where = origin.notebook or origin.script or run.summary["source"]["path"] or ""
    return os.path.basename(where) if origin.notebook else where


def _when(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seconds))


def _clip(text: str, width: int, *, keep_end: bool = False) -> str:
    if len(text) <= width:
        return text
    return "..." + text[-(width - 3) :] if keep_end else text[: width - 3] + "..."
