"""A --steps capture, window by window (a torch.profiler schedule).

torch hands each recorded window to ``on_trace_ready`` on the thread that called
``prof.step()``, the cell's: there it is written out, scanned for its extent and shown to
``on_window`` (the live view reads it on a thread of its own); the kept windows are read into
one Trace when the capture ends (importers/windows.py).
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from torch.profiler import ProfilerAction
from torch.profiler import profile as torch_profile
from torch.profiler import schedule as torch_schedule

from gpuprofile.capture.guard import deferred_interrupt
from gpuprofile.capture.kineto_chatter import KinetoChatter
from gpuprofile.capture.options import WARMUP, StepSchedule
from gpuprofile.capture.read_back import empty_capture
from gpuprofile.capture.steps import StepCounter
from gpuprofile.errors import GpuprofileError
from gpuprofile.importers.kineto import scan_extent
from gpuprofile.importers.windows import RecordedWindow, read_windows
from gpuprofile.trace.meta import Dropped, Schedule, Window
from gpuprofile.trace.model import Trace

RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
# Each recorded window as soon as it is written, on the cell's thread (keep it short).
OnWindow = Callable[[RecordedWindow], None]


class WindowSteps:
    """Moves the profiler's schedule on at each step, quietly: each window starting afresh is
    the point of reading windows (memory stays bounded), so torch's note that a cycle's events
    are cleared is not news to the user, nor is Kineto's start and stop chatter; an interrupt
    inside a transition would leave torch's schedule half moved (its stop then fails). Tells
    ``on_recording`` when a window starts recording (before the step that starts it) and
    stops (after the step that hands it over)."""

    def __init__(
        self,
        prof: torch_profile,
        chatter: KinetoChatter,
        on_recording: Callable[[bool], None] | None = None,
    ) -> None:
        self.prof = prof
        self.chatter = chatter
        self.on_recording = on_recording
        self.recording = False

    def __call__(self) -> None:
        prof = self.prof
        action = prof.schedule(prof.step_num + 1)
        recording_next = action in RECORDING
        if recording_next and not self.recording and self.on_recording is not None:
            self.on_recording(True)
        # Most steps stay in their phase: torch starts, stops or hands over nothing, so there is
        # no chatter and no warning to hold back (about 15 us a step saved).
        quiet = action is not prof.current_action or action is ProfilerAction.RECORD_AND_SAVE
        try:
            with (
                self.chatter.dropped() if quiet else contextlib.nullcontext(),
                deferred_interrupt(raise_after=True),
                warnings.catch_warnings(),
            ):
                warnings.filterwarnings("ignore", message="Warning: Profiler clears events")
                prof.step()
        finally:
            if self.recording and not recording_next and self.on_recording is not None:
                self.on_recording(False)
            self.recording = recording_next


def torch_schedule_of(steps: StepSchedule) -> Any:
    wait, active, repeat = steps
    return torch_schedule(wait=wait, warmup=WARMUP, active=active, repeat=repeat)


def schedule_of(steps: StepSchedule | None) -> Schedule | None:
    if steps is None:
        return None
    wait, active, repeat = steps
    return Schedule(wait=wait, warmup=WARMUP, active=active, repeat=repeat)


class WindowRecorder:
    """Takes each recorded window as the profiler hands it over (``on_trace_ready``, on the
    thread that called ``prof.step()``: the cell's): writes it out and scans its extent, and
    nothing more; the windows are read once, together, when the capture ends."""

    def __init__(
        self,
        export: str | None,
        max_events: int,
        on_window: OnWindow | None,
    ):
        self.export = export
        self.max_events = max_events
        self.on_window = on_window
        self.counter: StepCounter | None = None
        self.kept: list[RecordedWindow] = []
        self.kept_events = 0
        self.index = 0
        self.dropped_windows = 0
        self.dropped_events = 0
        self.dropped_uncounted = 0  # windows whose events torch could not count
        self.errors: list[str] = []
        self._scratch: str | None = None

    def ready(self, prof: torch_profile) -> None:
        index = self.index
        self.index += 1
        if self.kept and self.kept_events > self.max_events:
            # Not written out: past the cap a window costs no file and no reading, only the
            # count of what it held (torch's own count of its events, about 1 us each).
            self.dropped_windows += 1
            results = prof.profiler.kineto_results if prof.profiler is not None else None
            try:
                self.dropped_events += len(results.events())  # type: ignore[union-attr]
            except Exception:  # a count only; torch's internals may move
                self.dropped_uncounted += 1
            return
        # A failure here would surface inside the user's optimizer.step(): record it instead.
        try:
            path = self._path(index)
            prof.export_chrome_trace(str(path))
            extent = scan_extent(path)
        except Exception as error:
            self.errors.append(f"window {index}: {type(error).__name__}: {error}")
            return
        if extent is None:  # nothing recorded in it: nothing to place or show
            path.unlink(missing_ok=True)
            return
        events, start_ns, end_ns = extent
        window = Window(
            index=index,
            start_ns=start_ns,
            end_ns=end_ns,
            step=self.counter.count if self.counter is not None else None,
            events=events,
            written_ns=time.time_ns(),
        )
        recorded = RecordedWindow(path, window)
        self.kept.append(recorded)
        self.kept_events += events
        if self.on_window is not None:
            try:
                self.on_window(recorded)
            except Exception as error:
                self.errors.append(f"showing window {index}: {type(error).__name__}: {error}")

    def result(self, started_ns: int) -> Trace:
        """The kept windows read into one Trace (an empty one, saying why, when none reads)."""
        trace = empty_capture(started_ns)
        lost: list[str] = []
        if self.kept:
            try:
                trace = read_windows(self.kept, self.export)
            except GpuprofileError as error:
                lost.append(str(error))
        dropped = (
            Dropped(
                windows=self.dropped_windows,
                events=self.dropped_events if not self.dropped_uncounted else None,
                max_events=self.max_events,
            )
            if self.dropped_windows
            else None
        )
        # The windows lost while the cell ran come before those lost reading them.
        return trace.with_meta(
            dropped=dropped,
            errors=(*self.errors, *trace.meta.errors, *lost),
        )

    def discard(self) -> None:
        """Remove the windows' files: once the capture has ended, however it ended (an
        --export is one file of its own, written before)."""
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def _path(self, index: int) -> Path:
        if self._scratch is None:
            self._scratch = tempfile.mkdtemp(prefix="gpuprofile-windows-")
        return Path(self._scratch) / f"window{index}.pt.trace.json"
