"""The recorded windows of a capture made with a step schedule (--steps).

Between windows nothing was recorded, so that time is neither wall time nor GPU idle time:
spans are measured window by window and summed (HTA's GPU window, applied to each recorded
window), and no idle gap reaches from one window into the next. A trace without windows (every
other trace) was recorded whole.
"""

from __future__ import annotations

import numpy as np

from gpuprofile.trace.model import Trace


def recorded_windows(trace: Trace) -> np.ndarray | None:
    """(k, 2) int64 [start, end) of each recorded window, in time order; None when the trace
    was recorded whole (``meta.windows`` is empty). Not memoised: sorting the few windows a
    schedule records costs less than a cache lookup."""
    spans = [(window.start_ns, window.end_ns) for window in trace.meta.windows]
    if not spans:
        return None
    return np.array(sorted(spans), dtype=np.int64).reshape(-1, 2)


def _window_of(windows: np.ndarray, time: np.ndarray) -> np.ndarray:
    return np.searchsorted(windows[:, 0], time, side="right") - 1


def recorded_span(trace: Trace, start: np.ndarray, end: np.ndarray) -> int:
    """From the first interval's start to the last one's end, window by window, summed (0 for
    no intervals)."""
    if len(start) == 0:
        return 0
    windows = recorded_windows(trace)
    if windows is None:
        return int(end.max() - start.min())
    window = np.maximum(_window_of(windows, start), 0)
    first = np.full(len(windows), np.iinfo(np.int64).max)
    last = np.full(len(windows), np.iinfo(np.int64).min)
    np.minimum.at(first, window, start)
    np.maximum.at(last, window, end)
    seen = last >= first
    return int((last[seen] - first[seen]).sum())


def recorded_ns(trace: Trace, start: float, end: float) -> float:
    """How much of [start, end] was recorded: all of it for a whole recording, else its overlap
    with the recorded windows."""
    windows = recorded_windows(trace)
    if windows is None:
        return max(0.0, end - start)
    inside = np.clip(windows[:, 1], start, end) - np.clip(windows[:, 0], start, end)
    return float(inside.sum())


def within_one_window(trace: Trace, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per interval [start, end]: True when it lies within one recorded window (always, for a
    whole recording), so the time between two windows is not taken for an idle gap."""
    windows = recorded_windows(trace)
    if windows is None:
        return np.ones(len(start), dtype=bool)
    window = _window_of(windows, start)
    return np.asarray((window >= 0) & (end <= windows[np.maximum(window, 0), 1]))
