"""What a GPU kernel does, judged by its name, the way HTA classifies kernels."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from gpuprofile.analyses.names import categorical, codes, per_category

COMMUNICATION = "communication"
MEMORY = "memory"
COMPUTE = "compute"
OTHER = "other"

_COMMUNICATION = re.compile(r"^(nccl|rccl).*Kernel")
_MEMORY = re.compile(r"^(Memcpy|Memset|dma)")
# Kernels HTA does not count as compute: collectives, copies and synchronization.
_NOT_COMPUTE = re.compile(r"^(nccl|rccl).*Kernel|Memcpy|^Memset|Sync")


def kernel_kind(name: str) -> str:
    if _COMMUNICATION.match(name):
        return COMMUNICATION
    if _MEMORY.match(name):
        return MEMORY
    if _NOT_COMPUTE.search(name):
        return OTHER
    return COMPUTE


def kernel_kinds(names: pd.Series) -> np.ndarray:
    """Per row, the kind of each kernel; classified once per distinct name."""
    names = categorical(names)
    kinds = per_category(names, "kernel_kind", kernel_kind)[:-1]
    return kinds[codes(names)] if len(kinds) else np.array([], dtype=object)


def is_compute(names: pd.Series) -> np.ndarray:
    names = categorical(names)
    compute = per_category(names, "is_compute", lambda n: kernel_kind(n) == COMPUTE, bool)[:-1]
    return compute[codes(names)] if len(compute) else np.array([], dtype=bool)
