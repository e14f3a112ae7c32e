"""Who owns a set of events: the modules (Analysis.modules) and the user's lines
(Analysis.sources) their time falls in, largest share first. Hints, roofline points and top
ops name them so a finding points at the program, not only at kernels.

Ops and kernels carry their module and line; a runtime call takes those of the kernels it
launched (same rank and correlation). Other tables (copies, allocator events) own none here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from gpuprofile.analyses.frames import SourceLine
from gpuprofile.trace.codes import sums_by_key

if TYPE_CHECKING:
    from gpuprofile.analyses.context import Analysis

# How many modules or lines a finding names.
MAX_OWNERS = 3


def owners(
    analysis: Analysis, parts: Iterable[tuple[str, np.ndarray, np.ndarray | None]]
) -> tuple[list[str], list[SourceLine]]:
    """The module paths and lines that own the most of the events' time, at most MAX_OWNERS
    each. parts: (table, event ids, time per event or None for the events' durations)."""
    modules = analysis.modules
    sources = analysis.sources
    module_time: dict[int, float] = {}
    line_time: dict[int, float] = {}
    for table, ids, weights in parts:
        rows = _rows(analysis, table, np.asarray(ids, np.int64))
        if table == "runtime":
            rows, weights, table = _launched(analysis, rows), None, "kernels"
        if table not in ("ops", "kernels") or not len(rows):
            continue
        found = rows >= 0
        frame = analysis.trace.table(table)
        time = (
            frame["dur_ns"].to_numpy()[rows[found]]
            if weights is None
            else np.asarray(weights, np.float64)[found]
        )
        module = (modules.op_module if table == "ops" else modules.kernel_module)[rows[found]]
        line = (sources.op_source if table == "ops" else sources.kernel_source)[rows[found]]
        _add(module_time, module, time)
        _add(line_time, line, time)
    paths = [modules.paths[m] for m in _largest(module_time)]
    lines = [sources.lines[i] for i in _largest(line_time)]
    return paths, lines


def _rows(analysis: Analysis, table: str, ids: np.ndarray) -> np.ndarray:
    if table not in ("ops", "kernels", "runtime") or not len(ids):
        return np.zeros(0, np.int64)
    return np.asarray(analysis.id_index(table).get_indexer(pd.Index(ids)), np.int64)


def _launched(analysis: Analysis, rows: np.ndarray) -> np.ndarray:
    """The kernel rows launched by these runtime rows (same rank and correlation)."""
    rows = rows[rows >= 0]
    runtime, kernels = analysis.trace.runtime, analysis.trace.kernels
    if not len(rows) or not len(kernels):
        return np.zeros(0, np.int64)
    wanted = pd.MultiIndex.from_arrays(
        [runtime["rank"].to_numpy()[rows], runtime["correlation"].to_numpy()[rows]]
    )
    keys = pd.MultiIndex.from_arrays(
        [kernels["rank"].to_numpy(), kernels["correlation"].to_numpy()]
    )
    return np.flatnonzero(keys.isin(wanted))


def _add(total: dict[int, float], owner: np.ndarray, time: np.ndarray) -> None:
    known = owner >= 0
    if not known.any():
        return
    which, sums = sums_by_key(owner[known], time[known])
    for w, s in zip(which.tolist(), sums.tolist(), strict=True):
        total[w] = total.get(w, 0.0) + s


def _largest(total: dict[int, float]) -> list[int]:
    """The owners with the most time, at most MAX_OWNERS; ties by index (first seen)."""
    return sorted(total, key=lambda k: (-total[k], k))[:MAX_OWNERS]


def source_refs(lines: Iterable[SourceLine]) -> list[dict[str, object]]:
    """Lines as the report writes them (schema.SourceRef)."""
    return [{"file": s.file, "line": s.line, "function": s.function} for s in lines]
