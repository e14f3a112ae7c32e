"""Two small Kineto runs for the baseline tests: "before" copies 8 MiB from pageable memory on
the compute stream (a pageable-copy hint) and runs a hostile-named kernel for 50 us; "after"
copies from pinned memory on a side stream (no such hint) and runs that kernel for 80 us plus
one more kernel. Expected numbers come from these events (us x 1000 for ns)."""

from __future__ import annotations

from pathlib import Path

from helpers.hostile_trace import HOSTILE
from helpers.kineto_docs import cpu_op, document, kernel, memcpy, runtime, write

MIB = 1 << 20


def pageable_events(copy_us: float, *, pinned_side_stream: bool = False) -> list[dict]:
    """K1; an 8 MiB host-to-device copy of copy_us, from pageable memory on the compute stream
    (7), or from pinned memory on a side stream (9); then K2 once the copy is done."""
    copy = memcpy("HtoD", 100, copy_us, 8 * MIB, pinned=pinned_side_stream)
    copy["args"].update(correlation=2, stream=9 if pinned_side_stream else 7)
    copy["tid"] = copy["args"]["stream"]
    return [
        runtime("cudaLaunchKernel", 0, 0.5, 1),
        kernel("K1", 0, 100, 1),
        cpu_op("aten::to", 1, 3),
        cpu_op("aten::copy_", 1.5, 2),
        runtime("cudaMemcpyAsync", 2, 1, 2),
        copy,
        runtime("cudaLaunchKernel", 4, 0.5, 3),
        kernel("K2", 100 + copy_us, 100, 3),
    ]


def run_events(*, pinned: bool, hostile_us: float, extra: bool = False) -> list[dict]:
    """K1, an 8 MiB host-to-device copy (2 ms pageable, 0.2 ms pinned on stream 9), K2, then
    the hostile kernel for hostile_us, and with extra a kernel "added_kernel" of 30 us."""
    copy_us = 200.0 if pinned else 2000.0
    k2_start = 100 + copy_us
    events = [
        *pageable_events(copy_us, pinned_side_stream=pinned),
        cpu_op("aten::mm", 5, 2, ext=4),
        runtime("cudaLaunchKernel", 5.5, 0.5, 4),
        kernel(HOSTILE, k2_start + 100, hostile_us, 4),
    ]
    if extra:
        events += [
            runtime("cudaLaunchKernel", 6.5, 0.5, 5),
            kernel("added_kernel", k2_start + 100 + hostile_us, 30, 5),
        ]
    return events


def write_pair(folder: Path) -> tuple[Path, Path]:
    """Write before.json and after.json into folder; return their paths."""
    before = write(folder / "before.json", document(run_events(pinned=False, hostile_us=50)))
    after = write(
        folder / "after.json", document(run_events(pinned=True, hostile_us=80, extra=True))
    )
    return before, after
