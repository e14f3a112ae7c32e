"""A Kineto file's header (everything beside traceEvents), checked where it is read: a value of
an unexpected type or out of range is unknown, counted in the rank's ``Findings``, never a
crash and never a wrong fact (a boolean SM count is not one SM)."""

from __future__ import annotations

import math
from typing import Any

import msgspec

from gpuprofile.importers.kineto.check import Findings
from gpuprofile.trace import properties
from gpuprofile.trace.meta import StepsEntry

# Beyond any device (2**62 bytes is 4 EiB).
_LIMIT = 2**62
# Nesting kept in the header's free-form values (distributedInfo's pg_config nests 3 deep).
_DEPTH = 8
# A job larger than this is no job a trace describes.
MAX_WORLD = 2**24


def base_time(value: Any) -> int | None:
    """baseTimeNanoseconds when it is a time in range (an int, 0 <= t < 2**62), else None."""
    if type(value) is int and 0 <= value < _LIMIT:
        return value
    return None


def _shallow(value: Any, depth: int = _DEPTH) -> bool:
    if isinstance(value, dict):
        return depth > 0 and all(_shallow(v, depth - 1) for v in value.values())
    if isinstance(value, list):
        return depth > 0 and all(_shallow(v, depth - 1) for v in value)
    return not (isinstance(value, int) and not -(2**63) <= value < 2**63)


def device_properties(props: Any, findings: Findings) -> dict[str, Any] | None:
    """One device's properties with every value checked: the figures analyses read as
    trace/properties.py allows them, other values plain scalars; what fails is left out,
    counted as unknown."""
    if not isinstance(props, dict):
        findings.unknown_value("device property entries that are not JSON objects")
        return None
    out: dict[str, Any] = {}
    for key, value in props.items():
        checked, why = properties.check(key, value)
        if why:
            findings.unknown_value(f"device property {why}")
        elif key in properties.CHECKED:
            if checked is not None:
                out[key] = checked
        elif isinstance(value, dict | list) or not _shallow(value):
            findings.unknown_value(f"device property {key}: not a number or text")
        elif isinstance(value, float) and not math.isfinite(value):
            findings.unknown_value(f"device property {key}: not a finite number")
        else:
            out[key] = value
    return out


def _short(value: Any) -> str:
    text = repr(value) if not isinstance(value, int) or abs(value) < 10**30 else "(a huge integer)"
    return text if len(text) <= 24 else text[:21] + "..."


def device_list(doc: Any, findings: Findings) -> list[dict[str, Any]]:
    """The checked properties of the devices the header lists (deviceProperties, else the
    older computeProperties)."""
    devices = doc.deviceProperties or doc.computeProperties or []
    if not isinstance(devices, list):
        findings.unknown_value("deviceProperties that is not a list")
        return []
    return [p for p in (device_properties(d, findings) for d in devices) if p is not None]


def distributed_info(value: Any, findings: Findings) -> tuple[dict[str, Any] | None, int | None]:
    """(distributedInfo with its rank and world_size checked, the rank it declares)."""
    if value is None:
        return None, None
    if not isinstance(value, dict):
        findings.unknown_value("distributedInfo that is not a JSON object")
        return None, None
    info = dict(value)
    rank: int | None = None
    declared = info.get("rank")
    if declared is not None:
        text = isinstance(declared, str) and declared.isdigit() and len(declared) < 10
        rank = int(declared) if text else properties.index(declared)
        if rank is None or rank >= MAX_WORLD:
            findings.unknown_value(f"distributedInfo.rank {_short(declared)}: not a rank")
            rank = None
            del info["rank"]
    size = info.get("world_size")
    if size is not None and not (properties.count(size) is not None and size <= MAX_WORLD):
        findings.unknown_value(f"distributedInfo.world_size {_short(size)}: not a job's size")
        del info["world_size"]
    for key in [k for k, v in info.items() if not _shallow(v)]:
        findings.unknown_value(f"distributedInfo.{key}: nested too deeply or a huge integer")
        del info[key]
    return info, rank


def flag(value: Any, key: str, findings: Findings) -> bool:
    """record_shapes, profile_memory, with_stack: 0/1 or a bool."""
    if value is None or (value in (0, 1) and isinstance(value, int)):
        return bool(value)
    findings.unknown_value(f"{key} {_short(value)}: not 0, 1 or a bool")
    return False


def scalar(value: Any, key: str, findings: Findings) -> Any:
    """A version or schema: text or a finite number, else None."""
    if value is None:
        return None
    if isinstance(value, str) or (
        isinstance(value, int | float) and not isinstance(value, bool) and _shallow(value)
        and (not isinstance(value, float) or math.isfinite(value))
    ):  # fmt: skip
        return value
    findings.unknown_value(f"{key} {_short(value)}: not text or a number")
    return None


def steps_entry(entry: Any, findings: Findings) -> StepsEntry | None:
    """A --steps export's windows and steps (times absolute), or None: a trace without the
    entry, or with someone else's under that key, reads as recorded whole."""
    if not isinstance(entry, dict) or not entry.get("windows"):
        return None
    try:
        steps = msgspec.convert(entry, StepsEntry)
    except msgspec.ValidationError:
        return None
    schedule = steps.steps.schedule if steps.steps is not None else None
    times = [t for w in steps.windows for t in (w.start_ns, w.end_ns, w.written_ns or 0)]
    valid = all(abs(t) < _LIMIT for t in times) and (
        schedule is None
        or (schedule.active >= 1 and min(schedule.wait, schedule.warmup, schedule.repeat) >= 0)
    )
    if not valid:
        findings.unknown_value("gpuprofile steps entry with times or a schedule out of range")
        return None
    return steps
