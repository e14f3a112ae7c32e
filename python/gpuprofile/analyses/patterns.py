"""Name patterns of runtime calls and ops that more than one analysis or detector looks for."""

from __future__ import annotations

import re

SYNC_CALL = re.compile(
    r"^(cuda|hip)(Device|Stream|Event|Ctx)Synchronize$|^cu(Ctx|Stream|Event)Synchronize$"
)
# Synchronous copies: the host waits until the copy (and all work before it) has finished.
SYNC_COPY_CALL = re.compile(
    r"^(cuda|hip)Memcpy(WithStream|2D|3D|Peer|ToSymbol|FromSymbol|HtoD|DtoH|DtoD)?$"
    r"|^cuMemcpy(HtoD|DtoH|DtoD|2D|3D|Peer)?(_v2)?$"
)
COPY_CALL = re.compile(r"Memcpy")
SYNC_OP = re.compile(r"^aten::(item|_local_scalar_dense|is_nonzero|nonzero)$")
COPY_OR_SYNC_OP = re.compile(
    r"^aten::(item|_local_scalar_dense|is_nonzero|nonzero|copy_|_to_copy|to)$"
)
LOADER_OP = re.compile(r"DataLoader|dataloader\.py\(\d+\): (__next__|__iter__)")
COLLECTIVE_OP = re.compile(r"c10d|^nccl:|^gloo:|record_param_comms|ProcessGroup")
# Synchronous device and pinned allocation and release (the *Async stream-ordered ones are
# cheap by design and are not churn).
ALLOC_CALL = re.compile(
    r"^(cuda|hip)(Malloc|Free|MallocHost|FreeHost|HostAlloc|HostMalloc|HostFree|MallocManaged|"
    r"MallocPitch|ExtMallocWithFlags)$|^cuMem(Alloc|Free|AllocHost|FreeHost|Create|Release|Map|"
    r"Unmap)(_v2)?$"
)
