"""The user's lines: each op's and kernel's innermost frame of the user's own code, with the
frames of torch, ipykernel, asyncio and other installed packages collapsed.

CONTRACT STUB (issue 25): the shape below is what every other part builds against; the
implementation fills it. A notebook cell's frame has ``file`` "cell [5]" (ipykernel's temporary
file mapped to its cell through ``TraceMeta.cells``; "cell" when the number is unknown), a
file's its path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from gpuprofile.analyses.lookups import Lookups


@dataclass(frozen=True)
class SourceLine:
    file: str  # "cell [5]", "cell", or a file's path
    line: int
    function: str

    @property
    def label(self) -> str:
        """``cell [5] line 12`` for a notebook cell, ``model.py:42`` for a file."""
        if self.file.startswith("cell"):
            return f"{self.file} line {self.line}"
        return f"{self.file.rsplit('/', 1)[-1]}:{self.line}"


@dataclass(frozen=True)
class Sources:
    """The innermost user frame of every op and kernel, in table row order."""

    lines: tuple[SourceLine, ...]
    op_source: np.ndarray  # int32 per ops row: index into lines, -1: none
    kernel_source: np.ndarray  # int32 per kernels row, from its launching op


def attribute_sources(analysis: Lookups) -> Sources:
    """Every op's and kernel's innermost user frame (Analysis.sources); empty without stacks."""
    trace = analysis.trace
    return Sources(
        lines=(),
        op_source=np.full(len(trace.ops), -1, np.int32),
        kernel_source=np.full(len(trace.kernels), -1, np.int32),
    )
