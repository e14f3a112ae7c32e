"""The five gauges: how busy the GPU was and how close it came to each roof.

Per rank: GPU busy share of its GPU window; achieved DRAM bandwidth and FLOP/s against their
roofs; host-device copy bandwidth against the host link; peak memory in use against capacity.
Each achieved rate is over the time of the work whose amount is known (minimal bytes and FLOPs
from recorded shapes, analyses/flops.py), so a gauge reads "while that work ran, it moved this
fast", never an average diluted by time we cannot account for; ``note`` says how much time that is.
A value or roof that the trace and hardware cannot give is None with a note saying why.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from gpuprofile.analyses.gpu_time import gpu_time
from gpuprofile.analyses.lookups import rank_rows
from gpuprofile.analyses.names import codes, per_category
from gpuprofile.analyses.roofline import Roofline
from gpuprofile.hardware.model import Hardware
from gpuprofile.hardware.properties import trace_devices
from gpuprofile.trace.model import HOST_DEVICE_KINDS, Trace
from gpuprofile.units import format_time


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


def gauges(trace: Trace, roofline: Roofline) -> list[Gauge]:
    """Per rank, the five gauges against the roofs the roofline was drawn with."""
    hardware = roofline.hardware
    points = roofline.points
    # One level, so no time counts twice: kernels on GPU traces, else ops.
    level = points[points["level"] == ("kernel" if roofline.time_basis == "gpu" else "op")]
    # Only the columns the gauges read: a rank's rows are taken of these alone.
    level = level[list(_POINT_COLUMNS)]
    level_rank = level["rank"].to_numpy()
    out: list[Gauge] = []
    for rank in trace.ranks:
        mine = level.iloc[np.flatnonzero(level_rank == rank)]
        out += [
            _busy(trace, rank),
            _dram(mine, hardware, rank),
            _compute(mine, hardware, rank),
            _host_link(trace, hardware, rank),
            _memory(trace, hardware, rank),
        ]
    return out


def _roof_label(hardware: Hardware, what: str) -> str:
    return f"{hardware.name} {what} ({hardware.source})"


def _busy(trace: Trace, rank: int) -> Gauge:
    gpu = gpu_time(trace, rank)
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


def _coverage_note(known_ns: int, total_ns: int, what: str) -> str:
    if total_ns <= 0:
        return "no kernels, and no ops with a known amount of work, in this trace"
    if known_ns <= 0:
        return f"no {what} known for any of {format_time(total_ns)}: no shapes or no formula"
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


def _dram(points: pd.DataFrame, hardware: Hardware, rank: int) -> Gauge:
    value, known_ns, total_ns = _rate(points, "bytes", "bytes_time_ns")
    roof = hardware.dram_bytes_per_s
    return Gauge(
        "dram-bandwidth", "DRAM bandwidth", rank, value, "B/s", roof,
        _roof_label(hardware, "DRAM bandwidth") if roof else "unknown: run gpuprofile.calibrate()",
        hardware.source if roof else None,
        note=_coverage_note(known_ns, total_ns, "bytes")
        + (_TRAFFIC_NOTES[_traffic(points)] if total_ns > 0 else ""),
    )  # fmt: skip


def _compute(points: pd.DataFrame, hardware: Hardware, rank: int) -> Gauge:
    value, known_ns, total_ns = _rate(points, "flops")
    # The roof of the precision that holds most of the timed work: a bf16 model is judged
    # against the bf16 tensor-core peak, not the fp32 one. Keys, not values: fp16 and bf16
    # share a peak on most GPUs.
    keys = points["compute_roof"].to_numpy(object)
    weights = points["known_time_ns"].to_numpy(np.float64)
    has = pd.notna(keys) & (weights > 0)
    roof: float | None = None
    label = "unknown: run gpuprofile.calibrate()"
    if has.any():
        by_key = pd.Series(weights[has]).groupby(keys[has].astype(str)).sum()
        precision = str(by_key.index.to_numpy()[np.argmax(by_key.to_numpy())])
        roof = hardware.peak_flops[precision]
        label = _roof_label(hardware, f"{precision} peak")
    elif hardware.peak_flops.get("fp32"):
        roof = hardware.peak_flops["fp32"]
        label = _roof_label(hardware, "fp32 peak")
    return Gauge(
        "compute", "Compute", rank, value, "FLOP/s", roof, label,
        hardware.source if roof else None, note=_coverage_note(known_ns, total_ns, "FLOPs"),
    )  # fmt: skip


def _is_host_device(kind: str) -> bool:
    return kind in HOST_DEVICE_KINDS


def _host_link(trace: Trace, hardware: Hardware, rank: int) -> Gauge:
    copies = trace.memcpy
    on_rank = rank_rows(trace, "memcpy", rank)
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


def _memory(trace: Trace, hardware: Hardware, rank: int) -> Gauge:
    memory = trace.memory
    on_rank = rank_rows(trace, "memory", rank)
    rows = on_rank[memory["device"].to_numpy()[on_rank] >= 0]
    if not len(rows):
        return Gauge(
            "memory", "Peak GPU memory", rank, None, "B", None, "GPU capacity",
            None, note="no GPU allocator events: profile with memory recording on (--memory)",
        )  # fmt: skip
    allocated = memory[["device", "total_allocated"]].iloc[rows]
    peaks = allocated.groupby("device")["total_allocated"].max()
    device = int(peaks.index.to_numpy()[np.argmax(peaks.to_numpy())])
    capacity, source = _capacity(trace, hardware, rank, device)
    return Gauge(
        "memory", "Peak GPU memory", rank, float(peaks.max()), "B", capacity,
        f"GPU {device} capacity" if capacity else "unknown capacity", source,
        note=f"peak allocated by PyTorch's allocator on GPU {device} (reserved is higher)",
    )  # fmt: skip


def _capacity(trace: Trace, hardware: Hardware, rank: int, device: int) -> tuple[float | None, str]:
    """The device's own memory size from the trace's device properties, else the datasheet's."""
    for props in trace_devices(trace, rank).devices:  # checked: a size above zero or None
        if props.get("id") == device and props.get("memory_bytes"):
            return float(props["memory_bytes"]), "trace"
    if hardware.memory_bytes:
        return float(hardware.memory_bytes), hardware.source
    return None, "unknown"
