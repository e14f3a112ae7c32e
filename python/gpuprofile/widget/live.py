"""A running cell's readings, step count and recorded steps streamed to its widget.

The kernel's main thread is busy running the cell, so readings go out from the sampler thread
(ipykernel sends comm messages from any thread through its IOPub thread). Updates are spaced at
least ``min_gap_s`` apart so a fast sampler or a fast loop does not flood the browser.
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict
from typing import Any

from gpuprofile.capture.sources import Reading
from gpuprofile.hardware.model import Hardware
from gpuprofile.trace.model import Trace


class LiveFeed:
    def __init__(self, widget: Any, min_gap_s: float = 0.2) -> None:
        self.widget = widget
        self.min_gap_s = min_gap_s
        self._started = time.monotonic()
        self._last = -float("inf")
        self._lock = threading.Lock()
        self._finished = False
        self.steps = 0

    def start(self) -> None:
        self.widget.live = {
            "running": True, "elapsed_s": 0.0, "steps": 0, "readings": [], "missing": {},
        }  # fmt: skip

    def __call__(self, time_ns: int, readings: list[Reading], missing: dict[str, str]) -> None:
        self._update(readings=[asdict(r) for r in readings], missing=dict(missing))

    def set_steps(self, count: int) -> None:
        """gpuprofile.step() or an optimizer step: the count moves even with the sampler off."""
        self.steps = count
        self._update()

    def show_chunk(self, trace: Trace, hardware: Hardware | None) -> None:
        """The steps recorded so far, analysed, in the widget while the cell runs on."""
        from gpuprofile.result import Profile

        Profile(trace, hardware=hardware).fill_widget(self.widget)

    def _update(self, **fields: Any) -> None:
        now = time.monotonic()
        with self._lock:
            if self._finished or now - self._last < self.min_gap_s:
                return
            self._last = now
            self.widget.live = {
                **(self.widget.live or {}),
                **fields,
                "running": True,
                "elapsed_s": round(now - self._started, 3),
                "steps": self.steps,
            }

    def finish(self) -> None:
        """The cell ended (or raised): no more updates; the panel says it finished."""
        with self._lock:
            self._finished = True
            live = dict(self.widget.live or {})
            live.update(
                running=False,
                elapsed_s=round(time.monotonic() - self._started, 3),
                steps=self.steps,
            )
            self.widget.live = live
