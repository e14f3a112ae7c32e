"""What was live at one moment of a rank's memory (analyses/memory_use.py builds them, the
out-of-memory post-mortem reads them)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import msgspec

from gpuprofile.analyses.lookups import Lookups

if TYPE_CHECKING:
    from gpuprofile.analyses.frames import Sources
    from gpuprofile.analyses.modules import Modules
    from gpuprofile.analyses.workload import Workload


class MemoryFacts(Lookups, Protocol):
    """What the memory view reads of the Analysis (a Protocol: the Analysis caches the view)."""

    @property
    def modules(self) -> Modules: ...

    @property
    def sources(self) -> Sources: ...

    @property
    def workload(self) -> Workload: ...


class LiveBlock(msgspec.Struct, frozen=True):
    """A block live at a moment: its size, category, the module and op that allocated it."""

    bytes: int
    category: str
    module: str  # a module path, or "(no module)"
    op: str  # the op running when it was allocated ("" before the trace began)
    line: str  # the user's line it was allocated from ("" without stacks)
    allocated_ns: int | None  # None: live before the trace began


class ModuleBytes(msgspec.Struct, frozen=True):
    module: str
    bytes: int


class MemoryMoment(msgspec.Struct, frozen=True):
    """What was live at one moment: by category, by module, and the largest blocks."""

    time_ns: int
    total_bytes: int
    by_category: dict[str, int]
    by_module: list[ModuleBytes]  # largest first
    largest: list[LiveBlock]
