"""A running cell's readings streamed to its widget, from the sampler's thread.

The kernel's main thread is busy running the cell, so updates go out from the sampler thread
(ipykernel sends comm messages from any thread through its IOPub thread). Updates are spaced at
least ``min_gap_s`` apart so a fast sampler does not flood the browser.
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict
from typing import Any

from gpuprofile.capture.sources import Reading


class LiveFeed:
    def __init__(self, widget: Any, min_gap_s: float = 0.2) -> None:
        self.widget = widget
        self.min_gap_s = min_gap_s
        self._started = time.monotonic()
        self._last = -float("inf")
        self._lock = threading.Lock()
        self._finished = False

    def start(self) -> None:
        self.widget.live = {"running": True, "elapsed_s": 0.0, "readings": [], "missing": {}}

    def __call__(self, time_ns: int, readings: list[Reading], missing: dict[str, str]) -> None:
        now = time.monotonic()
        with self._lock:
            if self._finished or now - self._last < self.min_gap_s:
                return
            self._last = now
            self.widget.live = {
                "running": True,
                "elapsed_s": round(now - self._started, 3),
                "readings": [asdict(r) for r in readings],
                "missing": dict(missing),
            }

    def finish(self) -> None:
        """The cell ended (or raised): no more updates; the panel says it finished."""
        with self._lock:
            self._finished = True
            live = dict(self.widget.live or {})
            live.update(running=False, elapsed_s=round(time.monotonic() - self._started, 3))
            self.widget.live = live
