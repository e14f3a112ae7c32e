"""A torch.profiler capture read as a Trace.

The capture is exported as a Chrome trace and read back by the Kineto importer, so a profile
made here and a trace shared by someone else go through exactly the same analysis.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from torch.profiler import profile as torch_profile

from gpuprofile.capture.caller_lines import (
    add_caller_lines,
    caller_lines,
    with_caller_line_column,
)
from gpuprofile.importers.kineto import load_kineto
from gpuprofile.trace.meta import RankMeta, Source, TraceMeta
from gpuprofile.trace.model import Trace


def read_back(prof: torch_profile, export: str | None, *, with_stack: bool = False) -> Trace:
    """The profiler's capture as a Trace, through the Chrome trace written to ``export`` (the
    path the user asked for, kept as its source), or to a temporary file when None. With
    stacks, each Python call gets the line it was made on (caller_lines.py)."""
    if export:
        trace = _export_and_load(prof, Path(export), with_stack, keep=True)
    else:
        with tempfile.TemporaryDirectory(prefix="gpuprofile-") as tmp:
            path = Path(tmp) / "capture.pt.trace.json"
            trace = _export_and_load(prof, path, with_stack, keep=False)
    return trace.with_meta(source=Source(format="capture", path=export))


def empty_capture(started_ns: int) -> Trace:
    """No window was recorded (fewer steps than wait + warmup): a trace with no events."""
    return Trace(
        meta=TraceMeta(
            source=Source(format="capture"),
            origin_ns=started_ns,
            ranks={0: RankMeta()},
        )
    )


def _export_and_load(prof: torch_profile, path: Path, with_stack: bool, *, keep: bool) -> Trace:
    """Export and read back; with stacks, the caller lines go into the file the user keeps
    (``keep``), or, cheaper, straight into the trace read from a temporary one."""
    prof.export_chrome_trace(str(path))
    lines = caller_lines(prof) if with_stack else {}
    if keep:
        add_caller_lines(path, lines)
    trace = load_kineto(path)
    return trace if keep else with_caller_line_column(trace, lines)
