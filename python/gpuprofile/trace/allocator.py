"""What a PyTorch CUDA caching-allocator snapshot says about each device, at the moment it was
taken (``torch.cuda.memory._snapshot()``, the pickle ``_dump_snapshot`` writes and
pytorch.org/memory_viz opens; docs/memory_snapshot.md).

A snapshot lists the allocator's segments (each one ``cudaMalloc`` or, with expandable
segments, one mapped range), each cut into blocks in one of three states: ``active_allocated``
(held by a tensor), ``active_pending_free`` (freed by the program, waiting for another stream's
work to finish; torch's docstring calls it ``active_awaiting_free``) and ``inactive`` (cached,
free for reuse). Figures here are bytes unless a field says otherwise.

Fields, by struct:

- ``AllocatorFrame``: one Python frame of the stack an allocation was made from, as the snapshot
  writes it (``filename``, ``line``, function ``name``).
- ``AllocatorBlock``: a block (``address``, ``size`` as the allocator rounded it,
  ``requested_size`` as the program asked, ``state``), the ``stream`` of the segment holding it,
  and up to ``MAX_FRAMES`` of its ``frames``, innermost first as the snapshot lists them (none
  when history was recorded without stacks).
- ``AllocatorOom``: the last ``oom`` entry of a device's trace: ``time_ns`` on the Trace's time
  base (the memory table's; None when unknown), ``device_free`` (what CUDA still reported free),
  ``size`` (the request that failed) and its ``frames``.
- ``AllocatorState``: one device. ``reserved_bytes`` is the sum of its segments' ``total_size``;
  ``allocated_bytes``, ``pending_free_bytes`` and ``inactive_bytes`` the sums of ``size`` over
  its blocks in each state (the three add up to ``reserved_bytes``); ``requested_bytes`` the sum
  of ``requested_size`` over the allocated blocks (allocated minus requested is rounding);
  ``fragmentation`` is ``inactive_bytes / reserved_bytes`` (None when nothing is reserved);
  ``segments`` counts segments, ``large_segments`` those of ``segment_type`` "large" (the pool
  for requests over 1 MB); ``expandable`` says a segment is ``is_expandable`` or the snapshot's
  ``allocator_settings`` turn expandable segments on; ``largest_blocks`` are the
  ``LARGEST_BLOCKS`` largest allocated blocks, largest first; ``largest_free_block`` is the
  largest inactive block (the most a new allocation can get without a new segment, pools
  aside); ``oom`` as above, None when the trace holds no ``oom`` entry.
"""

from __future__ import annotations

import msgspec

MAX_FRAMES = 12
LARGEST_BLOCKS = 20


class AllocatorFrame(msgspec.Struct, frozen=True):
    filename: str
    line: int
    name: str


class AllocatorBlock(msgspec.Struct, frozen=True, kw_only=True):
    address: int
    size: int
    requested_size: int
    state: str  # active_allocated | active_pending_free | inactive
    stream: int
    frames: tuple[AllocatorFrame, ...] = ()


class AllocatorOom(msgspec.Struct, frozen=True, kw_only=True):
    time_ns: int | None
    device_free: int | None
    size: int | None
    frames: tuple[AllocatorFrame, ...] = ()


class AllocatorState(msgspec.Struct, frozen=True, kw_only=True):
    device: int
    reserved_bytes: int
    allocated_bytes: int
    requested_bytes: int
    pending_free_bytes: int
    inactive_bytes: int
    fragmentation: float | None
    segments: int
    large_segments: int
    expandable: bool
    largest_blocks: tuple[AllocatorBlock, ...] = ()
    largest_free_block: int = 0
    oom: AllocatorOom | None = None
