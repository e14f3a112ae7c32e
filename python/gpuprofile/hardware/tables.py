"""Datasheet roofs of known accelerators, read from specs.json beside this module.

Every figure in specs.json cites the vendor document and the table it was read from; ``null``
means those documents do not give it. Figures of multi-die packages (an MI250X is two GCDs, each
one PyTorch device) are divided among the package's devices here.

Your own roofs, when the tables lack your device or you know better::

    from gpuprofile.hardware import Hardware
    mine = Hardware(
        name="my board", source="user",
        peak_flops={"fp32": 20e12, "bf16": 300e12},   # FLOP/s, keys from PRECISIONS
        dram_bytes_per_s=1.5e12,
    )
    # or in datasheet units, optionally starting from a table entry:
    mine = user_hardware("A100 at 1.2 GHz", based_on="a100_sxm_80gb", bf16_tflops=265)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache
from importlib.resources import files
from typing import Any

from gpuprofile.hardware.model import Hardware
from gpuprofile.trace.precisions import PRECISIONS

TERA = 1e12
GIGA = 1e9
GIB = 2**30
MIB = 2**20


@dataclass(frozen=True)
class Source:
    url: str
    document: str
    table: str
    figures: str  # which of the entry's figures this document gives

    def cite(self) -> str:
        return f"{self.document}, {self.table}: {self.url}"


@dataclass(frozen=True)
class Spec:
    """One table entry in the units of its datasheets, for the whole package."""

    key: str
    name: str
    vendor: str  # "nvidia" | "amd"
    arch: str  # CUDA compute capability ("8.0") or AMD gfx target ("gfx90a")
    tflops: Mapping[str, float]
    other_tflops: Mapping[str, float]
    dram_gb_per_s: float | None
    memory_gib: float | None
    link_bus: str | None
    link_gb_per_s: float | None  # one direction
    peer_link_gb_per_s: float | None  # NVLink of one device, one direction
    sm_count: int | None  # SMs or CUs of the package
    l2_mib: float | None
    devices_per_package: int
    sources: tuple[Source, ...]
    notes: str
    unverified: str | None

    @property
    def device_name(self) -> str:
        """The name of one PyTorch device of this entry (a GCD for a multi-die package)."""
        if self.devices_per_package == 1:
            return self.name
        return f"{self.name} (one of {self.devices_per_package} GCDs)"

    @property
    def device_sm_count(self) -> int | None:
        return None if self.sm_count is None else self.sm_count // self.devices_per_package

    @property
    def device_memory_bytes(self) -> int | None:
        if self.memory_gib is None:
            return None
        return round(self.memory_gib * GIB / self.devices_per_package)

    def hardware(self) -> Hardware:
        """The roofs of one device, as the datasheet gives them."""
        share = 1 / self.devices_per_package
        notes = [self.notes]
        if self.devices_per_package > 1:
            notes.append(
                f"Roofs of one GCD: the datasheet figures of the {self.name} package "
                f"divided by {self.devices_per_package}."
            )
        if self.other_tflops:
            others = ", ".join(f"{k} {v:g}" for k, v in self.other_tflops.items())
            notes.append(f"Other published rates of the package (TFLOP/s): {others}.")
        if self.link_bus:
            notes.append(f"Host link: {self.link_bus}.")
        if self.unverified:
            notes.append(f"Caution: {self.unverified}.")
        return Hardware(
            name=self.device_name,
            source="datasheet",
            peak_flops={k: v * TERA * share for k, v in self.tflops.items()},
            dram_bytes_per_s=_scaled(self.dram_gb_per_s, GIGA * share),
            link_bytes_per_s=_scaled(self.link_gb_per_s, GIGA),
            peer_link_bytes_per_s=_scaled(self.peer_link_gb_per_s, GIGA),
            sm_count=self.device_sm_count,
            l2_bytes=None if self.l2_mib is None else round(self.l2_mib * MIB * share),
            memory_bytes=self.device_memory_bytes,
            citation="; ".join(s.cite() for s in self.sources),
            notes=" ".join(notes),
        )


def _scaled(value: float | None, factor: float) -> float | None:
    return None if value is None else value * factor


@cache
def specs() -> Mapping[str, Spec]:
    """Every table entry by key, in the file's order (the order matching prefers)."""
    text = files("gpuprofile.hardware").joinpath("specs.json").read_text(encoding="utf-8")
    raw = json.loads(text)["devices"]
    by_key: dict[str, dict[str, Any]] = {}
    for entry in raw:
        if "alias_of" in entry:
            # An alias takes every figure of its target and overrides what it states.
            entry = {**by_key[entry["alias_of"]], **entry}
        by_key[entry["key"]] = entry
    return {key: _spec(entry) for key, entry in by_key.items()}


def _spec(e: dict[str, Any]) -> Spec:
    key = e["key"]
    unknown = set(e["tflops"]) - set(PRECISIONS)
    if unknown:
        raise ValueError(f"specs.json entry {key!r}: unknown precisions {sorted(unknown)}")
    sources = tuple(
        Source(url=s["url"], document=s["document"], table=s["table"], figures=s["figures"])
        for s in e["sources"]
    )
    if not sources or any(not s.url.startswith("https://") or not s.table for s in sources):
        raise ValueError(f"specs.json entry {key!r}: every entry cites an https source and table")
    link = e.get("host_link") or {}
    return Spec(
        key=key,
        name=e["name"],
        vendor=e["vendor"],
        arch=e["arch"],
        tflops=dict(e["tflops"]),
        other_tflops=dict(e.get("other_tflops") or {}),
        dram_gb_per_s=e.get("dram_gb_per_s"),
        memory_gib=e.get("memory_gib"),
        link_bus=link.get("bus"),
        link_gb_per_s=link.get("gb_per_s_per_direction"),
        peer_link_gb_per_s=(e.get("peer_link") or {}).get("gb_per_s_per_direction"),
        sm_count=e.get("sm_count"),
        l2_mib=e.get("l2_mib"),
        devices_per_package=int(e.get("devices_per_package", 1)),
        sources=sources,
        notes=e.get("notes", ""),
        unverified=e.get("unverified"),
    )


def datasheet(key: str) -> Hardware:
    """The datasheet roofs of one device of table entry ``key`` (see ``specs()``)."""
    return specs()[key].hardware()


def user_hardware(
    name: str,
    *,
    based_on: str | None = None,
    notes: str = "",
    dram_gb_per_s: float | None = None,
    link_gb_per_s: float | None = None,
    **tflops: float,
) -> Hardware:
    """Roofs you state yourself, in datasheet units (TFLOP/s, GB/s), as ``source="user"``.

    ``tflops`` are keyword arguments named ``<precision>_tflops`` (``bf16_tflops=300``). With
    ``based_on`` (a table key), the entry's figures are the start and yours replace them.
    """
    peak: dict[str, float] = {}
    for arg, value in tflops.items():
        precision = arg.removesuffix("_tflops")
        if not arg.endswith("_tflops") or precision not in PRECISIONS:
            raise TypeError(f"user_hardware: unexpected argument {arg!r}; use <precision>_tflops")
        peak[precision] = value * TERA
    base = datasheet(based_on) if based_on else Hardware(name=name, source="user")
    stated = []
    if based_on:
        stated.append(f"Based on the datasheet roofs of {base.name}.")
    if notes:
        stated.append(notes)
    return replace(
        base,
        name=name,
        source="user",
        peak_flops={**base.peak_flops, **peak},
        dram_bytes_per_s=base.dram_bytes_per_s if dram_gb_per_s is None else dram_gb_per_s * GIGA,
        link_bytes_per_s=base.link_bytes_per_s if link_gb_per_s is None else link_gb_per_s * GIGA,
        notes=" ".join(stated),
    )
