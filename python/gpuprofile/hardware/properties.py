"""A Trace's devices as analyses may use them: each figure checked by trace/properties.py,
whatever importer or capture made the Trace, with the reasons for what was left out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpuprofile.trace.model import Trace
from gpuprofile.trace.properties import check, checked_properties, shown


@dataclass(frozen=True)
class Devices:
    """A rank's devices with every property checked, and what was dropped, in words."""

    devices: tuple[dict[str, Any], ...]
    ignored: tuple[str, ...]  # "device 0: numSms=-106 is not a whole number above zero"


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
        out[key], why = check(key, value)
        if why:
            summary.append(why)
    raw = device.get("properties")
    reasons: list[str] = []
    properties: dict[str, Any] = {}
    if isinstance(raw, Mapping):
        properties, reasons = checked_properties(raw)
    elif raw is not None:
        reasons.append(f"properties={shown(raw)} is not a mapping")
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
