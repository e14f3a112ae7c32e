"""How durations and sizes are written for people: one spelling everywhere."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal


def format_ns(ns: float) -> str:
    """A duration with a unit a person reads at a glance."""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(ns) >= scale:
            digits = ".3g" if abs(ns) < 100 * scale else ".0f"
            return f"{ns / scale:{digits}} {unit}"
    return f"{ns:.0f} ns"


def format_bytes(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


_SI_PREFIXES = (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3))


def _sig3(x: float) -> str:
    """3 significant digits, rounded as the widget's JavaScript rounds (Math.round, toFixed,
    toPrecision: halves of the exact binary value away from zero), so both read alike."""
    a = abs(x)
    if a == 0:
        return "0"
    if a >= 100:
        return str(math.floor(x + 0.5))
    exact = Decimal(x)
    if a >= 1:
        return str(exact.quantize(Decimal("0.1" if a >= 10 else "0.01"), rounding=ROUND_HALF_UP))
    rounded = exact.quantize(Decimal(1).scaleb(exact.adjusted() - 2), rounding=ROUND_HALF_UP)
    if rounded.adjusted() != exact.adjusted():  # 0.9996 -> 1.00, not 1.000
        rounded = rounded.quantize(Decimal(1).scaleb(rounded.adjusted() - 2))
    return format(rounded, "f")


def format_si(value: float, unit: str = "") -> str:
    """3 significant digits with an SI prefix on the unit: "33.9 GFLOP/s", "1.50 GB", "12.3 k";
    the same spelling as the widget's formatSI (js/model/format.js)."""
    for prefix, scale in _SI_PREFIXES:
        # Rounded first, so 999.96e9 reads "1.00 T", not "1000 G".
        if float(_sig3(abs(value) / scale)) >= 1:
            return f"{_sig3(value / scale)} {prefix}{unit}"
    return f"{_sig3(value)} {unit}".rstrip() if value else f"0 {unit}".rstrip()


def format_reading(value: float, unit: str) -> str:
    """A gauge or sampled reading in its unit, as the widget shows it (formatReading): SI
    prefixes for bytes, rates and plain counts; the number as read for W, MHz and the like."""
    if unit == "%":
        return f"{value:.1f}%"
    if unit in ("", "B", "B/s", "FLOP/s"):
        return format_si(value, unit)
    return f"{value:.0f} {unit}" if float(value).is_integer() else f"{value:.1f} {unit}"
