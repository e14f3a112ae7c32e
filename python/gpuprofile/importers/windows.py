"""The recorded windows of a --steps capture, read into one Trace.

While the capture runs, a window is only written out (torch's own export) and scanned for its
extent (``scan_extent``); it is read with the others later: by the live view's thread while the
cell runs, and all at once when the capture ends, in one pass over all their events (a run of
many small windows then costs what one file of as many events does, not a fixed cost per
window). No torch here: the widget reads windows too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gpuprofile.errors import GpuprofileError
from gpuprofile.importers.kineto import load_kineto, load_kineto_windows
from gpuprofile.trace.merge import merge
from gpuprofile.trace.meta import Source, Window
from gpuprofile.trace.model import Trace


@dataclass(frozen=True)
class RecordedWindow:
    """A window's file, and the window (its times absolute, on the capture's clock)."""

    path: Path
    window: Window


def read_windows(recorded: Sequence[RecordedWindow], export: str | None = None) -> Trace:
    """The windows (in time order) as one capture Trace. Should a file not read, the others
    are read window by window and the lost ones are listed in ``meta.errors``."""
    if not recorded:
        raise ValueError("no windows to read")
    source = Source(format="capture", path=export)
    try:
        trace = load_kineto_windows([r.path for r in recorded])
    except (GpuprofileError, OSError):
        return _read_one_by_one(recorded, source)
    return _placed(trace, recorded, source)


def _placed(trace: Trace, recorded: Sequence[RecordedWindow], source: Source) -> Trace:
    """The trace of these windows, knowing them (on its own time base) and its source."""
    windows = tuple(r.window.shifted(-trace.meta.origin_ns) for r in recorded)
    return trace.with_meta(source=source, windows=windows)


def _read_one_by_one(recorded: Sequence[RecordedWindow], source: Source) -> Trace:
    parts, errors = [], []
    for r in recorded:
        try:
            parts.append(_placed(load_kineto(r.path), [r], source))
        except (GpuprofileError, OSError) as error:
            errors.append(f"window {r.window.index}: {type(error).__name__}: {error}")
    if not parts:
        raise GpuprofileError(f"no recorded window could be read: {'; '.join(errors)}")
    trace = merge(parts)
    return trace.with_meta(errors=(*trace.meta.errors, *errors))
