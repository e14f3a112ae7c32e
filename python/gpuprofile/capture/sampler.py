"""A daemon thread that reads the gauge sources at a fixed interval while a cell runs.

The kernel's main thread is busy running the user's code, so everything the sampler does,
including streaming readings out (``on_sample``), happens on its own thread. Memory is bounded:
samples live in a ring buffer and the oldest are dropped (and counted) when it is full.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence

from gpuprofile.capture.sources import Source
from gpuprofile.trace.samples import Reading

THREAD_NAME = "gpuprofile-sampler"
# ~15 readings per tick on one GPU: 200k readings is 20+ minutes at 10 Hz, some 40 MB.
DEFAULT_MAX_SAMPLES = 200_000

Sample = tuple[int, Reading]  # (time.time_ns(), reading)
OnSample = Callable[[int, list[Reading]], None]


class Sampler:
    def __init__(
        self,
        sources: Sequence[Source],
        interval_s: float = 0.1,
        max_samples: int = DEFAULT_MAX_SAMPLES,
        on_sample: OnSample | None = None,
    ) -> None:
        if interval_s <= 0:
            raise ValueError(f"interval_s must be positive, got {interval_s}")
        if max_samples < 1:
            raise ValueError(f"max_samples must be at least 1, got {max_samples}")
        self.sources = list(sources)
        self.interval_s = interval_s
        self.max_samples = max_samples
        self.on_sample = on_sample
        self.dropped = 0
        self.ticks = 0
        self.callback_error: str | None = None
        self._samples: deque[Sample] = deque(maxlen=max_samples)
        self._missing: dict[str, str] = {}
        self._active: list[Source] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._first = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def samples(self) -> list[Sample]:
        """A copy, oldest first; safe to take while the thread runs."""
        with self._lock:
            return list(self._samples)

    @property
    def missing(self) -> dict[str, str]:
        """{source name: why it gave nothing or stopped}, plus "source: part" entries for the
        parts of working sources that cannot be read. Complete once stop() has returned."""
        with self._lock:
            out = dict(self._missing)
        for source in self.sources:
            for part, reason in (getattr(source, "notes", None) or {}).items():
                out.setdefault(f"{source.name}: {part}", reason)
        return out

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, first_reading_timeout_s: float = 2.0) -> None:
        """Start the thread and wait (up to the timeout) for its first reading: a capture
        then always has the values from its start, even when its code runs for under one
        interval. Sources are opened on the thread, so a hung driver cannot hang the caller."""
        if self._thread is not None:
            raise RuntimeError("a Sampler runs once; make a new one")
        self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)
        self._thread.start()
        self._first.wait(first_reading_timeout_s)

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop and join the thread; at once if it is between readings. Safe to call twice."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)
            if thread.is_alive():
                with self._lock:
                    self._missing.setdefault(
                        "sampler", f"a source read hung: thread still running after {timeout_s} s"
                    )

    def _run(self) -> None:
        try:
            self._run_ticks()
        finally:
            self._first.set()
            for source in self.sources:
                close = getattr(source, "close", None)
                if close is not None:
                    with contextlib.suppress(Exception):
                        close()

    def _run_ticks(self) -> None:
        self._open()
        next_tick = time.monotonic()
        while not self._stop.is_set():
            self._tick()
            # Ticks on a fixed schedule, not interval after each read: slow reads do not
            # stretch the period. A late tick skips ahead instead of bursting to catch up.
            next_tick += self.interval_s
            now = time.monotonic()
            if next_tick < now:
                next_tick = now
            if self._stop.wait(next_tick - now):
                break
        self._tick()  # one reading at the end, so the last values reach the trace

    def _open(self) -> None:
        for source in self.sources:
            try:
                reason = source.unavailable()
            except Exception as error:
                reason = f"cannot start: {type(error).__name__}: {error}"
            if reason is None:
                self._active.append(source)
            else:
                with self._lock:
                    self._missing[source.name] = reason

    def _tick(self) -> None:
        now = time.time_ns()
        readings: list[Reading] = []
        for source in list(self._active):
            try:
                got = source.read()
                failed = getattr(source, "failed", None)
            except Exception as error:
                got, failed = [], f"read failed: {type(error).__name__}: {error}"
            if failed:
                self._active.remove(source)
                with self._lock:
                    self._missing[source.name] = f"{failed} (after {self.ticks} samples)"
            readings.extend(got)
        self.ticks += 1
        self._first.set()
        with self._lock:
            overflow = len(self._samples) + len(readings) - self.max_samples
            if overflow > 0:
                self.dropped += overflow
            self._samples.extend((now, reading) for reading in readings)
        if self.on_sample is not None and readings:
            try:
                self.on_sample(now, readings)
            except Exception as error:
                # A broken consumer must not stop the sampling; it is told once and dropped.
                self.callback_error = f"{type(error).__name__}: {error}"
                self.on_sample = None
