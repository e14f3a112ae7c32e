"""Measure the roofs this machine reaches: ``gpuprofile.calibrate()`` and ``gpuprofile calibrate``.

On a CUDA (or ROCm) device, in about ``seconds`` in all: a large matmul per dtype (fp32 with TF32
off, tf32, bf16, fp16), a device-to-device copy (DRAM bandwidth, read plus write) and pinned
host-to-device and device-to-host copies (host link). Timed with CUDA events after a warm-up; the
best run counts. Without CUDA: an fp32 matmul and a large memory copy on the CPU.

Results are cached per device name and torch version (hardware/cache.py); ``calibrate()``
returns the cached roofs unless ``refresh=True``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpuprofile.hardware.cache import cache_path, host_cpu_name, read_cache, write_cache
from gpuprofile.hardware.model import Hardware
from gpuprofile.trace.precisions import PRECISIONS
from gpuprofile.units import UNKNOWN, format_bytes_per_s, format_flops_per_s, format_fraction

if TYPE_CHECKING:
    import torch

DEFAULT_SECONDS = 15.0
# Shares of the time budget per measurement; the GPU matmuls get most of it.
_CUDA_SHARES = {"matmul": 0.6, "d2d": 0.15, "h2d": 0.125, "d2h": 0.125}
_CPU_SHARES = {"matmul": 0.6, "copy": 0.4}
_MIN_RUNS = 2
_MAX_RUNS = 100


@dataclass(frozen=True)
class Measurement:
    """The best of several timed runs of one benchmark."""

    roof: str  # a precision ("bf16"), "dram" or "h2d" / "d2h"
    work: float  # FLOPs or bytes moved by one run
    best_s: float
    runs: int
    detail: str  # what one run did, in words

    @property
    def rate(self) -> float:
        return self.work / self.best_s


def matmul_flops(n: int) -> float:
    """FLOPs of an n x n by n x n matmul: n^2 outputs, n multiply-adds each."""
    return 2.0 * n**3


def copy_bytes(nbytes: int, within_memory: bool) -> float:
    """Bytes one copy moves: a copy within one memory reads and writes every byte."""
    return 2.0 * nbytes if within_memory else float(nbytes)


def best_time(run: Callable[[], float], budget_s: float) -> tuple[float, int]:
    """Run once to warm up, then time runs until the budget is spent; the fastest and the count.

    ``run`` performs one run and returns its duration in seconds.
    """
    deadline = time.perf_counter() + budget_s
    run()
    times: list[float] = []
    while len(times) < _MIN_RUNS or (time.perf_counter() < deadline and len(times) < _MAX_RUNS):
        times.append(run())
    return min(times), len(times)


def roofs(measurements: Mapping[str, Measurement]) -> dict[str, Any]:
    """Hardware fields from measurements: FLOP/s per precision, DRAM and host-link bytes/s."""
    flops = {p: m.rate for p, m in measurements.items() if p in PRECISIONS}
    dram = measurements.get("dram")
    links = [measurements[k].rate for k in ("h2d", "d2h") if k in measurements]
    return {
        "peak_flops": flops,
        "dram_bytes_per_s": dram.rate if dram else None,
        # The link roof is the better direction; both are in the notes.
        "link_bytes_per_s": max(links) if links else None,
    }


def _describe(measurements: Mapping[str, Measurement]) -> str:
    parts = [f"{m.roof}: {m.detail}, best of {m.runs} runs" for m in measurements.values()]
    return "Measured by gpuprofile.calibrate(): " + "; ".join(parts) + "."


# --- measuring ------------------------------------------------------------------------------


def calibrate(
    seconds: float = DEFAULT_SECONDS, *, device: str | None = None, refresh: bool = False
) -> Hardware:
    """Measure the roofs this machine reaches (matmuls per dtype, copies); the same as
    ``gpuprofile calibrate``.

    Parameters:
        seconds: the time budget of the measurement.
        device: "cuda", "cuda:1" or "cpu"; None: the current CUDA device, else the CPU.
        refresh: measure again even when this device and torch version have cached roofs.

    Returns:
        A Hardware (``source="calibrated"``) to pass as ``hardware=`` or ``--hardware``; a
        capture made on this CPU is measured against it without asking.
    """
    import torch

    if seconds <= 0:
        raise ValueError(f"calibrate: seconds must be positive, not {seconds}")
    target = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if target.type == "cuda" and target.index is None:
        target = torch.device("cuda", torch.cuda.current_device())
    name = torch.cuda.get_device_name(target) if target.type == "cuda" else cpu_name()
    path = cache_path(name, torch.__version__)
    if not refresh:
        cached = read_cache(path)
        if cached is not None:
            return cached
    if target.type == "cuda":
        hardware = _calibrate_cuda(target, seconds)
    elif target.type == "cpu":
        hardware = _calibrate_cpu(seconds)
    else:
        raise ValueError(f"calibrate: cannot measure a {target.type!r} device")
    write_cache(path, hardware)
    return hardware


def cpu_name() -> str:
    """This CPU as calibration names it, with the threads torch uses."""
    import torch

    return host_cpu_name(torch.get_num_threads())


def _cuda_time(run: Callable[[], object]) -> Callable[[], float]:
    import torch

    def timed() -> float:
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end)) / 1e3

    return timed


def _wall_time(run: Callable[[], object]) -> Callable[[], float]:
    def timed() -> float:
        start = time.perf_counter()
        run()
        return time.perf_counter() - start

    return timed


def _matmul(
    n: int, dtype: torch.dtype, device: torch.device, timer: Callable[..., Callable[[], float]]
) -> Callable[[float], tuple[float, int]]:
    import torch

    a = torch.randn(n, n, device=device).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
    out = torch.empty(n, n, device=device, dtype=dtype)
    return lambda budget: best_time(timer(lambda: torch.mm(a, b, out=out)), budget)


def _copy(
    nbytes: int, device: torch.device, timer: Callable[..., Callable[[], float]]
) -> Callable[[float], tuple[float, int]]:
    import torch

    src = torch.ones(nbytes, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    return lambda budget: best_time(timer(lambda: dst.copy_(src)), budget)


def _calibrate_cuda(device: torch.device, seconds: float) -> Hardware:
    import torch

    props = torch.cuda.get_device_properties(device)
    free, _total = torch.cuda.mem_get_info(device)
    # 8192^3 matmuls keep big GPUs busy long enough to reach their clocks; 3 fp32 matrices
    # of 8192^2 take 768 MiB.
    n = 8192 if free > 4 * 2**30 else 4096
    dtypes: dict[str, torch.dtype] = {"fp32": torch.float32, "fp16": torch.float16}
    # TF32 exists from Ampere (8.0) on, and on AMD from CDNA 3 (gfx94x) on.
    arch = getattr(props, "gcnArchName", "") or ""
    if (torch.version.hip is None and props.major >= 8) or arch.startswith("gfx94"):
        dtypes["tf32"] = torch.float32
    if torch.cuda.is_bf16_supported(including_emulation=False):
        dtypes["bf16"] = torch.bfloat16
    measurements: dict[str, Measurement] = {}
    share = seconds * _CUDA_SHARES["matmul"] / len(dtypes)
    previous = torch.get_float32_matmul_precision()
    try:
        with torch.cuda.device(device):
            for precision, dtype in dtypes.items():
                # "highest" keeps fp32 matmuls off TF32; "high" lets them use it.
                torch.set_float32_matmul_precision("high" if precision == "tf32" else "highest")
                best, runs = _matmul(n, dtype, device, _cuda_time)(share)
                measurements[precision] = Measurement(
                    precision, matmul_flops(n), best, runs, f"{n}x{n} {dtype} matmul"
                )
            size = min(1 << 30, free // 8)
            best, runs = _copy(size, device, _cuda_time)(seconds * _CUDA_SHARES["d2d"])
            measurements["dram"] = Measurement(
                "dram", copy_bytes(size, True), best, runs, f"{size >> 20} MiB device copy"
            )
            host_size = 256 << 20
            host = torch.empty(host_size, dtype=torch.uint8, pin_memory=True)
            on_device = torch.empty(host_size, dtype=torch.uint8, device=device)
            for roof, run in (
                ("h2d", lambda: on_device.copy_(host, non_blocking=True)),
                ("d2h", lambda: host.copy_(on_device, non_blocking=True)),
            ):
                best, runs = best_time(_cuda_time(run), seconds * _CUDA_SHARES[roof])
                measurements[roof] = Measurement(
                    roof, copy_bytes(host_size, False), best, runs, f"256 MiB pinned {roof} copy"
                )
    finally:
        torch.set_float32_matmul_precision(previous)
        torch.cuda.empty_cache()
    notes = _describe(measurements)
    if "h2d" in measurements and "d2h" in measurements:
        notes += (
            f" Host link: {format_bytes_per_s(measurements['h2d'].rate)} to the device, "
            f"{format_bytes_per_s(measurements['d2h'].rate)} back."
        )
    return Hardware(
        name=props.name,
        source="calibrated",
        sm_count=props.multi_processor_count,
        l2_bytes=getattr(props, "L2_cache_size", None) or None,
        memory_bytes=props.total_memory,
        citation=f"measured on this machine with torch {torch.__version__}",
        notes=notes,
        **roofs(measurements),
    )


def _calibrate_cpu(seconds: float) -> Hardware:
    import torch

    device = torch.device("cpu")
    # Short budgets (tests) get smaller problems so that several runs still fit.
    n = 2048 if seconds >= 5 else 1024
    size = (256 if seconds >= 5 else 64) << 20
    measurements: dict[str, Measurement] = {}
    best, runs = _matmul(n, torch.float32, device, _wall_time)(seconds * _CPU_SHARES["matmul"])
    measurements["fp32"] = Measurement(
        "fp32", matmul_flops(n), best, runs, f"{n}x{n} float32 matmul"
    )
    best, runs = _copy(size, device, _wall_time)(seconds * _CPU_SHARES["copy"])
    measurements["dram"] = Measurement(
        "dram", copy_bytes(size, True), best, runs, f"{size >> 20} MiB memory copy"
    )
    memory = None
    if hasattr(os, "sysconf"):
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return Hardware(
        name=cpu_name(),
        source="calibrated",
        memory_bytes=memory,
        citation=f"measured on this machine with torch {torch.__version__}",
        notes=_describe(measurements) + " The CPU's peak FP32 rate is the measured one.",
        **roofs(measurements),
    )


def datasheet_for_this_device(device: str | None = None) -> Hardware | None:
    """The datasheet roofs of the current CUDA device, when the tables know it."""
    import torch

    from gpuprofile.hardware.match import hardware_for_device

    if not torch.cuda.is_available() or (device or "cuda").startswith("cpu"):
        return None
    target = torch.device(device or "cuda")
    props = torch.cuda.get_device_properties(target)
    hw = hardware_for_device(
        props.name,
        {
            "multi_processor_count": props.multi_processor_count,
            "total_memory": props.total_memory,
            "major": props.major,
            "minor": props.minor,
            "gcnArchName": getattr(props, "gcnArchName", None),
        },
    )
    return hw if hw.source == "datasheet" else None


# --- measured against datasheet ------------------------------------------------------------


def compare(calibrated: Hardware, datasheet: Hardware | None) -> str:
    """A table of each roof: measured, datasheet, and measured as a share of the datasheet."""
    sheet = datasheet or Hardware(name="-", source="unknown")
    rows: list[tuple[str, str, str, str]] = []

    def add(
        roof: str, measured: float | None, quoted: float | None, fmt: Callable[..., str]
    ) -> None:
        if measured is None and quoted is None:
            return
        share = format_fraction(measured / quoted, 0) if measured and quoted else UNKNOWN
        rows.append((roof, fmt(measured), fmt(quoted), share))

    for precision in PRECISIONS:
        add(
            precision,
            calibrated.peak_flops.get(precision),
            sheet.peak_flops.get(precision),
            format_flops_per_s,
        )
    add("DRAM", calibrated.dram_bytes_per_s, sheet.dram_bytes_per_s, format_bytes_per_s)
    add("host link", calibrated.link_bytes_per_s, sheet.link_bytes_per_s, format_bytes_per_s)
    header = ("roof", "measured", "datasheet", "%")
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(4)]
    lines = [f"{calibrated.name}: measured" + (f" vs {sheet.name}" if datasheet else "")]
    for row in (header, *rows):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    return "\n".join(lines)
