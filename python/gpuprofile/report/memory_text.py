"""The text report's lines for memory: in use by category at the peak, by module, the largest
blocks live then, and an out-of-memory post-mortem (analyses/memory_use.py)."""

from __future__ import annotations

from gpuprofile.analyses.memory_moments import MemoryMoment
from gpuprofile.analyses.memory_use import MemoryUse
from gpuprofile.trace.allocator import AllocatorState
from gpuprofile.units import format_bytes, format_fraction, format_time

# Modules and blocks printed per moment.
MEMORY_ROWS = 5


def device_text(device: int) -> str:
    return "host, PyTorch's CPU allocator" if device < 0 else f"GPU {device}, PyTorch's allocator"


def memory_lines(memory: MemoryUse | None) -> list[str]:
    """``memory (GPU 0, ...): peak 2.1 GB at 1.2 s: parameters ..., activations ...``."""
    if memory is None:
        return []
    peak = memory.peak
    lines = [
        f"  memory ({device_text(memory.device)}): peak {format_bytes(peak.total_bytes)} "
        f"at {format_time(peak.time_ns)}: {_categories(peak)}"
    ]
    if memory.note:
        lines.append(f"    ({memory.note})")
    lines += _moment_lines(peak, "at the peak")
    return lines


def failure_lines(memory: MemoryUse | None, rank: int) -> list[str]:
    """The post-mortem, first in the report: what ran out, what was live, what would free it."""
    if memory is None or memory.failure is None:
        return []
    failure, end = memory.failure, memory.end
    asked = (
        f"; it asked for {format_bytes(failure.requested_bytes)}"
        if failure.requested_bytes is not None
        else ""
    )
    lines = [
        f"OUT OF MEMORY on rank {rank} ({device_text(memory.device)}){asked}: {failure.error}",
    ]
    if failure.op:
        place = ", ".join(p for p in (failure.module, failure.line) if p)
        lines.append(f"  asked for by {failure.op}" + (f" in {place}" if place else ""))
    lines.append(f"  live when it failed: {format_bytes(end.total_bytes)}: {_categories(end)}")
    lines += _moment_lines(end, "when it failed")
    asked_bytes = failure.requested_bytes
    if failure.needed_bytes is not None:
        lines.append(
            f"  it lacked {format_bytes(failure.needed_bytes)} (the request less the device's "
            "free memory, as the error says)"
        )
    elif asked_bytes is not None and asked_bytes > end.total_bytes:
        lines.append(
            f"  the request alone is larger than all PyTorch held when it failed "
            f"({format_bytes(end.total_bytes)}): freeing memory may not be enough; check the "
            "size it was computed from"
        )
    if failure.fixes:
        lines.append("  fixes, by the memory each frees there:")
        lines += [
            f"    {format_bytes(f.frees_bytes):>9}  {f.fix} ({f.why})" + enough_text(f.enough)
            for f in failure.fixes
        ]
    else:
        lines.append(
            "  none of the fixes gpuprofile knows frees memory there: no activations, "
            "temporaries, score matrices or shardable optimizer state were live"
        )
    return lines


def enough_text(enough: bool | None) -> str:
    """Whether a fix covers what the request lacked, as every view words it."""
    return "" if enough is None else "; enough on its own" if enough else "; not enough alone"


def allocator_lines(states: list[AllocatorState]) -> list[str]:
    """The CUDA allocator's state per device, from its snapshot: segments, fragmentation, the
    largest blocks with the line that allocated them, an out-of-memory entry."""
    lines = []
    for state in states:
        frag = (
            f" ({format_fraction(state.fragmentation, 0)} of reserved)"
            if state.fragmentation is not None
            else ""
        )
        reserved, allocated = state.reserved_bytes, state.allocated_bytes
        expandable = ", expandable" if state.expandable else ""
        lines.append(
            f"allocator, GPU {state.device} (snapshot): reserved {format_bytes(reserved)} in "
            f"{state.segments} segments ({state.large_segments} large{expandable}), allocated "
            f"{format_bytes(allocated)}, cached free {format_bytes(state.inactive_bytes)}{frag}, "
            f"largest free block {format_bytes(state.largest_free_block)}"
        )
        for block in state.largest_blocks[:MEMORY_ROWS]:
            frame = next(iter(block.frames), None)
            where = f"{frame.filename}:{frame.line} {frame.name}" if frame else "no stack recorded"
            lines.append(f"  {format_bytes(block.size):>9}  {where}")
        if state.oom is not None:
            asked = format_bytes(state.oom.size) if state.oom.size is not None else "unknown"
            free = (
                format_bytes(state.oom.device_free)
                if state.oom.device_free is not None
                else "unknown"
            )
            lines.append(f"  out of memory: asked for {asked} with {free} free on the device")
    return lines


def _categories(moment: MemoryMoment) -> str:
    return (
        ", ".join(
            f"{name} {format_bytes(bytes_)}"
            for name, bytes_ in moment.by_category.items()
            if bytes_
        )
        or "nothing live"
    )


def _moment_lines(moment: MemoryMoment, when: str) -> list[str]:
    modules = ", ".join(
        f"{m.module} {format_bytes(m.bytes)}" for m in moment.by_module[:MEMORY_ROWS]
    )
    lines = [f"    by module {when}: {modules}"] if modules else []
    if moment.largest:
        lines.append(f"    largest blocks {when}:")
        for block in moment.largest[:MEMORY_ROWS]:
            made = "before the trace" if block.allocated_ns is None else "no op recorded"
            where = " ".join(p for p in (block.op, block.line) if p) or made
            lines.append(
                f"      {format_bytes(block.bytes):>9}  {block.category:<15} {block.module}"
                f" ({where})"
            )
    return lines
