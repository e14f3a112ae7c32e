"""What a running capture hands out: the Trace it will have made once its block has ended."""

from __future__ import annotations

from gpuprofile.errors import GpuprofileError
from gpuprofile.trace.model import Trace


class Recording:
    """Set by ``capture()`` when its block ends, however it ends (``trace.meta.partial`` says
    whether the block raised)."""

    def __init__(self) -> None:
        self._trace: Trace | None = None

    @property
    def done(self) -> bool:
        return self._trace is not None

    @property
    def trace(self) -> Trace:
        if self._trace is None:
            raise GpuprofileError("this profile is still recording; use it after the block ends")
        return self._trace

    @trace.setter
    def trace(self, trace: Trace) -> None:
        self._trace = trace
