"""Nsight Compute CSV (``ncu --csv``, details or raw page) into a Trace.

Each profiled launch becomes one kernels row with what ncu measured on it: its duration (or
cycles / clock), DRAM bytes (``kernels.bytes``), FLOPs from the SASS op counts
(``kernels.flops``), and the speed-of-light, occupancy and tensor-pipe figures
(``kernels.metrics``; ncu_metrics.py says which). ncu replays each launch in isolation, so the
file holds no timeline: launches are laid end to end in ID order, and a note says so. The
device comes from the CSV (``device__attribute_*`` metrics, a "Device Name" column) or the
profiled program's ``device: NAME (sm_XY), N SMs, F GHz`` line before the header.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from gpuprofile.errors import TraceFormatError
from gpuprofile.importers.ncu_csv import Launch, NcuTable, read_ncu_csv
from gpuprofile.importers.ncu_metrics import (
    Measured,
    UnreadableValue,
    device_properties,
    dims,
    measure,
    number,
    unit_scale,
)
from gpuprofile.trace.meta import RankMeta, Source, TraceMeta
from gpuprofile.trace.model import Trace, make_table

_PREAMBLE_DEVICE = re.compile(
    r"device:\s*(?P<name>.+?)\s*(\(sm_(?P<sm>\d+)\))?\s*,\s*(?P<sms>\d+)\s*SMs"
    r"(\s*,\s*(?P<ghz>[\d.]+)\s*GHz)?",
    re.IGNORECASE,
)
# device__attribute_* metric -> the deviceProperties key hardware/match.py reads, and the
# base unit it is written in there (clocks in kHz, sizes in bytes).
_ATTRIBUTES = {
    "device__attribute_multiprocessor_count": ("numSms", ""),
    "device__attribute_clock_rate": ("clockRate", "khz"),
    "device__attribute_max_gpu_frequency_khz": ("clockRate", "khz"),
    "device__attribute_memory_clock_rate": ("memoryClockRate", "khz"),
    "device__attribute_max_mem_frequency_khz": ("memoryClockRate", "khz"),
    "device__attribute_global_memory_bus_width": ("memoryBusWidth", ""),
    "device__attribute_l2_cache_size": ("l2CacheSize", "byte"),
    "device__attribute_compute_capability_major": ("computeMajor", ""),
    "device__attribute_compute_capability_minor": ("computeMinor", ""),
}
# A launch that ran longer than a year was not measured: its figure is damage, not a time.
_MAX_DURATION_NS = 365 * 24 * 3600 * 10**9
_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1
REPLAY_NOTE = (
    "Nsight Compute replays each launch in isolation: the kernels are laid end to end in ID "
    "order, so their start times and the gaps between them (none) are not the application's."
)


def load_ncu(path: str | Path) -> Trace:
    """Read an Nsight Compute CSV (ncu --csv, details or raw page) into a Trace.

    Parameters:
        path: the CSV file.

    Returns:
        A one-rank Trace whose kernels are the profiled launches, with measured ``flops``,
        ``bytes`` and ``metrics``; ``meta.source.format`` is "ncu".

    Raises:
        TraceFormatError: the file is not an ncu CSV, has no metrics, or a value is not a
            number (the message names the line and the metric).
    """
    path = Path(path)
    table = read_ncu_csv(path)
    launches = sorted(table.launches, key=_id_order)
    devices = _devices(table, launches)
    clocks = {d["id"]: _clock_hz(d) for d in devices}
    measured: list[Measured] = []
    for launch in launches:
        device = _device_id(launch)
        try:
            measured.append(measure(launch, clocks.get(device, math.nan)))
        except UnreadableValue as exc:
            raise TraceFormatError(path, str(exc)) from None
    no_time = [launch.key for launch, m in zip(launches, measured, strict=True)
               if not math.isfinite(m.duration_ns)]  # fmt: skip
    if no_time:
        raise TraceFormatError(
            path,
            f"launch ID {no_time[0]} has neither a duration (gpu__time_duration.sum, "
            "'Duration') nor cycles and a clock (sm__cycles_elapsed.avg and its .per_second)",
        )
    impossible = [(launch.key, m.duration_ns) for launch, m in zip(launches, measured, strict=True)
                  if not 0 <= m.duration_ns <= _MAX_DURATION_NS]  # fmt: skip
    if impossible:
        key, ns = impossible[0]
        raise TraceFormatError(
            path, f"launch ID {key} has a duration of {ns:g} ns, which no launch can have"
        )
    kernels = _kernels(launches, measured)
    notes = [REPLAY_NOTE]
    derived = sum(m.duration_from == "cycles / clock" for m in measured)
    if derived:
        notes.append(f"{derived} launch(es) have no measured time: cycles / clock is used.")
    if all(not math.isfinite(m.flops) for m in measured):
        notes.append(
            "The CSV holds no SASS floating-point op counts "
            "(smsp__sass_thread_inst_executed_op_*_pred_on.sum): FLOPs are not measured."
        )
    meta = TraceMeta(
        source=Source(format="ncu", path=str(path), files=(str(path),)),
        ranks={0: RankMeta(devices=tuple(devices), files=(str(path),))},
        notes=tuple(notes),
    )
    return Trace(kernels=kernels, meta=meta)


def _id_order(launch: Launch) -> tuple[int, float, str]:
    try:
        return 0, number(launch.key), launch.key
    except ValueError:
        return 1, 0.0, launch.key


def _device_id(launch: Launch) -> int:
    try:
        value = number(launch.identity.get("Device", ""))
    except ValueError:
        return 0
    return _whole(value, _INT32_MAX, 0)


def _whole(value: float | None, top: int, missing: int = -1) -> int:
    """``value`` as a whole number of at most ``top``; ``missing`` where it is not one (NaN,
    negative, a fraction's damage past the column's range), so that one odd cell makes that
    figure unknown rather than the file unreadable."""
    if value is None or not math.isfinite(value) or not 0 <= value <= top:
        return missing
    return int(value)


def _kernels(launches: list[Launch], measured: list[Measured]) -> Any:
    n = len(launches)
    dur = np.array([round(m.duration_ns) for m in measured], dtype=np.int64)
    start = np.concatenate([[0], np.cumsum(dur)[:-1]]).astype(np.int64)
    grids = [dims(launch.identity.get("Grid Size", "")) or _launch_dims(m, "grid") for
             launch, m in zip(launches, measured, strict=True)]  # fmt: skip
    blocks = [dims(launch.identity.get("Block Size", "")) or _launch_dims(m, "block") for
              launch, m in zip(launches, measured, strict=True)]  # fmt: skip
    columns: dict[str, Any] = {
        "id": np.arange(n, dtype=np.int64),
        "rank": np.zeros(n, dtype=np.int32),
        "device": np.array([_device_id(launch) for launch in launches], dtype=np.int32),
        "stream": np.array([_int(launch.identity.get("Stream")) for launch in launches]),
        "name": [launch.identity.get("Kernel Name", "") for launch in launches],
        "start_ns": start,
        "dur_ns": dur,
        "correlation": np.array([_int(launch.key) for launch in launches]),
        "registers_per_thread": [
            _int_metric(m, "launch__registers_per_thread", "Registers Per Thread") for m in measured
        ],
        "shared_memory": [_shared_memory(m) for m in measured],
        "occupancy": [m.metrics.get("achieved_occupancy_pct", math.nan) for m in measured],
        "flops": [m.flops for m in measured],
        "bytes": [m.dram_bytes for m in measured],
        "metrics": [m.metrics for m in measured],
    }
    for axis, i in (("x", 0), ("y", 1), ("z", 2)):
        columns[f"grid_{axis}"] = [g[i] if g else -1 for g in grids]
        columns[f"block_{axis}"] = [b[i] if b else -1 for b in blocks]
    return make_table("kernels", columns)


def _int(text: str | None) -> int:
    try:
        value = number(text or "")
    except ValueError:
        return -1
    return _whole(value, _INT64_MAX)


def _int_metric(m: Measured, *names: str) -> int:
    for name in names:
        value = m.metrics.get(name)
        if value is not None and math.isfinite(value):
            return _whole(value, _INT32_MAX)
    return -1


def _launch_dims(m: Measured, kind: str) -> tuple[int, int, int] | None:
    axes = [m.metrics.get(f"launch__{kind}_dim_{axis}") for axis in "xyz"]
    if all(a is not None for a in axes):
        x, y, z = (_whole(a or 1, _INT32_MAX) for a in axes)
        return (x, y, z) if min(x, y, z) >= 0 else None
    size = _whole(m.metrics.get(f"launch__{kind}_size"), _INT32_MAX)
    return (size, 1, 1) if size >= 0 else None


def _shared_memory(m: Measured) -> int:
    """Static plus dynamic shared memory per block, in bytes (-1: not in the file)."""
    static = m.metrics.get("launch__shared_mem_per_block_static",
                           m.metrics.get("Static Shared Memory Per Block"))  # fmt: skip
    dynamic = m.metrics.get("launch__shared_mem_per_block_dynamic",
                            m.metrics.get("Dynamic Shared Memory Per Block"))  # fmt: skip
    if static is None and dynamic is None:
        return -1
    return _whole((static or 0) + (dynamic or 0), _INT64_MAX)


# --- devices --------------------------------------------------------------------------------


def _devices(table: NcuTable, launches: list[Launch]) -> list[dict[str, Any]]:
    """One device dict per "Device" id the launches name, in the spelling trace/meta.py uses."""
    preamble = _preamble_device(table.preamble)
    out: dict[int, dict[str, Any]] = {}
    for launch in launches:
        device = _device_id(launch)
        if device in out:
            continue
        props: dict[str, Any] = dict(preamble.get("properties", {}))
        attributes = device_properties(launch.metrics)
        props.update(attributes)
        for metric, (key, base) in _ATTRIBUTES.items():
            if metric in launch.metrics and isinstance(attributes.get(metric), int | float):
                props[key] = _in_base(launch, metric, base)
        capability = launch.identity.get("CC", "").strip()
        if capability and "computeMajor" not in props and "." in capability:
            major, minor = capability.split(".", 1)
            props["computeMajor"], props["computeMinor"] = int(major), int(minor)
        name = str(
            attributes.get("device__attribute_display_name")
            or launch.identity.get("Device Name")
            or preamble.get("name")
            or ""
        )
        cc_major, cc_minor = props.get("computeMajor"), props.get("computeMinor")
        out[device] = {
            "id": device,
            "name": name,
            "memory_bytes": None,
            "sm_count": props.get("numSms"),
            "compute_capability": f"{cc_major}.{cc_minor}" if cc_major is not None else None,
            "properties": props,
        }
    return list(out.values())


def _in_base(launch: Launch, metric: str, base: str) -> int:
    value = launch.metrics[metric]
    raw = number(value.text)
    if base == "khz" and value.unit:
        scale, unit = unit_scale(value.unit)
        if unit == "hz":
            return round(raw * scale / 1e3)
    if base == "byte" and value.unit:
        return round(raw * unit_scale(value.unit)[0])
    return round(raw)


def _preamble_device(lines: list[str]) -> dict[str, Any]:
    """The device a program printed before ncu's table (``device: NVIDIA GeForce RTX 5070
    (sm_120), 48 SMs, 2.625 GHz``), as a name and properties; {} when none."""
    for line in lines:
        found = _PREAMBLE_DEVICE.search(line)
        if not found:
            continue
        props: dict[str, Any] = {"numSms": int(found["sms"])}
        if found["sm"]:
            sm = found["sm"]
            props["computeMajor"], props["computeMinor"] = int(sm[:-1]), int(sm[-1])
        if found["ghz"]:
            props["clockRate"] = round(float(found["ghz"]) * 1e6)
        return {"name": found["name"].strip(), "properties": props}
    return {}


def _clock_hz(device: dict[str, Any]) -> float:
    khz = (device.get("properties") or {}).get("clockRate")
    return float(khz) * 1e3 if isinstance(khz, int | float) else math.nan
