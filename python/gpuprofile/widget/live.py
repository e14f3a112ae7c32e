"""A running cell's readings, step count and recorded steps streamed to its widget.

The kernel's main thread is busy running the cell, so readings go out from the sampler thread
(ipykernel sends comm messages from any thread through its IOPub thread). Readings and step
counts are each sent at most once per ``min_gap_s``, so a fast sampler or a fast loop does not
flood the browser, and a loop stepping every millisecond does not crowd the readings out.

Recorded windows (``--steps``) are read, merged and analysed on a thread of their own, not on the
cell's: the cell only hands each window over. Windows that arrive while a refill runs wait and
go into the next one together, and after each refill the thread rests so that refills take at
most ``busy_share`` of the time: a long run with many windows pays a bounded share of one core
for its live view, instead of an analysis of everything so far at every window.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any, Generic, TypeVar

from gpuprofile.hardware.model import Hardware
from gpuprofile.importers.windows import read_windows
from gpuprofile.trace.merge import merge
from gpuprofile.trace.model import Trace
from gpuprofile.trace.samples import Reading
from gpuprofile.widget.widget import show_trace

W = TypeVar("W")
# While the cell runs, the kernel's main thread answers no request of the browser (detail
# windows, an event's details): a merged overview could not be zoomed into, nor a selected event
# found again in it, until the cell ends. So refills cross whole up to this many events (about
# 17 bytes each); past it, as an overview.
LIVE_DETAIL_THRESHOLD = 1_000_000


class WindowRefills(Generic[W]):
    """Shows the windows recorded so far through ``fill(merged)``, off the caller's thread:
    the windows that came since the last refill are read together by ``read`` (one Trace) and
    merged into what is shown."""

    def __init__(
        self,
        fill: Callable[[Trace], None],
        read: Callable[[Sequence[W]], Trace],
        busy_share: float = 0.2,
    ) -> None:
        if not 0 < busy_share <= 1:
            raise ValueError(f"busy_share {busy_share}: must be in (0, 1]")
        self._fill = fill
        self._read = read
        self._rest_per_busy = (1 - busy_share) / busy_share
        self._waiting: list[W] = []
        self._shown: Trace | None = None
        self._wake = threading.Condition()
        self._closed = False
        self._recording = False  # a window is recording: no refill may run
        self._busy = False  # a refill is running
        self._thread: threading.Thread | None = None
        self.refills = 0
        self.busy_s = 0.0
        self.errors: list[str] = []

    def add(self, window: W) -> None:
        with self._wake:
            if self._closed:
                return
            self._waiting.append(window)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="gpuprofile-live-windows", daemon=True
                )
                self._thread.start()
            self._wake.notify()

    def hold(self, recording: bool) -> None:
        """A window starts (True) or stops (False) recording. While one records no refill
        runs, and a refill under way is waited for before recording starts: the live view's
        work (Python, holding the interpreter) must not slow down the steps being measured."""
        with self._wake:
            if recording:
                self._wake.wait_for(lambda: self._closed or not self._busy)
            self._recording = recording
            self._wake.notify_all()

    def close(self) -> None:
        """No more refills; returns once a refill under way has ended (so a later fill of the
        same widget is never overwritten by this thread)."""
        with self._wake:
            self._closed = True
            self._wake.notify_all()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        rest_until = 0.0
        while True:
            with self._wake:
                self._wake.wait_for(lambda: self._closed or bool(self._waiting))
                # Resting still ends at once when the cell ends.
                self._wake.wait_for(lambda: self._closed, max(0.0, rest_until - time.monotonic()))
                self._wake.wait_for(lambda: self._closed or not self._recording)
                if self._closed:
                    return
                new, self._waiting = self._waiting, []
                self._busy = True
            started = time.monotonic()
            try:
                # Kept even if fill() fails: the next refill still holds these windows. (Should
                # the merge itself fail, they are lost to the live view; the profile has them.)
                read = self._read(new)
                self._shown = merge([self._shown, read]) if self._shown else read
                self._fill(self._shown)
                self.refills += 1
            except Exception as error:  # the cell must run on; the error is shown in the panel
                self.errors.append(f"showing recorded steps: {type(error).__name__}: {error}")
            took = time.monotonic() - started
            self.busy_s += took
            rest_until = time.monotonic() + took * self._rest_per_busy
            with self._wake:
                self._busy = False
                self._wake.notify_all()


class LiveFeed:
    def __init__(
        self,
        widget: Any,
        min_gap_s: float = 0.2,
        busy_share: float = 0.2,
        read: Callable[[Sequence[Any]], Trace] = read_windows,
    ) -> None:
        self.widget = widget
        self.read = read  # recorded windows -> one Trace (tests show Traces as they are)
        self.min_gap_s = min_gap_s
        self.busy_share = busy_share
        self._started = time.monotonic()
        self._last: dict[str, float] = {}
        self._readings: dict[tuple[str, int], Reading] = {}
        self._lock = threading.Lock()
        self.steps = 0
        self.refills: WindowRefills[Any] | None = None
        self._cell_ended = False
        self._elapsed_s: float | None = None

    def hooks(self, hardware: Hardware | None) -> dict[str, Any]:
        """capture()'s callbacks that feed this panel: readings, steps, recorded windows."""
        return {
            "on_sample": self,
            "on_step": self.set_steps,
            "on_window": lambda window: self.show_window(window, hardware),
            "on_recording": self.recording,
        }

    def start(self) -> None:
        self.widget.live = {
            "running": True, "elapsed_s": 0.0, "steps": 0, "readings": [], "missing": {},
        }  # fmt: skip

    def __call__(self, time_ns: int, readings: list[Reading], missing: dict[str, str]) -> None:
        # Each gauge keeps its latest value: a sample may lack one (a CPU share is given only
        # once enough time has passed to measure it).
        for reading in readings:
            self._readings[(reading.name, reading.device)] = reading
        # Built only for the updates that go out, not for every sample the gap drops.
        self._update(
            "readings",
            lambda: {
                "readings": [asdict(r) for r in self._readings.values()],
                "missing": dict(missing),
            },
        )

    def set_steps(self, count: int) -> None:
        """gpuprofile.step() or an optimizer step: the count moves even with the sampler off."""
        self.steps = count
        self._update("steps")

    def show_window(self, window: Any, hardware: Hardware | None) -> None:
        """A recorded window: the windows so far reach the widget, read and analysed, while
        the cell runs on (see WindowRefills). The window torch hands over when the profiler
        stops comes after the cell's end: the profile shows it, not a refill."""
        if self._cell_ended:
            return
        if self.refills is None:

            def fill(trace: Trace) -> None:
                show_trace(self.widget, trace, hardware, detail_threshold=LIVE_DETAIL_THRESHOLD)

            self.refills = WindowRefills(fill, self.read, self.busy_share)
        self.refills.add(window)

    def recording(self, on: bool) -> None:
        """The capture starts (True) or stops (False) recording a window (see
        WindowRefills.hold); called on the cell's thread."""
        if self.refills is not None:
            self.refills.hold(on)

    def cell_ended(self) -> None:
        """The cell's code is done: the elapsed time stops, the panel says the profile is being
        built, and no more live refills (the profile replaces them)."""
        with self._lock:
            if not self._cell_ended:
                self._cell_ended = True
                self._elapsed_s = round(time.monotonic() - self._started, 3)
                self.widget.live = {
                    **(self.widget.live or {}),
                    "running": False,
                    "building": True,
                    "elapsed_s": self._elapsed_s,
                    "steps": self.steps,
                }
        if self.refills is not None:
            self.refills.close()

    def _update(self, what: str, fields: Callable[[], dict[str, Any]] = dict) -> None:
        now = time.monotonic()
        with self._lock:
            if self._cell_ended or now - self._last.get(what, -float("inf")) < self.min_gap_s:
                return
            self._last[what] = now
            self.widget.live = {
                **(self.widget.live or {}),
                **fields(),
                "running": True,
                "elapsed_s": round(now - self._started, 3),
                "steps": self.steps,
            }

    def finish(self) -> None:
        """The cell ended (or raised): no more updates; the panel says it finished, and what
        went wrong showing recorded steps, if anything did."""
        self.cell_ended()
        with self._lock:
            live = dict(self.widget.live or {})
            live.update(running=False, building=False, elapsed_s=self._elapsed_s, steps=self.steps)
            if self.refills is not None and self.refills.errors:
                live["errors"] = list(self.refills.errors)
            self.widget.live = live
