"""Kineto's own progress lines, kept out of the notebook.

torch 2.13's Kineto writes "USDT: ... profiler_start" and "profiler_stop" lines (and "STAGE:"
lines) straight to file descriptor 2 at every profiler start and stop, with no setting to turn
them off (KINETO_LOG_LEVEL does not): a notebook shows them as a red stderr box under every
profiled cell, and once per window with --steps. While the profiler starts, steps or stops,
descriptor 2 points at a scratch file; afterwards every other line in it is written on to the
real stderr, so warnings and errors still reach the user.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator

CHATTER = (b"USDT:", b"STAGE:")


class KinetoChatter:
    """One scratch file for a capture's life; ``dropped()`` around each profiler transition."""

    def __init__(self) -> None:
        self._scratch = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close())

    @contextlib.contextmanager
    def dropped(self) -> Iterator[None]:
        try:
            real = os.dup(2)
        except OSError:  # no descriptor 2 to redirect: nothing to filter
            yield
            return
        os.dup2(self._scratch.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(real, 2)
            os.close(real)
            self._pass_on()

    def _pass_on(self) -> None:
        self._scratch.seek(0)
        lines = self._scratch.read().splitlines(keepends=True)
        self._scratch.seek(0)
        self._scratch.truncate()
        kept = b"".join(line for line in lines if not line.startswith(CHATTER))
        if kept:
            os.write(2, kept)

    def close(self) -> None:
        self._scratch.close()
