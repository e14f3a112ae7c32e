"""Kineto's own progress lines, kept out of the notebook.

torch 2.13's Kineto writes "USDT: ... profiler_start" and "profiler_stop" lines (and "STAGE:"
lines) straight to file descriptor 2 at every profiler start and stop, with no setting to turn
them off (KINETO_LOG_LEVEL does not): a notebook shows them as a red stderr box under every
profiled cell, and once per window with --steps. While the profiler starts, steps or stops,
descriptor 2 points at a scratch file; afterwards every other line in it is written on to the
real stderr, so warnings and errors still reach the user. Nothing here may fail the capture:
without a descriptor 2 there is nothing to filter, and a stderr that cannot be written to
loses only those lines.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import IO

CHATTER = (b"USDT:", b"STAGE:")


class KinetoChatter:
    """One scratch file for a capture's life; ``dropped()`` around each profiler transition."""

    def __init__(self) -> None:
        self._scratch: IO[bytes] | None = None
        try:
            os.fstat(2)
        except OSError:  # no descriptor 2 (the scratch file would become it)
            return
        self._scratch = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close())

    @contextlib.contextmanager
    def dropped(self) -> Iterator[None]:
        real = None
        if self._scratch is not None:
            with contextlib.suppress(OSError):
                real = os.dup(2)
        if real is None or self._scratch is None:
            yield
            return
        os.dup2(self._scratch.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(real, 2)
            os.close(real)
            self._pass_on(self._scratch)

    @staticmethod
    def _pass_on(scratch: IO[bytes]) -> None:
        scratch.seek(0)
        lines = scratch.read().splitlines(keepends=True)
        scratch.seek(0)
        scratch.truncate()
        kept = b"".join(line for line in lines if not line.startswith(CHATTER))
        with contextlib.suppress(OSError):
            while kept:
                kept = kept[os.write(2, kept) :]

    def close(self) -> None:
        if self._scratch is not None:
            self._scratch.close()
            self._scratch = None
