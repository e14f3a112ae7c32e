"""With ``--memory`` on CUDA: torch's allocator history recorded over the capture, and its
snapshot read at the end (segments, blocks, fragmentation, allocation stacks), so the memory
view shows the allocator's state beside the profiler's events; an out-of-memory failure's
snapshot is taken before the failing frames let their tensors go.

The history is torch's private API (``torch.cuda.memory._record_memory_history``); where a
torch lacks it or refuses, the capture goes on without it and says so in its errors.
"""

from __future__ import annotations

import contextlib
from typing import Any

import msgspec
import torch

from gpuprofile.errors import GpuprofileError
from gpuprofile.importers.memory_snapshot import snapshot_states
from gpuprofile.trace.allocator import AllocatorState

# Entries of history torch keeps (a ring): enough for a training step's allocations.
MAX_ENTRIES = 100_000


class AllocatorHistory:
    """``start()`` as the capture starts, ``stop()`` as it ends: the devices' states, or the
    reason there are none."""

    def __init__(self) -> None:
        self.error: str | None = None
        self._on = False

    def start(self) -> None:
        try:
            torch.cuda.memory._record_memory_history(max_entries=MAX_ENTRIES)
            self._on = True
        except (AttributeError, RuntimeError, TypeError) as error:
            self.error = f"the CUDA allocator's history was not recorded: {error}"

    def stop(self) -> tuple[AllocatorState, ...]:
        if not self._on:
            return ()
        self._on = False
        try:
            data: Any = torch.cuda.memory._snapshot()
        except (AttributeError, RuntimeError) as error:
            self.error = f"the CUDA allocator's snapshot could not be read: {error}"
            return ()
        finally:
            with contextlib.suppress(AttributeError, RuntimeError, TypeError):
                torch.cuda.memory._record_memory_history(enabled=None)
        try:
            states = snapshot_states(data)
        except GpuprofileError as error:
            self.error = f"the CUDA allocator's snapshot could not be read: {error}"
            return ()
        # The snapshot's clock is not the trace's: an oom entry's time would mislead.
        return tuple(
            msgspec.structs.replace(
                state, oom=msgspec.structs.replace(state.oom, time_ns=None) if state.oom else None
            )
            for state in states
        )
