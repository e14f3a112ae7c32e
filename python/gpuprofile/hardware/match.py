"""Which Hardware a device name (and its properties) or a trace ran on.

Names come from torch.cuda.get_device_name() or a trace's deviceProperties, and vary: "NVIDIA
A100-SXM4-80GB", "A100-PG509-200", "Tesla V100-DGXS-32GB", "NVIDIA H100", "AMD Radeon Graphics",
"". The name decides where it can; the properties (SM/CU count, memory, compute capability)
decide the rest. A device outside the tables gets roofs estimated from its properties where they
allow (source="estimated"), else source="unknown" with a pointer to gpuprofile.calibrate().
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from gpuprofile.errors import GpuprofileError
from gpuprofile.hardware.cache import cache_path, read_cache
from gpuprofile.hardware.model import Hardware
from gpuprofile.hardware.properties import checked_device
from gpuprofile.hardware.tables import GIB, Spec, specs
from gpuprofile.trace.model import Trace
from gpuprofile.trace.properties import checked_properties

CALIBRATE_HINT = (
    "Measure this device's roofs on its machine with gpuprofile.calibrate() (or `gpuprofile "
    "calibrate`), or pass your own Hardware(source='user', ...)."
)

# FP32 FMA lanes per SM by compute capability: the "32-bit floating-point add, multiply,
# multiply-add" row of the CUDA C++ Programming Guide's arithmetic-instruction throughput table
# (https://docs.nvidia.com/cuda/cuda-c-programming-guide/#arithmetic-instructions).
_FP32_LANES_PER_SM: dict[tuple[int, int | None], int] = {
    (5, None): 128,
    (6, 0): 64,
    (6, None): 128,
    (7, None): 64,
    (8, 0): 64,
    (8, None): 128,
    (9, None): 128,
    (10, None): 128,
    (11, None): 128,
    (12, None): 128,
}
# AMD CDNA: 64 FP32 FMA lanes per CU; CDNA 3 (gfx94x) issues twice that (AMD counts it so).
_AMD_FP32_LANES_PER_CU = 64
_AMD_CDNA3_FP32_LANES_PER_CU = 128
_ASSUMED_CLOCK_HZ = 1.5e9


@dataclass(frozen=True)
class DeviceInfo:
    """What a device name and its properties say, under one spelling."""

    name: str
    vendor: str | None  # "nvidia" | "amd" | None
    memory_bytes: int | None = None
    sm_count: int | None = None
    major: int | None = None
    minor: int | None = None
    gfx: str | None = None  # AMD gcnArchName without its feature flags: "gfx90a"
    clock_khz: int | None = None
    memory_clock_khz: int | None = None
    memory_bus_bits: int | None = None
    l2_bytes: int | None = None
    # DRAM bytes/s as the source measured or reported it (Nsight Systems' memoryBandwidth).
    memory_bandwidth: int | None = None
    # Properties that could not be used, and why ("numSms=-106 is not a whole number ...").
    ignored: tuple[str, ...] = ()

    @property
    def capability(self) -> str | None:
        return None if self.major is None else f"{self.major}.{self.minor or 0}"


def _first(props: Mapping[str, Any], *keys: str) -> Any:
    for key in keys:
        value = props.get(key)
        if value not in (None, ""):
            return value
    return None


def device_info(name: str, properties: Mapping[str, Any] | None = None) -> DeviceInfo:
    """Normalise a name and Kineto / CUDA / torch property spellings into a DeviceInfo.

    Properties that are not what they claim (a negative or boolean SM count, a string for a
    size) are left out (hardware/properties.py), and said in ``ignored``."""
    props, ignored = checked_properties(properties or {})
    major = _first(props, "computeMajor", "major")
    minor = _first(props, "computeMinor", "minor")
    capability = _first(props, "compute_capability")
    if major is None and capability is not None:
        major, minor = (int(p) for p in capability.split(".", 1))
    arch = _first(props, "gcnArchName")
    # CUDA builds of torch fill gcnArchName with something other than a gfx target.
    gfx = arch.split(":", 1)[0] if arch and arch.startswith("gfx") else None
    lowered = name.lower()
    if re.search(r"\b(amd|radeon|instinct)\b|\bmi\d{3}", lowered) or gfx:
        vendor: str | None = "amd"
    elif re.search(r"\b(nvidia|tesla|geforce|quadro|rtx)\b", lowered):
        vendor = "nvidia"
    elif _first(props, "warpSize", "warp_size") == 64:
        vendor = "amd"
    elif major is not None:
        vendor = "nvidia"
    else:
        vendor = None
    return DeviceInfo(
        name=name,
        vendor=vendor,
        memory_bytes=_first(props, "totalGlobalMem", "total_memory", "memory_bytes"),
        sm_count=_first(
            props, "numSms", "multiProcessorCount", "multi_processor_count", "sm_count"
        ),
        major=major,
        minor=minor,
        gfx=gfx,
        clock_khz=_first(props, "clockRate", "clock_rate"),
        memory_clock_khz=_first(props, "memoryClockRate", "memory_clock_rate"),
        memory_bus_bits=_first(props, "memoryBusWidth", "memory_bus_width"),
        l2_bytes=_first(props, "l2CacheSize", "L2_cache_size"),
        memory_bandwidth=_first(props, "memoryBandwidth", "memory_bandwidth"),
        ignored=tuple(ignored),
    )


# --- identification by name ----------------------------------------------------------------

Resolver = Callable[[str, DeviceInfo], tuple[str, str]]  # -> (table key, note)


def _fixed(key: str, note: str = "") -> Resolver:
    return lambda _name, _info: (key, note)


def _memory_over(info: DeviceInfo, gib: float) -> bool | None:
    return None if info.memory_bytes is None else info.memory_bytes > gib * GIB


def _a100(name: str, info: DeviceInfo) -> tuple[str, str]:
    form = "pcie" if "pcie" in name else "sxm"
    note = ""
    if "pg509" in name:
        note = (
            "A100-PG509 is an A100 SXM4 board (PG509 is its board number, as in Meta's "
            "servers); the SXM4 datasheet roofs apply."
        )
    elif form == "sxm" and "sxm" not in name:
        note = "The name does not say SXM or PCIe; the SXM4 roofs are assumed."
    if "80gb" in name:
        size = "80gb"
    elif "40gb" in name:
        size = "40gb"
    else:
        big = _memory_over(info, 60)
        size = "80gb" if big else "40gb"
        if big is None:
            note += " Neither the name nor the properties give the memory; 40GB is assumed."
    return f"a100_{form}_{size}", note.strip()


def _h100(name: str, info: DeviceInfo) -> tuple[str, str]:
    if "nvl" in name:
        return "h100_nvl", ""
    if "pcie" in name:
        return "h100_pcie", ""
    if "sxm" in name or "hbm3" in name:
        return "h100_sxm", ""
    # A bare "NVIDIA H100": the SM count tells the PCIe card (114) from the SXM class (132).
    if info.sm_count == 114:
        return "h100_pcie", "The name does not say the form factor; 114 SMs make it an H100 PCIe."
    if info.sm_count == 132:
        return "h100_sxm", (
            "The name does not say the form factor; 132 SMs make it SXM class, so the H100 SXM "
            "datasheet roofs are used."
        )
    return "h100_sxm", "The name does not say the form factor; the H100 SXM roofs are assumed."


def _v100(name: str, _info: DeviceInfo) -> tuple[str, str]:
    if "pcie" in name:
        return "v100_pcie", ""
    if "dgxs" in name:
        return "v100_sxm2", "V100-DGXS is the NVLink (SXM2-class) V100 of the DGX Station."
    if "sxm" in name:
        return "v100_sxm2", ""
    return "v100_sxm2", "The name does not say SXM2 or PCIe; the SXM2 roofs are assumed."


def _gh200(name: str, info: DeviceInfo) -> tuple[str, str]:
    hbm3e = "hbm3e" in name or "144g" in name or bool(_memory_over(info, 110))
    return ("gh200_144gb" if hbm3e else "gh200_96gb"), ""


# First match wins; the name is lower-cased with '-' and '_' turned into spaces.
_NAME_RULES: list[tuple[re.Pattern[str], Resolver]] = [
    (re.compile(p), r)
    for p, r in [
        (r"\bgh200\b", _gh200),
        (r"\bh200\b.*\bnvl\b", _fixed("h200_nvl")),
        (r"\bh200\b", _fixed("h200_sxm")),
        (r"\bh800\b.*\bpcie\b", _fixed("h800_pcie")),
        (r"\bh800\b", _fixed("h800_sxm")),
        (r"\bh100\b", _h100),
        (r"\bb200\b", _fixed("b200")),
        (r"\ba100\b", _a100),
        (r"\ba10g\b", _fixed("a10g")),
        (r"\ba10\b", _fixed("a10")),
        (r"\bl40s\b", _fixed("l40s")),
        (r"\bl4\b", _fixed("l4")),
        (r"\bt4\b", _fixed("t4")),
        (r"\bv100s\b", _fixed("v100s_pcie")),
        (r"\bv100\b", _v100),
        (r"\b2080 ?ti\b", _fixed("rtx_2080_ti")),
        (r"\b3090\b(?! ?ti)", _fixed("rtx_3090")),
        (r"\b4090\b(?! ?d\b)", _fixed("rtx_4090")),
        (r"\bmi300x\b", _fixed("mi300x")),
        (r"\bmi250x\b", _fixed("mi250x")),
        (r"\bmi250\b", _fixed("mi250")),
        (r"\bmi210\b", _fixed("mi210")),
    ]
]


# Names that say the vendor but not the model: ROCm's "AMD Radeon Graphics" on MI200s, vLLM's "".
_GENERIC = re.compile(r"^(amd radeon graphics|nvidia graphics device|amd instinct|amd|nvidia)?$")


def _by_properties(info: DeviceInfo) -> tuple[str, str] | None:
    """For generic or empty names: the entry whose SM/CU count, architecture and memory fit."""
    if info.sm_count is None:
        return None
    fits = [s for s in specs().values() if _fits(s, info)]
    if not fits:
        return None
    best = fits[0]
    note = (
        f"The name {info.name!r} does not identify the model; its properties "
        f"({info.sm_count} {'CUs' if best.vendor == 'amd' else 'SMs'}"
        + (f", {info.memory_bytes / GIB:.0f} GiB" if info.memory_bytes else "")
        + (f", compute capability {info.capability}" if info.capability else "")
        + f") match the {best.device_name}."
    )
    if len(fits) > 1:
        note += " Devices with the same properties: " + ", ".join(s.name for s in fits[1:]) + "."
    return best.key, note


def _fits(spec: Spec, info: DeviceInfo) -> bool:
    if info.vendor is not None and spec.vendor != info.vendor:
        return False
    if spec.device_sm_count != info.sm_count:
        return False
    if info.gfx is not None and spec.vendor == "amd" and info.gfx != spec.arch:
        return False
    if spec.vendor == "nvidia" and info.capability is not None and info.capability != spec.arch:
        return False
    if spec.vendor == "amd" and info.major is not None:
        # ROCm reports gfx90a as 9.0 and gfx942 as 9.4.
        reported = f"gfx9{info.minor or 0}" if info.major == 9 else None
        if reported is None or not spec.arch.startswith(reported):
            return False
    memory = spec.device_memory_bytes
    if info.memory_bytes is not None and memory is not None:
        return abs(info.memory_bytes - memory) <= 0.12 * memory
    return True


def identify(name: str, properties: Mapping[str, Any] | None = None) -> tuple[str | None, str]:
    """The table key of a device (None when no entry fits) and a note on how it was decided."""
    info = device_info(name, properties)
    normalised = " ".join(re.sub(r"[-_]", " ", name.lower()).split())
    for pattern, resolve in _NAME_RULES:
        if pattern.search(normalised):
            return resolve(normalised, info)
    # Only a name that names no model is matched by its properties: a model outside the
    # tables (an RTX 6000 Ada has an L40S's SMs and memory) is estimated, not mistaken.
    found = _by_properties(info) if _GENERIC.match(normalised) else None
    return found if found else (None, "")


# --- the Hardware ------------------------------------------------------------------------


def hardware_for_device(
    name: str, properties: Mapping[str, Any] | None = None, *, ignored: Sequence[str] = ()
) -> Hardware:
    """The roofs of a device: its datasheet entry, else an estimate, else unknown.

    Parameters:
        name: the device's name ("NVIDIA A100-SXM4-80GB", "" when unknown).
        properties: its properties in any spelling ``device_info`` reads.
        ignored: properties a caller already dropped, and why: said in the notes.
    """
    info = device_info(name, properties)
    info = replace(info, ignored=(*ignored, *info.ignored))
    key, note = identify(name, properties)
    if key is None:
        return estimate(info)
    spec = specs()[key]
    hw = spec.hardware()
    notes = [hw.notes]
    if note:
        notes.append(note)
    if "vf" in name.lower().split():
        notes.append("A virtual function (SR-IOV) of the device: the same roofs apply.")
    notes.extend(_ignored_note(info))
    scaled = hw.peak_flops
    sms = spec.device_sm_count
    if info.sm_count and sms and info.sm_count < sms:
        # A MIG slice or a cut-down board: compute scales with SMs; bandwidth is not known.
        share = info.sm_count / sms
        scaled = {k: v * share for k, v in hw.peak_flops.items()}
        notes.append(
            f"The device has {info.sm_count} of the {sms} SMs of a full {spec.device_name} (a "
            f"MIG slice?): compute roofs are scaled by {share:.3f}; the DRAM and link figures "
            "are the full device's, an upper bound."
        )
    notes.extend(_memory_variant(info, spec, sliced=scaled is not hw.peak_flops))
    return replace(
        hw,
        peak_flops=scaled,
        sm_count=info.sm_count or hw.sm_count,
        memory_bytes=info.memory_bytes or hw.memory_bytes,
        l2_bytes=info.l2_bytes or hw.l2_bytes,
        notes=" ".join(notes),
    )


def _ignored_note(info: DeviceInfo) -> list[str]:
    if not info.ignored:
        return []
    return [f"Device properties not used: {'; '.join(info.ignored)}."]


def _memory_variant(info: DeviceInfo, spec: Spec, sliced: bool) -> list[str]:
    table, reported = spec.device_memory_bytes, info.memory_bytes
    if sliced or " mig " in f" {info.name.lower()} " or not table or not reported:
        return []  # a MIG slice reports its share of the memory
    if abs(reported - table) <= 0.12 * table:
        return []
    return [
        f"The device reports {reported / GIB:.1f} GiB against {table / GIB:.0f} GiB in the "
        "table: a memory variant of this model; its compute roofs should hold, its DRAM "
        "bandwidth may differ."
    ]


def estimate(info: DeviceInfo) -> Hardware:
    """Roofs derived from a device's properties alone (source="estimated"), or unknown."""
    label = info.name or "unnamed device"
    if info.sm_count is None:
        why = f"{label!r} is not in gpuprofile's datasheet tables."
        return unknown(label, " ".join([why, *_ignored_note(info)]))
    if info.vendor == "amd":
        cdna3 = (info.gfx or "").startswith("gfx94") or (info.major, info.minor) == (9, 4)
        lanes: int | None = _AMD_CDNA3_FP32_LANES_PER_CU if cdna3 else _AMD_FP32_LANES_PER_CU
        unit, source = "CU", "64 lanes per CDNA compute unit, 128 on CDNA 3"
    elif info.major is not None:
        lanes = _FP32_LANES_PER_SM.get((info.major, info.minor)) or _FP32_LANES_PER_SM.get(
            (info.major, None)
        )
        unit, source = "SM", "CUDA C++ Programming Guide, arithmetic instruction throughput"
    else:
        lanes = None
    if lanes is None:
        why = (
            f"{label!r} is not in gpuprofile's datasheet tables and its properties do not say "
            "its architecture."
        )
        return unknown(label, " ".join([why, *_ignored_note(info)]))
    if info.clock_khz:
        clock_hz, clock_note = info.clock_khz * 1e3, "its reported boost clock"
    else:
        clock_hz, clock_note = _ASSUMED_CLOCK_HZ, "an assumed 1.5 GHz (no clock in the properties)"
    fp32 = info.sm_count * lanes * 2 * clock_hz
    notes = [
        f"{label!r} is not in gpuprofile's datasheet tables. Estimated FP32 vector peak = "
        f"{info.sm_count} {unit}s x {lanes} FP32 FMA lanes ({source}) x 2 FLOP x "
        f"{clock_hz / 1e9:.2f} GHz ({clock_note}) = {fp32 / 1e12:.1f} TFLOP/s.",
        "Tensor-core rates are not estimated.",
    ]
    dram = None
    if info.memory_bandwidth:
        dram = float(info.memory_bandwidth)
        notes.append(f"DRAM bandwidth = {dram / 1e9:.0f} GB/s, as the trace reports it.")
    elif info.memory_clock_khz and info.memory_bus_bits:
        dram = 2 * info.memory_clock_khz * 1e3 * info.memory_bus_bits / 8
        notes.append(
            f"DRAM bandwidth = 2 (double data rate) x {info.memory_clock_khz / 1e3:.0f} MHz x "
            f"{info.memory_bus_bits} bits / 8 = {dram / 1e9:.0f} GB/s."
        )
    else:
        notes.append("DRAM bandwidth is unknown (the properties give no memory clock and bus).")
    notes.extend(_ignored_note(info))
    notes.append(CALIBRATE_HINT)
    return Hardware(
        name=label,
        source="estimated",
        peak_flops={"fp32": fp32},
        dram_bytes_per_s=dram,
        sm_count=info.sm_count,
        l2_bytes=info.l2_bytes,
        memory_bytes=info.memory_bytes,
        notes=" ".join(notes),
    )


def unknown(name: str, why: str) -> Hardware:
    return Hardware(name=name, source="unknown", notes=f"{why} {CALIBRATE_HINT}")


def hardware_for_trace(trace: Trace, rank: int | None = None) -> Hardware:
    """The roofs of the device a rank's kernels ran on (rank None: the trace's first rank).

    Uses the rank's ``devices`` (``RankMeta``); when the rank's kernels ran on a device the
    list does not hold, a list of alike devices still tells the model.
    """
    ranks = trace.meta.ranks
    if rank is None:
        if not ranks:
            return unknown("unknown", "The trace records no ranks.")
        rank = min(ranks)
    if rank not in ranks:
        raise KeyError(f"rank {rank} is not in this trace (ranks: {sorted(ranks)})")
    devices = [d for d in trace.devices(rank) if isinstance(d, Mapping)]
    kernels = trace.kernels[trace.kernels["rank"] == rank]
    if not devices:
        if kernels.empty:
            return _host_calibration(trace) or unknown(
                "unknown", f"Rank {rank} of the trace shows no GPU activity."
            )
        return unknown("unknown", f"Rank {rank}'s trace carries no deviceProperties.")
    used = None
    if not kernels.empty:
        busy = kernels.groupby("device", observed=True)["dur_ns"].sum()
        used = int(busy.index.to_numpy()[busy.to_numpy().argmax()])
    checked = [checked_device(d) for d in devices]
    by_id = {d["id"]: (d, why) for d, why in reversed(checked) if d.get("id") is not None}
    note = ""
    if used is not None and used in by_id:
        device, ignored = by_id[used]
    else:
        device, ignored = checked[0]
        if used is not None:
            alike = {(d["name"], d.get("sm_count"), d.get("memory_bytes")) for d, _ in checked}
            note = (
                f"Rank {rank}'s kernels ran on device {used}, which deviceProperties do not "
                f"list; device {device.get('id')}'s properties are used"
                + (" (every listed device is alike)." if len(alike) == 1 else ".")
            )
    properties = {
        **{
            k: device[k]
            for k in ("memory_bytes", "sm_count", "compute_capability")
            if device.get(k) is not None
        },
        **device["properties"],
    }
    hw = hardware_for_device(device["name"], properties, ignored=ignored)
    return replace(hw, notes=f"{hw.notes} {note}".strip()) if note else hw


def _host_calibration(trace: Trace) -> Hardware | None:
    """A capture made on a CPU: that CPU's calibrated roofs, when a calibration is cached
    (a damaged cache counts as none here; ``calibrate()`` says what is wrong with it)."""
    torch_version = trace.meta.framework.get("torch")
    if trace.meta.host is None or torch_version is None:
        return None
    try:
        return read_cache(cache_path(trace.meta.host, torch_version))
    except GpuprofileError:
        return None
