"""How durations and sizes are written for people: one spelling everywhere."""

from __future__ import annotations


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
