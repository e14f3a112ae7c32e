"""Device properties checked once, for every layer that reads them: the importers at their
boundary, hardware and the analyses for a Trace from any source.

A trace's deviceProperties come from the tool that wrote it, a hand edit or a hostile file: an
SM count can be negative, ``true``, ``"1e400"`` or a list. A property that is not what it claims
to be is unknown (None), never computed with, and the reason is kept so the report can say
which property was ignored and why. A bool is never a number here, though Python says it is one:
``numSms: true`` is no device with one SM.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

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
        "maxThreadsPerMultiProcessor", "sharedMemPerBlockOptin",
    )
)  # fmt: skip
# Whole numbers that may be zero: a device id, a compute capability's minor version.
INDICES = frozenset(("id", "computeMinor", "minor"))
TEXTS = frozenset(("name", "gcnArchName", "compute_capability"))
CHECKED = COUNTS | INDICES | TEXTS


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


def check(key: str, value: Any) -> tuple[Any, str | None]:
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
        return None, f"{key}={shown(value)} is not {wanted}"
    return checked, None


def shown(value: Any) -> str:
    """A value as a reason quotes it: its repr, cut to 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def checked_properties(raw: Mapping[Any, Any]) -> tuple[dict[str, Any], list[str]]:
    """Properties by name with the figures analyses read checked (``COUNTS``, ``INDICES``,
    ``TEXTS``); an unusable one is left out, and the reason for it returned."""
    properties: dict[str, Any] = {}
    reasons = []
    for key, value in raw.items():
        checked, why = check(str(key), value)
        if why:
            reasons.append(why)
        elif checked is not None:
            properties[str(key)] = checked
    return properties, reasons
