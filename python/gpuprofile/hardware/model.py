"""Hardware: the roofs a roofline is drawn against."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpuprofile.trace.precisions import PRECISIONS

SOURCES = ("datasheet", "estimated", "calibrated", "user", "unknown")


@dataclass(frozen=True)
class Hardware:
    """The roofs of one device, and where its figures come from.

    Parameters:
        name: the device ("NVIDIA H100 80GB HBM3", "CPU ... (2 threads)").
        source: "datasheet", "estimated", "calibrated", "user" or "unknown".
        peak_flops: dense peak FLOP/s per precision (``PRECISIONS``; "fp32" and "fp64" are the
            vector rates, the others tensor-core rates).
        dram_bytes_per_s: device memory bandwidth.
        link_bytes_per_s: host link bandwidth, one direction.
        peer_link_bytes_per_s: GPU-to-GPU link (NVLink) bandwidth of one device, one
            direction: the roof of collectives' bus bandwidth.
        sm_count, l2_bytes, memory_bytes: the device's properties, when known.
        citation: where the figures come from.
        notes: how they were found or estimated, in words.

    ``gpuprofile.calibrate()`` measures one; ``gpuprofile.hardware.user_hardware`` builds your
    own from datasheet units.
    """

    name: str
    source: str
    peak_flops: Mapping[str, float] = field(default_factory=dict)  # FLOP/s per precision
    dram_bytes_per_s: float | None = None
    link_bytes_per_s: float | None = None  # host link, one direction
    peer_link_bytes_per_s: float | None = None  # GPU-to-GPU link (NVLink), one direction
    sm_count: int | None = None
    l2_bytes: int | None = None
    memory_bytes: int | None = None
    citation: str | None = None  # where the figures come from
    notes: str = ""

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"hardware source {self.source!r} is not one of {SOURCES}")
        unknown = set(self.peak_flops) - set(PRECISIONS)
        if unknown:
            raise ValueError(f"unknown precisions {sorted(unknown)}; use {PRECISIONS}")
        # A roof is a rate above zero: a negative or infinite one would put every figure
        # measured against it off the scale (-106% of the roof), so it is refused here.
        rates: dict[str, float | None] = {
            f"peak_flops[{k!r}]": v for k, v in self.peak_flops.items()
        }
        rates.update(
            dram_bytes_per_s=self.dram_bytes_per_s,
            link_bytes_per_s=self.link_bytes_per_s,
            peer_link_bytes_per_s=self.peer_link_bytes_per_s,
        )
        for label, rate in rates.items():
            if rate is not None and not _is_rate(rate):
                raise ValueError(f"hardware {self.name!r}: {label} = {rate!r} is no rate above 0")
        sizes = {"sm_count": self.sm_count, "l2_bytes": self.l2_bytes}
        sizes["memory_bytes"] = self.memory_bytes
        for label, size in sizes.items():
            if size is not None and (
                isinstance(size, bool) or not isinstance(size, int) or size <= 0
            ):
                raise ValueError(f"hardware {self.name!r}: {label} = {size!r} is no count above 0")

    @property
    def known(self) -> bool:
        return self.source != "unknown" and bool(self.peak_flops) and bool(self.dram_bytes_per_s)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source": self.source,
            "peak_flops": dict(self.peak_flops),
            "dram_bytes_per_s": self.dram_bytes_per_s,
            "link_bytes_per_s": self.link_bytes_per_s,
            "peer_link_bytes_per_s": self.peer_link_bytes_per_s,
            "sm_count": self.sm_count,
            "l2_bytes": self.l2_bytes,
            "memory_bytes": self.memory_bytes,
            "citation": self.citation,
            "notes": self.notes,
        }


def _is_rate(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


UNKNOWN = Hardware(name="unknown", source="unknown", notes="run gpuprofile.calibrate()")
