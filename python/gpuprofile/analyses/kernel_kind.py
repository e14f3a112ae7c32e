"""What a GPU kernel or CPU op does, judged by its name: its class in the report.

Kernel classes: ``communication`` (NCCL/RCCL collectives and send/receive, NVSHMEM, expert-
parallel dispatch/combine such as DeepEP's, multimem and symmetric-memory all-reduce, custom
all-reduce/all-gather/all-to-all kernels), ``memory`` (copies and sets), ``sync`` (kernels that
only wait), ``compute`` (everything else), as HTA classifies kernels, with more kinds of
communication recognised. CPU ops that communicate: ``patterns.COLLECTIVE_OP`` (``c10d::*``,
``gloo:*``, ``nccl:*``, ``record_param_comms``, ProcessGroup calls).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from gpuprofile.analyses.names import categorical, codes, per_category
from gpuprofile.analyses.patterns import COLLECTIVE_OP

COMMUNICATION = "communication"
MEMORY = "memory"
COMPUTE = "compute"
SYNC = "sync"

_COMMUNICATION = re.compile(
    r"^(void )?(nccl|rccl|nvshmem)"  # ncclKernel_, ncclDevKernel_, rcclKernel..., nvshmemi_...
    r"|nvshmem"
    r"|deep_?ep::|\b(ep|moe)_?(dispatch|combine)"  # expert-parallel dispatch / combine
    r"|multimem|symmetric_memory|symm_mem"  # multimem / symmetric-memory collectives
    r"|(one|two)_shot_all_reduce|cross_device_reduce|custom_?all_?reduce"
    r"|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|all2all",
    re.IGNORECASE,
)
_MEMORY = re.compile(r"^(Memcpy|Memset|dma)")
_SYNC = re.compile(r"Sync")


def kernel_kind(name: str) -> str:
    if _COMMUNICATION.search(name):
        return COMMUNICATION
    if _MEMORY.match(name):
        return MEMORY
    if _SYNC.search(name):
        return SYNC
    return COMPUTE


def kernel_kinds(names: pd.Series) -> np.ndarray:
    """Per row, the class of each kernel; classified once per distinct name."""
    names = categorical(names)
    kinds = per_category(names, "kernel_kind", kernel_kind)[:-1]
    return kinds[codes(names)] if len(kinds) else np.array([], dtype=object)


def is_compute(names: pd.Series) -> np.ndarray:
    names = categorical(names)
    compute = per_category(names, "is_compute", lambda n: kernel_kind(n) == COMPUTE, bool)[:-1]
    return compute[codes(names)] if len(compute) else np.array([], dtype=bool)


def is_comm_op(names: pd.Series) -> np.ndarray:
    """Per CPU op, whether it communicates (c10d, gloo, nccl annotations, record_param_comms)."""
    names = categorical(names)
    comm = per_category(names, "is_comm_op", lambda n: bool(COLLECTIVE_OP.search(n)), bool)[:-1]
    return comm[codes(names)] if len(comm) else np.array([], dtype=bool)
