"""What a GPU kernel does, judged by its name, the way HTA classifies kernels."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

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


def is_compute(names: pd.Series) -> np.ndarray:
    """Per row, whether the kernel computes; classified once per distinct name."""
    categorical = names.astype("category")
    kinds = np.array(
        [kernel_kind(str(n)) == COMPUTE for n in categorical.cat.categories], dtype=bool
    )
    codes = categorical.cat.codes.to_numpy()
    return kinds[codes] if len(kinds) else np.zeros(len(names), dtype=bool)
