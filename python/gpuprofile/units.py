"""How numbers are written for people: durations, sizes, rates, FLOP/s, shares and counts.

One spelling everywhere: the text report and every hint format through here, and the widget
through js/model/format.js, which spells them the same way. Both are held to one table of cases,
js/model/format.cases.json. Rounding is the widget's (JavaScript's Math.round and toFixed:
halves of the exact binary value away from zero), so both read alike to the last digit. An
unknown number (None, NaN, infinite) prints as an en dash, never as a made-up 0.
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_UP, Decimal

UNKNOWN = "\u2013"  # an en dash, as the widget shows it
_SI_PREFIXES = (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3))
_TIME_UNITS = (("s", 1e9), ("ms", 1e6), ("µs", 1e3))


def _known(x: float | None) -> float | None:
    if x is None or isinstance(x, bool):
        return None
    value = float(x)
    return value if math.isfinite(value) else None


def _fixed(x: float, digits: int) -> str:
    """``x.toFixed(digits)``: the exact binary value rounded half away from zero."""
    return format(Decimal(x).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP), "f")


def _round(x: float) -> int:
    """``Math.round``: halves toward +infinity."""
    return math.floor(x + 0.5)


def _sig3(x: float) -> str:
    """3 significant digits without exponent notation: 3.35, 33.5, 335, 3350."""
    a = abs(x)
    if a == 0:
        return "0"
    if a >= 100:
        return str(_round(x))
    if a >= 10:  # 99.96 rounds to 100: 3 digits are then "100", not "100.0"
        text = _fixed(x, 1)
        return str(_round(x)) if abs(float(text)) >= 100 else text
    if a >= 1:
        text = _fixed(x, 2)
        return _fixed(x, 1) if abs(float(text)) >= 10 else text
    exact = Decimal(x)
    rounded = exact.quantize(Decimal(1).scaleb(exact.adjusted() - 2), rounding=ROUND_HALF_UP)
    if rounded.adjusted() != exact.adjusted():  # 0.9996 -> 1.00, not 1.000
        rounded = rounded.quantize(Decimal(1).scaleb(rounded.adjusted() - 2))
    return format(rounded, "f")


def format_si(value: float | None, unit: str = "") -> str:
    """3 significant digits with an SI prefix on the unit: "33.9 GFLOP/s", "1.50 GB", "12.3 k".
    Prefixes stop at P (larger values keep P) and at none (smaller values keep 3 digits)."""
    v = _known(value)
    if v is None:
        return UNKNOWN
    for prefix, scale in _SI_PREFIXES:
        # Rounded first, so 999.96e9 reads "1.00 T", not "1000 G".
        if float(_sig3(abs(v) / scale)) >= 1:
            return f"{_sig3(v / scale)} {prefix}{unit}"
    return f"{_sig3(v)} {unit}".rstrip()


def format_bytes(n: float | None) -> str:
    return format_si(n, "B")


def format_bytes_per_s(rate: float | None) -> str:
    return format_si(rate, "B/s")


def format_flops(flops: float | None) -> str:
    return format_si(flops, "FLOP")


def format_flops_per_s(rate: float | None) -> str:
    return format_si(rate, "FLOP/s")


def format_time(ns: float | None) -> str:
    """A duration given in ns, 3 significant digits: "850 ns", "12.3 µs", "1.50 ms", "2.00 s"."""
    v = _known(ns)
    if v is None:
        return UNKNOWN
    if v == 0:
        return "0 ns"
    for unit, scale in _TIME_UNITS:
        # Rounded first, so 999.96 µs reads "1.00 ms", not "1000 µs".
        if float(_sig3(abs(v) / scale)) >= 1:
            return f"{_sig3(v / scale)} {unit}"
    return f"{_round(v)} ns"


def format_delta_time(ns: float | None) -> str:
    """A change of duration in ns, signed: "+1.50 ms", "-850 ns", "0 ns" (as format_time)."""
    text = format_time(ns)
    return f"+{text}" if ns is not None and text not in ("0 ns", UNKNOWN) and ns > 0 else text


def format_percent(pct: float | None, digits: int = 1) -> str:
    """A percentage given in percent: 47.4 -> "47.4%"."""
    v = _known(pct)
    return UNKNOWN if v is None else f"{_fixed(v, digits)}%"


def format_fraction(fraction: float | None, digits: int = 1) -> str:
    """A fraction as a percentage: 0.474 -> "47.4%"."""
    v = _known(fraction)
    return UNKNOWN if v is None else format_percent(v * 100, digits)


def format_count(n: float | None, noun: str = "") -> str:
    """A count with thousands separators: 12345 -> "12,345"; of a noun, in its number:
    (1, "call") -> "1 call", (12345, "call") -> "12,345 calls"."""
    v = _known(n)
    if v is None:
        return UNKNOWN
    count = _round(v)
    return f"{count:,} {noun}{'' if count == 1 else 's'}" if noun else f"{count:,}"


def format_intensity(flops_per_byte: float | None) -> str:
    """Arithmetic intensity: "2.00 FLOP/B"."""
    v = _known(flops_per_byte)
    return UNKNOWN if v is None else f"{_sig3(v)} FLOP/B"


def format_reading(value: float | None, unit: str) -> str:
    """A gauge or sampled reading in its unit: SI prefixes for bytes, rates and plain counts;
    the number as read for W, MHz and the like (no "1.50 kMHz")."""
    v = _known(value)
    if v is None:
        return UNKNOWN
    if unit == "%":
        return format_percent(v)
    if unit in ("", "B", "B/s", "FLOP/s"):
        return format_si(v, unit)
    return f"{int(v) if v.is_integer() else _fixed(v, 1)} {unit}"


# What a terminal would act on or a reader could be fooled by, in text that came from a trace:
# C0 and C1 controls (ESC starts escape sequences: ESC [ 2 J clears the screen; \r and \b
# overwrite), DEL, bidirectional overrides, embeddings, isolates and marks (U+202E shows text
# reversed), line and paragraph separators, and lone surrogates (no encoder writes them).
_UNSAFE = "\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_UNSAFE_CHAR = re.compile(f"[{_UNSAFE}]")
_UNSAFE_IN_LINES = re.compile(f"(?![\n\t])[{_UNSAFE}]")
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    return _ESCAPES.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def printable(text: str, *, lines: bool = False) -> str:
    """Text from a trace (a kernel name, a path) as it may be shown in a terminal: control
    characters, escape sequences and bidirectional controls written as Python escapes
    (ESC as ``\\x1b``, U+202E as ``\\u202e``, a newline as ``\\n``); all else unchanged.

    Parameters:
        text: the text.
        lines: keep newlines and tabs (text of many lines, such as a whole report).

    Returns:
        The text, itself when nothing needed escaping.
    """
    pattern = _UNSAFE_IN_LINES if lines else _UNSAFE_CHAR
    return text if pattern.search(text) is None else pattern.sub(_escaped, text)
