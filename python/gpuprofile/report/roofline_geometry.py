"""The roofline's numbers, for ``roofline_layout``: which points can sit on log-log axes, the
roofs of a report's hardware, the axes' decade ranges and tick text, the roofs as lines in data
space, and a point's radius. No pixels but the radius; no text but the ticks'.

Units: x = arithmetic intensity (FLOP/byte), y = FLOP/s. The memory roof is y = bandwidth * x,
a compute roof y = peak; they meet at the ridge, x = peak / bandwidth.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpuprofile.report.roof_labels import Pt
from gpuprofile.units import format_flops_per_s

MIN_DECADES = 3
_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


@dataclass(frozen=True)
class ComputeRoof:
    """A compute roof: the precisions sharing one peak ("fp16/bf16"), its ridge."""

    key: str
    peak: float
    ridge: float | None


def number(value: Any) -> float | None:
    """A finite number as float; None for anything else (None, bool, NaN, text)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def plot_status(point: Mapping[str, Any]) -> str:
    """Why a point cannot sit on log-log axes; "" when it can."""
    flops, nbytes = number(point.get("flops")), number(point.get("bytes"))
    intensity = number(point.get("intensity"))
    achieved = number(point.get("achieved_flops_per_s"))
    if flops is None:
        return "no FLOP count"
    if nbytes is None:
        return "no byte count"
    if flops == 0:
        return "0 FLOPs (data movement only)"
    if nbytes == 0:
        return "0 bytes"
    if intensity is None or intensity <= 0:
        return "no intensity"
    if achieved is None or achieved <= 0:
        return "no measured time"
    return ""


def compute_roofs(hardware: Mapping[str, Any]) -> tuple[float | None, list[ComputeRoof], list[str]]:
    """(DRAM bandwidth or None, one compute roof per distinct peak lowest first with precisions
    of equal peak sharing it, what is missing in words). An unknown source gives no roofs."""
    bandwidth = number(hardware.get("dram_bytes_per_s"))
    memory = bandwidth if bandwidth is not None and bandwidth > 0 else None
    by_peak: dict[float, list[str]] = {}
    for precision, value in (hardware.get("peak_flops") or {}).items():
        peak = number(value)
        if peak is not None and peak > 0:
            by_peak.setdefault(peak, []).append(str(precision))
    compute = [
        ComputeRoof("/".join(names), peak, peak / memory if memory else None)
        for peak, names in sorted(by_peak.items())
    ]
    if hardware.get("source") in (None, "unknown"):
        return None, [], ["the hardware is unknown"]
    missing = [] if memory else ["no DRAM bandwidth"]
    if not compute:
        missing.append("no peak FLOP/s")
    return memory, compute, missing


def decade_domain(values: Sequence[float], min_decades: int = MIN_DECADES) -> tuple[float, float]:
    """[lo, hi] around the positive values, widened to whole decades, at least ``min_decades``
    wide (grown around the middle)."""
    finite = [v for v in values if math.isfinite(v) and v > 0]
    if not finite:
        return 1.0, 10.0**min_decades
    lo = math.floor(math.log10(min(finite)) + 1e-9)
    hi = math.ceil(math.log10(max(finite)) - 1e-9)
    hi = max(hi, lo + 1)
    while hi - lo < min_decades:
        if (hi - lo) % 2 == 0:
            hi += 1
        else:
            lo -= 1
    return 10.0**lo, 10.0**hi


def decades(lo: float, hi: float) -> range:
    """The exponents of the powers of ten in [lo, hi]."""
    return range(math.ceil(math.log10(lo) - 1e-9), math.floor(math.log10(hi) + 1e-9) + 1)


def intensity_tick(exp: int) -> str:
    """x tick: plain decimals from 0.001 to 10000, else 10 with a superscript exponent."""
    if -3 <= exp <= 4:
        return f"{10.0**exp:.{-exp}f}" if exp < 0 else str(10**exp)
    return "10" + str(exp).translate(_SUPERSCRIPT)


def flops_tick(exp: int) -> str:
    """y tick: an SI-prefixed FLOP/s without trailing zeros ("1 TFLOP/s")."""
    text = format_flops_per_s(10.0**exp)
    number, _, unit = text.partition(" ")
    return f"{number.rstrip('0').rstrip('.') if '.' in number else number} {unit}"


def roof_line(
    peak: float, bandwidth: float | None, xs: tuple[float, float], ys: tuple[float, float]
) -> list[Pt]:
    """One compute roof in data space, clipped to the domains: up the memory slope from where
    it enters the plot to the ridge, then flat to the right edge; flat only without bandwidth."""
    (x0, x1), (y0, y1) = xs, ys
    if not bandwidth:
        return [(x0, peak), (x1, peak)] if y0 <= peak <= y1 else []
    ridge = peak / bandwidth
    out: list[Pt] = []
    start = max(x0, y0 / bandwidth)
    end = min(ridge, x1, y1 / bandwidth)
    if start < end:
        out += [(start, bandwidth * start), (end, peak if end == ridge else bandwidth * end)]
    if y0 <= peak <= y1 and ridge < x1:
        flat = max(ridge, x0)
        if not (out and out[-1][0] == flat):
            out.append((flat, peak))
        out.append((x1, peak))
    return out


def memory_line(bandwidth: float, xs: tuple[float, float], ys: tuple[float, float]) -> list[Pt]:
    """The memory roof alone (no compute roof known): the slope across the plot."""
    a, b = max(xs[0], ys[0] / bandwidth), min(xs[1], ys[1] / bandwidth)
    return [(a, bandwidth * a), (b, bandwidth * b)] if a < b else []


def point_radius(time_ns: Any, max_time_ns: float, r_min: float = 3, r_max: float = 16) -> float:
    """Radius in px: area proportional to time, the heaviest at ``r_max``, none below ``r_min``
    so light points stay clickable."""
    t = number(time_ns)
    if t is None or t <= 0 or max_time_ns <= 0:
        return r_min
    return max(r_min, r_max * math.sqrt(min(1.0, t / max_time_ns)))


class LogScale:
    """log10 from a data domain onto px; r1 < r0 flips the axis."""

    def __init__(self, domain: tuple[float, float], r0: float, r1: float) -> None:
        self.l0 = math.log10(domain[0])
        self.span = (math.log10(domain[1]) - self.l0) or 1.0
        self.r0, self.r1 = r0, r1

    def __call__(self, v: float) -> float:
        return self.r0 + (math.log10(v) - self.l0) / self.span * (self.r1 - self.r0)
