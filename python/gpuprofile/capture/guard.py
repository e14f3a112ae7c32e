"""Keeping torch's profiler consistent while a capture records: another profiler started inside
the block is refused, and a kernel interrupt waits until a profiler transition is done.

torch (2.13) lets a second profiler start over a running one: its stop then ends the first
one's session, and exporting the first one's capture crashes the process (a segfault, the
user's kernel gone). Every torch profiler (torch.profiler.profile, torch.autograd.profiler)
prepares through ``torch.autograd.profiler.profile._prepare_trace``, so the check sits there.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

import torch
from torch.autograd import profiler as autograd_profiler

from gpuprofile.errors import ProfilerBusyError


def profiler_running() -> bool:
    # torch's C++ state, not only its Python flag, which an interrupted stop can leave set.
    return bool(autograd_profiler._is_profiler_enabled) and bool(
        torch._C._autograd._profiler_enabled()
    )


@contextlib.contextmanager
def refuse_other_profilers() -> Iterator[None]:
    """Within the block, a profiler that starts while one records raises ProfilerBusyError.
    The capture's own windows (a schedule) each start after the one before has stopped."""
    original: Any = autograd_profiler.profile._prepare_trace

    def prepare(profiler: Any) -> Any:
        if profiler_running():
            raise ProfilerBusyError.inside()
        return original(profiler)

    autograd_profiler.profile._prepare_trace = prepare  # type: ignore[method-assign]
    try:
        yield
    finally:
        autograd_profiler.profile._prepare_trace = original  # type: ignore[method-assign]


@contextlib.contextmanager
def deferred_interrupt(*, raise_after: bool) -> Iterator[None]:
    """Hold SIGINT (a kernel interrupt) until the block ends, so it never lands inside one of
    torch's profiler transitions and leaves them half done; then raise it if ``raise_after``.
    Main thread only: signals are delivered there."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught and raise_after:
        raise KeyboardInterrupt
