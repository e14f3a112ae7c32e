"""An ``nsys stats`` CSV of NVTX ranges (the ``nvtx_pushpop_trace`` / ``nvtx_startend_trace``
reports: ``Start (ns),End (ns),...,Name,PID,TID,...``) as a CPU-only Trace of annotations.

A stats report is a summary nsys derives from its report: it holds no GPU events, so the
Trace's GPU tables are empty and a note says why.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from gpuprofile.errors import TraceFormatError
from gpuprofile.importers.nsys_autonvtx import autonvtx_modules
from gpuprofile.importers.nsys_nvtx import torch_nvtx
from gpuprofile.trace.links import with_nesting
from gpuprofile.trace.meta import RankMeta, Source, TraceMeta
from gpuprofile.trace.model import NO_ID, Trace, make_table

START, END, DURATION, NAME, PID, TID = (
    "Start (ns)", "End (ns)", "Duration (ns)", "Name", "PID", "TID",
)  # fmt: skip
NOTE = (
    "An nsys stats CSV holds NVTX ranges only, no GPU events: kernels, copies and runtime calls "
    "are in the Nsight Systems report it came from (export that with `nsys export --type "
    "sqlite` and load the .sqlite)."
)


def load_nsys_stats(path: Path) -> Trace:
    """Read an nsys stats CSV of NVTX ranges.

    Parameters:
        path: the CSV (``nsys stats --report nvtx_pushpop_trace --format csv``).

    Returns:
        A Trace whose ops are the ranges (category "user_annotation", nested per thread), on
        rank 0.

    Raises:
        TraceFormatError: the file is not UTF-8 text, lacks a column the ranges need, or a
            number does not parse (the line and column are named).
    """
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TraceFormatError(path, f"not UTF-8 text (byte {exc.start})") from None
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None:
        raise TraceFormatError(path, "file is empty")
    header = [h.strip() for h in header]
    column = {h: i for i, h in enumerate(header)}
    if START not in column or NAME not in column or (END not in column and DURATION not in column):
        raise TraceFormatError(
            path,
            "an nsys stats CSV gpuprofile does not read: it reads the NVTX range reports "
            f"(nvtx_pushpop_trace, nvtx_startend_trace), whose columns include {START!r}, "
            f"{END!r} and {NAME!r}; this one has {', '.join(map(repr, header[:8]))}",
        )
    starts: list[int] = []
    ends: list[int] = []
    names: list[str] = []
    pids: list[int] = []
    tids: list[int] = []
    for line, row in enumerate(reader, start=2):
        if not any(cell.strip() for cell in row):
            continue
        start = _number(path, row, column, START, line)
        if END in column:
            end = _number(path, row, column, END, line)
        else:
            end = start + _number(path, row, column, DURATION, line)
        starts.append(start)
        ends.append(max(end, start))
        names.append(row[column[NAME]] if column[NAME] < len(row) else "")
        pids.append(_number(path, row, column, PID, line) if PID in column else NO_ID)
        tids.append(_number(path, row, column, TID, line) if TID in column else NO_ID)
    start_ns = np.asarray(starts, np.int64)
    t0 = int(start_ns.min()) if len(start_ns) else 0
    columns: dict[str, Any] = {
        "pid": np.asarray(pids, np.int64),
        "tid": np.asarray(tids, np.int64),
        "name": names,
        "category": ["user_annotation"] * len(starts),
        "start_ns": start_ns - t0,
        "dur_ns": np.asarray(ends, np.int64) - start_ns,
    }
    # Torch's ranges (emit_nvtx, pyprof, autonvtx) as the SQLite reader reads them.
    skipped: Counter[str] = Counter()
    columns["name"] = autonvtx_modules(columns["name"], columns)
    columns, _ = torch_nvtx(columns, columns["pid"], skipped)
    n = len(columns["name"])
    columns.update(id=np.arange(n, dtype=np.int64), rank=np.zeros(n, np.int32))
    ops = make_table("ops", columns)
    meta = TraceMeta(
        source=Source(format="nsys", version="stats csv", path=str(path), files=(str(path),)),
        origin_ns=t0,
        ranks={0: RankMeta(files=(str(path),), skipped=dict(skipped))},
        notes=(NOTE,),
    )
    return Trace(ops=with_nesting(ops), meta=meta)


def _number(path: Path, row: list[str], column: dict[str, int], name: str, line: int) -> int:
    index = column[name]
    cell = row[index].strip().replace(",", "") if index < len(row) else ""
    try:
        return int(cell)
    except ValueError:
        try:
            return int(float(cell))
        except (ValueError, OverflowError):
            raise TraceFormatError(
                path, f"line {line}, column {name!r}: {cell or '(empty)'!r} is not a number"
            ) from None
