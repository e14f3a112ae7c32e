"""DDP's buffer broadcast (detectors/ddp_buffers.py), on Kineto documents written here: the
GPU idle that DDP's flatten, broadcast and unflatten ops cover inside its forward, and
nothing for the same ops outside it."""

from __future__ import annotations

from pathlib import Path

from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.detectors import detector
from gpuprofile.importers.kineto import load_kineto
from helpers.kineto_docs import cpu_op, document, kernel, runtime, write

US = 1000


def _hints(tmp_path: Path, *, in_ddp: bool) -> list:
    """Two kernels (0-100 us, 2100-2200 us) with the GPU idle between; from 200 us the host
    flattens (300 us), broadcasts (100 us) and unflattens (1200 us) the buffers, inside a
    DistributedDataParallel.forward range when in_ddp (DDP's own record_function), then
    launches."""
    ops = [
        cpu_op("aten::flatten_dense_tensors", 200, 300),
        cpu_op("c10d::broadcast_", 500, 100),
        cpu_op("aten::unflatten_dense_tensors", 600, 1200),
    ]
    if in_ddp:
        ops.insert(0, cpu_op("DistributedDataParallel.forward", 150, 1950))
    events = [
        runtime("cudaLaunchKernel", 0, 5, 1),
        kernel("conv", 10, 100, 1),
        *ops,
        runtime("cudaLaunchKernel", 2050, 5, 2),
        kernel("conv", 2100, 100, 2),
    ]
    trace = load_kineto(write(tmp_path / "t.json", document(events)))
    return detector("ddp_buffers")(Analysis(trace))


def test_the_idle_that_ddp_buffer_ops_cover(tmp_path: Path) -> None:
    (hint,) = _hints(tmp_path, in_ddp=True)
    # Idle 110-2100 us; the ops cover 200-1800 us of it.
    assert hint.gain_ns == (1800 - 200) * US
    assert hint.numbers["broadcasts"] == 1
    assert "broadcast_buffers=False" in hint.fix[0]


def test_the_same_ops_outside_ddp_are_not_its_broadcast(tmp_path: Path) -> None:
    assert _hints(tmp_path, in_ddp=False) == []
