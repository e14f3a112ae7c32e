"""The recorded windows of a --steps capture, and reading them into one Trace.

On the cell's thread a window is only written out (torch's own export) and scanned for its
extent; it is read with the others later: by the live view's thread while the cell runs, and
all at once when the capture ends, in one pass over all their events (a run of many small
windows then costs what one file of as many events does, not a fixed cost per window). No torch
here: the widget reads windows too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuprofile.capture.chunks import merge_chunks
from gpuprofile.errors import GpuprofileError
from gpuprofile.importers.kineto import load_kineto, load_kineto_windows
from gpuprofile.trace.model import Trace


@dataclass(frozen=True)
class Window:
    index: int
    path: Path
    step: int | None  # the step count when the profiler handed the window over
    written_ns: int  # time.time_ns() then
    events: int  # timeline events (ops, runtime calls, kernels, memcpy, memset)
    start_ns: int  # absolute: the first event's start (the Trace's origin_ns for this file)
    end_ns: int  # absolute: the last event's end

    def entry(self, origin_ns: int) -> dict[str, Any]:
        """Its ``meta["chunks"]`` entry on a trace whose time starts at ``origin_ns``."""
        return {
            "index": self.index,
            "origin_ns": self.start_ns,
            "events": self.events,
            "step": self.step,
            "written_ns": self.written_ns,
            # The recorded window; the analyses leave out the time between windows.
            "start_ns": self.start_ns - origin_ns,
            "end_ns": self.end_ns - origin_ns,
        }


def read_windows(windows: Sequence[Window], export: str | None = None) -> Trace:
    """The windows (in time order) as one capture Trace. Should a file not read, the others
    are read window by window and the lost ones are listed in ``meta["capture_errors"]``."""
    if not windows:
        raise ValueError("no windows to read")
    try:
        trace = load_kineto_windows([w.path for w in windows])
        origin = int(trace.meta["origin_ns"])
        trace.meta["chunks"] = [w.entry(origin) for w in windows]
    except (GpuprofileError, OSError):
        trace = _read_one_by_one(windows)
    trace.meta["source"] = {"format": "capture", "path": export}
    return trace


def _read_one_by_one(windows: Sequence[Window]) -> Trace:
    chunks, errors = [], []
    for window in windows:
        try:
            chunk = load_kineto(window.path)
        except (GpuprofileError, OSError) as error:
            errors.append(f"chunk {window.index}: {type(error).__name__}: {error}")
            continue
        chunk.meta["chunks"] = [window.entry(int(chunk.meta["origin_ns"]))]
        chunks.append(chunk)
    if not chunks:
        raise GpuprofileError(f"no recorded window could be read: {'; '.join(errors)}")
    trace = merge_chunks(chunks)
    trace.meta["capture_errors"] = errors
    return trace
