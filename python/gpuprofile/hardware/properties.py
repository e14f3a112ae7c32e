"""Device properties as analyses may use them: every figure checked once, here.

A trace's deviceProperties come from the tool that wrote it, a hand edit or a hostile file: an
SM count can be negative, ``true``, ``"1e400"`` or a list. A property that is not what it claims
to be is unknown (None), never computed with, and the reason is kept so the report can say
which property was ignored and why. A bool is never a number here, though Python says it is one:
``numSms: true`` is no device with one SM.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpuprofile.trace.model import Trace

# A count beyond 2**53 is none a device has, and floats (roofs, shares) stop being exact there.
MAX_COUNT = 2**53

# Properties that are whole numbers above zero (sizes, counts, clocks), in any spelling the
# importers keep: Kineto's, CUDA's, torch's, Nsight's and gpuprofile's own device summary.
COUNTS = frozenset(
    (
        "numSms", "multiProcessorCount", "multi_processor_count", "sm_count", "smCount",
        "totalGlobalMem", "total_memory", "memory_bytes", "clockRate", "clock_rate",
        "memoryClockRate", "memory_clock_rate", "memoryBusWidth", "memory_bus_width",
        "l2CacheSize", "L2_cache_size", "memoryBandwidth", "memory_bandwidth",
        "maxThreadsPerMultiprocessor", "maxThreadsPerBlock", "warpSize", "warp_size",
        "regsPerBlock", "regsPerMultiprocessor", "sharedMemPerBlock",
        "sharedMemPerMultiprocessor", "maxSharedMemoryPerMultiProcessor", "computeMajor", "major",
    )
)  # fmt: skip
# Whole numbers that may be zero: a device id, a compute capability's minor version.
INDICES = frozenset(("id", "computeMinor", "minor"))
TEXTS = frozenset(("name", "gcnArchName", "compute_capability"))


def count(value: Any) -> int | None:
    """A whole number above zero (an int, or a float with no fraction), else None."""
    number = _whole(value)
    return number if number is not None and number > 0 else None


def index(value: Any) -> int | None:
    """A whole number of zero or more, else None."""
    number = _whole(value)
    return number if number is not None and number >= 0 else None


def text(value: Any) -> str | None:
    """A string, else None (a name that is a list or a number is no name)."""
    return value if isinstance(value, str) else None


def capability(value: Any) -> str | None:
    """A CUDA compute capability "major.minor" (both whole numbers, major above 0), else None."""
    if not isinstance(value, str):
        return None
    major, dot, minor = value.partition(".")
    if not dot or not major.isdigit() or not minor.isdigit() or int(major) == 0:
        return None
    return f"{int(major)}.{int(minor)}"


def _whole(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if abs(value) <= MAX_COUNT else None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value) if abs(value) <= MAX_COUNT else None
    return None


def _check(key: str, value: Any) -> tuple[Any, str | None]:
    """(the value as analyses may use it or None, the reason it was dropped or None)."""
    if value is None:
        return None, None
    if key == "compute_capability":
        checked: Any = capability(value)
        wanted = 'a compute capability "major.minor"'
    elif key in COUNTS:
        checked, wanted = count(value), "a whole number above zero"
    elif key in INDICES:
        checked, wanted = index(value), "a whole number of zero or more"
    elif key in TEXTS:
        checked, wanted = text(value), "a string"
    else:
        return value, None  # not read by any analysis: left as the trace has it
    if checked is None:
        return None, f"{key}={_shown(value)} is not {wanted}"
    return checked, None


def _shown(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= 40 else shown[:37] + "..."


@dataclass(frozen=True)
class Devices:
    """A rank's devices with every property checked, and what was dropped, in words."""

    devices: tuple[dict[str, Any], ...]
    ignored: tuple[str, ...]  # "device 0: numSms=-106 is not a whole number above zero"


def checked_properties(raw: Mapping[Any, Any]) -> tuple[dict[str, Any], list[str]]:
    """Properties by name with the figures analyses read checked (``COUNTS``, ``INDICES``,
    ``TEXTS``); an unusable one is left out, and the reason for it returned."""
    properties: dict[str, Any] = {}
    reasons = []
    for key, value in raw.items():
        checked, why = _check(str(key), value)
        if why:
            reasons.append(why)
        elif checked is not None:
            properties[str(key)] = checked
    return properties, reasons


def checked_device(device: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """One device (the importers' summary: id, name, memory_bytes, sm_count,
    compute_capability, properties) with its figures checked.

    Returns:
        the device, every checked figure None where it was unusable (a name then ""), and the
        reasons, one per dropped figure.
    """
    summary: list[str] = []
    out: dict[str, Any] = {}
    for key, value in device.items():
        if key == "properties":
            continue
        out[key], why = _check(key, value)
        if why:
            summary.append(why)
    raw = device.get("properties")
    reasons: list[str] = []
    properties: dict[str, Any] = {}
    if isinstance(raw, Mapping):
        properties, reasons = checked_properties(raw)
    elif raw is not None:
        reasons.append(f"properties={_shown(raw)} is not a mapping")
    out["properties"] = properties
    out["name"] = out.get("name") or ""
    # The summary repeats figures of the properties (sm_count is numSms): a bad one said once.
    said = {_tail(why) for why in reasons}
    return out, reasons + [why for why in summary if _tail(why) not in said]


def _tail(reason: str) -> str:
    return reason.split("=", 1)[1]


def trace_devices(trace: Trace, rank: int) -> Devices:
    """The devices a trace records for a rank, each checked (``checked_device``)."""
    devices, ignored = [], []
    for position, device in enumerate(trace.devices(rank)):
        if not isinstance(device, Mapping):
            ignored.append(f"device entry {position} is not a mapping")
            continue
        checked, reasons = checked_device(device)
        devices.append(checked)
        label = checked["id"] if checked.get("id") is not None else f"entry {position}"
        ignored += [f"device {label}: {reason}" for reason in reasons]
    return Devices(tuple(devices), tuple(ignored))
