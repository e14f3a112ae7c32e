"""The five gauges: how busy the GPU was and how close it came to each roof.

Per rank: GPU busy share of its GPU window; achieved DRAM bandwidth and FLOP/s against their
roofs; host-device copy bandwidth against the host link; peak memory in use against capacity.
Each achieved rate is over the time of the work whose amount is known (minimal bytes and FLOPs
from recorded shapes, analyses/flops.py), so a gauge reads "while that work ran, it moved this
fast", never an average diluted by time we cannot account for; ``note`` says how much time that is.
A value or roof that the trace and hardware cannot give is None with a note saying why; so is
a value below zero or past what the device can do (roofline.OVER_ROOF times its roof; for
memory, any amount over the capacity), which says the roof or the count is wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace

import numpy as np
import pandas as pd

from gpuprofile.analyses.gpu_time import GpuTime
from gpuprofile.analyses.lookups import Lookups
from gpuprofile.analyses.memory_use import main_device
from gpuprofile.analyses.names import codes, per_category
from gpuprofile.analyses.roofline import OVER_ROOF, Roofline
from gpuprofile.hardware.model import Hardware
from gpuprofile.hardware.properties import trace_devices
from gpuprofile.trace.model import HOST_DEVICE_KINDS, Trace
from gpuprofile.units import format_reading, format_time


@dataclass(frozen=True)
class Gauge:
    key: str  # gpu-busy | dram-bandwidth | compute | host-link | memory
    label: str
    rank: int
    value: float | None
    unit: str  # "%" | "B/s" | "FLOP/s" | "B"
    roof: float | None
    roof_label: str
    roof_source: str | None  # a Hardware source, "trace" (device properties) or None
    note: str = ""

    @property
    def fraction(self) -> float | None:
        if self.value is None or not self.roof:
            return None
        return self.value / self.roof

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "fraction": self.fraction}


_POINT_COLUMNS = (
    "rank",
    "time_ns",
    "known_time_ns",
    "bytes",
    "bytes_time_ns",
    "bytes_source",
    "flops",
    "compute_roof",
)


def gauges(
    facts: Lookups,
    roofline: Roofline,
    gpu_times: Mapping[int, GpuTime | None],
    host_peak: Callable[[int], int | None] = lambda rank: None,
) -> list[Gauge]:
    """Per rank, the five gauges against the roofs the roofline was drawn with.

    facts: the trace and its lookups; gpu_times: each rank's ``Analysis.gpu_time``;
    host_peak: a rank's peak host memory as its memory view counts it (a CPU run's gauge)."""
    trace = facts.trace
    hardware = roofline.hardware
    points = roofline.points
    # One level, so no time counts twice: kernels on GPU traces, else ops.
    # Only the columns the gauges read, taken before the rows: no other column is copied.
    at_level = points["level"].to_numpy() == ("kernel" if roofline.time_basis == "gpu" else "op")
    level = points[list(_POINT_COLUMNS)][at_level]
    level_rank = level["rank"].to_numpy()
    source = trace.meta.source.format
    out: list[Gauge] = []
    for rank in trace.ranks:
        mine = level.iloc[np.flatnonzero(level_rank == rank)]
        out += [
            _busy(gpu_times[rank], rank),
            _possible(_dram(mine, hardware, rank, source), OVER_ROOF),
            _possible(_compute(mine, hardware, rank, source), OVER_ROOF),
            _possible(_host_link(facts, hardware, rank), OVER_ROOF),
            # Allocated bytes cannot exceed the memory the device has, by any margin.
            _possible(_memory(facts, hardware, rank, host_peak), 1.0),
        ]
    return out


def _possible(gauge: Gauge, limit: float) -> Gauge:
    """The gauge, or, when its value is negative or above ``limit`` times its roof, the gauge
    with the value unknown and the note saying what was measured against what: a figure past
    what the device can do means the roof or the count is wrong, and is not shown as fact."""
    value, roof = gauge.value, gauge.roof
    if value is None:
        return gauge
    reading = format_reading(value, gauge.unit)
    if value < 0:
        why = f"measured {reading}, below zero: the trace's counts are wrong"
    elif roof and value > limit * roof:
        why = (
            f"measured {reading}, {value / roof:.3g}x the roof of "
            f"{format_reading(roof, gauge.unit)}: more than the device can do, so the roof "
            "or the count is wrong (see the notices)"
        )
    else:
        return gauge
    return replace(gauge, value=None, note=f"{gauge.note}; not shown: {why}")


def _roof_label(hardware: Hardware, what: str) -> str:
    return f"{hardware.name} {what} ({hardware.source})"


def _busy(gpu: GpuTime | None, rank: int) -> Gauge:
    value, note = (
        (None, "no GPU activity in this trace")
        if gpu is None
        else (
            gpu.busy_pct,
            f"{format_time(gpu.busy_ns)} busy of a {format_time(gpu.window_ns)} window",
        )
    )
    return Gauge(
        "gpu-busy", "GPU busy", rank, value, "%", 100.0, "the whole GPU window", None, note=note
    )


def _rate(
    points: pd.DataFrame, amount: str, over: str = "known_time_ns"
) -> tuple[float | None, int, int]:
    """(amount per second over the points whose amount is known, that time (column ``over``),
    all points' time)."""
    values = points[amount].to_numpy(np.float64)
    known = np.isfinite(values)
    total = int(points["time_ns"].sum())
    measured_ns = int(points[over].to_numpy(np.float64)[known].sum())
    if measured_ns <= 0:
        return None, 0, total
    return float(values[known].sum() / (measured_ns * 1e-9)), measured_ns, total


# Why no work's bytes or FLOPs are known, by the trace's source format: a file without the
# metrics is named as such, not blamed on shapes it never had.
_NONE_KNOWN = {
    "ncu": {
        "bytes": "the file has no DRAM byte metrics (dram__bytes_read.sum, dram__bytes_write.sum)",
        "FLOPs": "the file has no SASS op counts (smsp__sass_thread_inst_executed_op_*)",
    },
    "nsys": {"bytes": "Nsight Systems counts no bytes", "FLOPs": "Nsight Systems counts no FLOPs"},
    "tensorrt": {
        "bytes": "a trtexec profile counts no bytes",
        "FLOPs": "a trtexec profile counts no FLOPs",
    },
}


def _coverage_note(known_ns: int, total_ns: int, what: str, source: str) -> str:
    if total_ns <= 0:
        return "no kernels, and no ops with a known amount of work, in this trace"
    if known_ns <= 0:
        why = _NONE_KNOWN.get(source, {}).get(what, "no shapes or no formula")
        return f"no {what} known for any of {format_time(total_ns)}: {why}"
    return f"over the {format_time(known_ns)} of {format_time(total_ns)} whose {what} are known"


def _traffic(points: pd.DataFrame) -> str:
    """How the points' DRAM bytes are known, from their ``bytes_source``: "measured" (all,
    e.g. Nsight Compute), "partly measured" (a capture joined with ncu) or "minimal"."""
    sources = set(points["bytes_source"][points["bytes"].notna()])
    if sources == {"measured"}:
        return "measured"
    return "partly measured" if sources & {"measured", "partly measured"} else "minimal"


_TRAFFIC_NOTES = {
    "measured": " (measured DRAM traffic)",
    "partly measured": " (measured DRAM traffic where known, else minimal traffic)",
    "minimal": " (minimal traffic; caches ignored)",
}


def _dram(points: pd.DataFrame, hardware: Hardware, rank: int, source: str) -> Gauge:
    value, known_ns, total_ns = _rate(points, "bytes", "bytes_time_ns")
    roof = hardware.dram_bytes_per_s
    return Gauge(
        "dram-bandwidth", "DRAM bandwidth", rank, value, "B/s", roof,
        _roof_label(hardware, "DRAM bandwidth") if roof else "unknown: run gpuprofile.calibrate()",
        hardware.source if roof else None,
        note=_coverage_note(known_ns, total_ns, "bytes", source)
        + (_TRAFFIC_NOTES[_traffic(points)] if total_ns > 0 else ""),
    )  # fmt: skip


def _compute(points: pd.DataFrame, hardware: Hardware, rank: int, source: str) -> Gauge:
    value, known_ns, total_ns = _rate(points, "flops")
    roof, label = _compute_roof(points, hardware)
    return Gauge(
        "compute", "Compute", rank, value, "FLOP/s", roof, label,
        hardware.source if roof else None, note=_coverage_note(known_ns, total_ns, "FLOPs", source),
    )  # fmt: skip


def _compute_roof(points: pd.DataFrame, hardware: Hardware) -> tuple[float | None, str]:
    """The FLOP rate the timed work could reach, and its label.

    Each point is held to the peak of its own precision (``compute_roof``: a bf16 matmul to
    the bf16 tensor-core peak, an elementwise kernel to the fp32 one). With several, the roof
    is the rate of all their FLOPs done each at its own peak, sum(F) / sum(F_p / peak_p): one
    precision's peak alone would judge bf16 tensor-core FLOPs against the fp32 vector peak
    (302% of it on a shared H100 trace). Keys, not values: fp16 and bf16 share a peak.
    """
    unknown = None, "unknown: run gpuprofile.calibrate()"
    keys = points["compute_roof"].to_numpy(object)
    flops = points["flops"].to_numpy(np.float64)
    weights = points["known_time_ns"].to_numpy(np.float64)
    has = pd.notna(keys) & (weights > 0)
    counted = has & np.isfinite(flops) & (flops > 0)
    if counted.any():
        by_key = pd.Series(flops[counted]).groupby(keys[counted].astype(str)).sum()
        if len(by_key) > 1:
            peaks = np.array([hardware.peak_flops[k] for k in by_key.index], np.float64)
            roof = float(by_key.sum() / (by_key.to_numpy() / peaks).sum())
            names = " and ".join(by_key.sort_values(ascending=False).index)
            return roof, _roof_label(hardware, f"{names} peaks, weighted by FLOPs")
        precision = str(by_key.index[0])
        return hardware.peak_flops[precision], _roof_label(hardware, f"{precision} peak")
    if has.any():  # timed work with no FLOPs (copies): the roof of the most of its time
        by_key = pd.Series(weights[has]).groupby(keys[has].astype(str)).sum()
        precision = str(by_key.index.to_numpy()[np.argmax(by_key.to_numpy())])
        return hardware.peak_flops[precision], _roof_label(hardware, f"{precision} peak")
    if hardware.peak_flops.get("fp32"):
        return hardware.peak_flops["fp32"], _roof_label(hardware, "fp32 peak")
    return unknown


def _is_host_device(kind: str) -> bool:
    return kind in HOST_DEVICE_KINDS


def _host_link(facts: Lookups, hardware: Hardware, rank: int) -> Gauge:
    copies = facts.trace.memcpy
    on_rank = facts.rank_rows("memcpy", rank)
    kind = copies["kind"]
    host_device = per_category(kind, "host_device_kind", _is_host_device, bool, False)
    rows = on_rank[host_device[codes(kind)[on_rank]]]
    nbytes = copies["bytes"].to_numpy(np.int64)[rows]
    dur = copies["dur_ns"].to_numpy(np.int64)[rows]
    sized = nbytes >= 0
    busy_ns = int(dur[sized].sum())
    value = float(nbytes[sized].sum() / (busy_ns * 1e-9)) if busy_ns > 0 else None
    roof = hardware.link_bytes_per_s
    note = (
        f"{int(sized.sum())} host-device copies, {format_time(busy_ns)} copying"
        if value is not None
        else "no host-device copies in this trace"
    )
    return Gauge(
        "host-link", "Host link", rank, value, "B/s", roof,
        _roof_label(hardware, "host link, one direction") if roof else "unknown host link",
        hardware.source if roof else None, note=note,
    )  # fmt: skip


def _memory(
    facts: Lookups, hardware: Hardware, rank: int, host_peak: Callable[[int], int | None]
) -> Gauge:
    trace = facts.trace
    memory = trace.memory
    on_rank = facts.rank_rows("memory", rank)
    rows = on_rank[memory["device"].to_numpy()[on_rank] >= 0]
    # Events without a total (-1, NO_ID: the trace did not write one) tell no peak.
    totals = rows[memory["total_allocated"].to_numpy()[rows] >= 0]
    if not len(rows) and len(on_rank) and not len(facts.gpu_activity(rank)):
        return _host_memory(host_peak(rank), rank)  # a CPU run: its memory is the host's
    if not len(totals):
        why = (
            "the GPU allocator events carry no totals (Total Allocated)"
            if len(rows)
            else "allocator events for host memory only: the GPU's were not recorded"
            if len(on_rank)
            else "no GPU allocator events: profile with memory recording on (--memory)"
        )
        return Gauge(
            "memory", "Peak GPU memory", rank, None, "B", None, "GPU capacity", None, note=why
        )
    # The memory view's device: the GPU whose total peaked highest.
    device = main_device(memory.iloc[totals])
    assert device is not None
    peak = float(memory["total_allocated"].to_numpy()[totals].max())
    capacity, source = _capacity(trace, hardware, rank, device)
    return Gauge(
        "memory", "Peak GPU memory", rank, peak, "B", capacity,
        f"GPU {device} capacity" if capacity else "unknown capacity", source,
        note=f"peak allocated by PyTorch's allocator on GPU {device} (reserved is higher)",
    )  # fmt: skip


def _host_memory(peak: int | None, rank: int) -> Gauge:
    """A CPU run's peak: PyTorch's CPU allocator, as the memory view counts it (the blocks
    live before the capture that it knows included: the CPU allocator's own totals start at
    zero when the profiler starts)."""
    return Gauge(
        "memory", "Peak host memory", rank, None if peak is None else float(peak), "B", None,
        "host memory", None,
        note="peak in use by PyTorch's CPU allocator: tensors made during the capture, and the "
        "parameters, gradients and optimizer state it knew from before (other tensors made "
        "before it are not counted; nor is the process's other memory)",
    )  # fmt: skip


def _capacity(trace: Trace, hardware: Hardware, rank: int, device: int) -> tuple[float | None, str]:
    """The device's own memory size from the trace's device properties, else the datasheet's."""
    for props in trace_devices(trace, rank).devices:  # checked: a size above zero or None
        if props.get("id") == device and props.get("memory_bytes"):
            return float(props["memory_bytes"]), "trace"
    if hardware.memory_bytes:
        return float(hardware.memory_bytes), hardware.source
    return None, "unknown"
