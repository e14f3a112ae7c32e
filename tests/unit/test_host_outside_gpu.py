"""Host work outside the GPU window (detectors/host_outside_gpu.py), on Kineto documents whose
timelines are written here: the time before the first GPU work and after the last, and the
ops that held it."""

from __future__ import annotations

from pathlib import Path

from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.detectors import detector
from gpuprofile.importers.kineto import load_kineto
from helpers.kineto_docs import cpu_op, document, kernel, runtime, write

US = 1000


def _hints(tmp_path: Path, before_us: float, after_us: float) -> list:
    """A step: preprocessing (aten::resize_, aten::div) for before_us, one launch and a 400 us
    kernel, then postprocessing (aten::argmax) for after_us."""
    split = before_us * 0.75
    gpu_start = before_us + 10
    events = [
        cpu_op("aten::resize_", 0, split),
        cpu_op("aten::div", split, before_us - split),
        runtime("cudaLaunchKernel", before_us, 5, 1),
        kernel("gemm", gpu_start, 400, 1),
        cpu_op("aten::argmax", gpu_start + 400, after_us),
    ]
    trace = load_kineto(write(tmp_path / "t.json", document(events)))
    return detector("host_outside_gpu")(Analysis(trace))


def test_host_work_around_the_gpu_window_is_named_with_its_ops(tmp_path: Path) -> None:
    (hint,) = _hints(tmp_path, before_us=3000, after_us=1000)
    outside = (3000 + 10 + 1000) * US  # before the kernel, and after it
    wall = (3000 + 10 + 400 + 1000) * US
    assert hint.gain_ns == outside
    assert hint.numbers["wall_ns"] == wall
    assert hint.numbers["gpu_window_ns"] == 400 * US
    assert (
        hint.numbers["main_ops"] == "aten::resize_ 2.25 ms, aten::argmax 1.00 ms, aten::div 750 µs"
    )


def test_silent_while_the_gpu_window_holds_half_the_wall(tmp_path: Path) -> None:
    assert _hints(tmp_path, before_us=200, after_us=100) == []


def test_one_time_work_before_the_gpu_is_the_one_off_notices_not_this(tmp_path: Path) -> None:
    """The first CUDA call creates the context: 30 ms inside aten::to before any kernel. That
    time is one-time work (named first by the one-off notice); the host-work finding leaves
    it out, and what remains is too little to report."""
    events = [
        cpu_op("aten::to", 0, 30_010),
        runtime("cudaGetDeviceCount", 5, 30_000, 1),
        runtime("cudaLaunchKernel", 30_020, 5, 2),
        kernel("gemm", 30_030, 400, 2),
    ]
    trace = load_kineto(write(tmp_path / "t.json", document(events)))
    analysis = Analysis(trace)
    assert [o.what for o in analysis.one_off_costs] == ["CUDA context creation"]
    assert detector("host_outside_gpu")(analysis) == []
