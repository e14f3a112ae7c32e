"""The Kineto reader's gather stage: one field of each decoded event (format.py's structs) as
a numpy column, and a column's texts as codes, by the compiled core (``_gather.c``) where it
was built, else by its pure-Python twins below, which are the reference: the core gives the
same columns (test_gather_core.py).

A field is named by its path of attributes (``("args", "stream")``): a None on the way is the
value, as a missing ``args`` reads as args whose every field is None. An integer field is read
by one of four rules (``RULES``), a float field as ``float_column`` reads numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from operator import attrgetter
from typing import Any

import numpy as np

from gpuprofile.trace.model import NO_ID

Path = tuple[str, ...]


def as_id(value: int | str | None) -> int:
    """Streams, pids and tids are sometimes strings ("stream 7", "4093687616")."""
    if value is None:
        return NO_ID
    if isinstance(value, int):
        return value
    digits = value.rsplit(" ", 1)[-1]
    # At most 18 digits: int64, and never int()'s limit on long digit strings.
    return int(digits) if digits.lstrip("-").isdigit() and len(digits) < 19 else NO_ID


def int_or_none(value: Any) -> int | None:
    """A count (a sequence number, a message size) written as an int or as text; None where
    it is neither, or not in [0, 2**62)."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    try:
        number = int(value)
    except ValueError:
        return None
    return number if 0 <= number < 2**62 else None


def address(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _plain(value: Any) -> int:
    # The fields read so are typed ``int | None``: msgspec gives nothing else.
    if isinstance(value, int):
        return value
    raise TypeError(f"an int or None was expected, not {type(value).__name__}")


def _id(value: Any) -> int | None:
    if isinstance(value, int):  # first: most ids are ints
        return value
    return as_id(value) if isinstance(value, str) else None


# The modes of gather_ints (the numbers _gather.c's enum gives them) and each one's rule for a
# value that is not None: PLAIN an int field (bool 0/1, as numpy takes it), ID ``as_id`` of an
# int or text (anything else None), INT_OR_NONE ``int_or_none``, ADDRESS ``address``.
PLAIN, ID, INT_OR_NONE, ADDRESS = range(4)
RULES: tuple[Callable[[Any], int | None], ...] = (_plain, _id, int_or_none, address)
_INT64 = 2**63


def _values(items: Sequence[Any], path: Path) -> list[Any]:
    """Each item's value at ``path``: its first attribute, then the next ones of that unless
    it is None."""
    if not path:
        return list(items)
    values = list(map(attrgetter(path[0]), items))
    for name in path[1:]:
        get = attrgetter(name)
        values = [None if v is None else get(v) for v in values]
    return values


def py_gather_ints(
    items: list[Any],
    path: Path,
    alt: Path,
    mode: int,
    absent: int,
    rule: Callable[[Any], int | None],
    out: np.ndarray,
) -> int:
    """out[i] = the integer of each item's value at ``path`` (at ``alt`` where that is None
    and ``alt`` is not empty) by ``rule`` (``RULES[mode]``); None and a value beyond int64
    are ``absent``. Returns how many were beyond int64."""
    values = _values(items, path)
    if alt:
        values = [a if v is None else v for v, a in zip(values, _values(items, alt))]
    numbers = [absent if v is None else rule(v) for v in values]
    listed = [absent if n is None else n for n in numbers]
    try:
        out[:] = np.fromiter(listed, np.int64, len(listed))
        return 0
    except OverflowError:  # rare: only then is each number compared
        fits = [n if -_INT64 <= n < _INT64 else None for n in listed]
        out[:] = np.fromiter((absent if n is None else n for n in fits), np.int64, len(fits))
        return fits.count(None)


def float_column(values: Sequence[Any]) -> tuple[np.ndarray, np.ndarray | None]:
    """Numbers (None: NaN) as float64, and where a value could not be one (an integer beyond
    float64), or None when every value could."""
    n = len(values)
    try:
        return np.fromiter((np.nan if v is None else v for v in values), np.float64, n), None
    except (OverflowError, TypeError, ValueError):
        pass
    out = np.full(n, np.nan)
    bad = np.zeros(n, bool)
    for i, v in enumerate(values):
        try:
            out[i] = np.nan if v is None else float(v)
        except (OverflowError, TypeError, ValueError):
            bad[i] = True
    return out, bad


def py_gather_floats(items: list[Any], path: Path, out: np.ndarray, bad: np.ndarray) -> int:
    """out[i], bad[i] = ``float_column`` of each item's value at ``path``; returns how many
    are bad."""
    out[:], flags = float_column(_values(items, path))
    bad[:] = False if flags is None else flags
    return 0 if flags is None else int(flags.sum())


def py_text_codes(values: list[Any], texts: dict[Any, int], out: np.ndarray) -> None:
    """out[i] = texts.setdefault(values[i], len(texts)): each value's code among the texts
    (shared by the parts of a column), a value not among them taking the next code."""
    out[:] = np.fromiter((texts.setdefault(v, len(texts)) for v in values), np.int64, len(values))


def py_raw_codes(raws: list[Any], out: np.ndarray) -> list[bytes]:
    """The distinct texts of raws (bytes-like: msgspec.Raw) as bytes, in the order first met;
    out[i] = the position of raws[i]'s text among them."""
    texts: dict[bytes, int] = {}
    codes = (texts.setdefault(bytes(r), len(texts)) for r in raws)
    out[:] = np.fromiter(codes, np.int64, len(raws))
    return list(texts)


def py_pair_codes(
    items: list[Any], first: str, second: str, codes: Mapping[tuple[Any, Any], int], out: np.ndarray
) -> None:
    """out[i] = codes[(getattr(items[i], first), getattr(items[i], second))], an int8 (codes
    may be a dict subclass whose __missing__ works a new pair out)."""
    pairs = map(attrgetter(first, second), items)
    out[:] = np.fromiter(map(codes.__getitem__, pairs), np.int8, len(items))


def py_exact_ns(us: np.ndarray, out: np.ndarray) -> None:
    """out[i] = the int64 nanoseconds nearest to the exact binary value of the float64 us[i]
    (microseconds); no number (NaN, infinite, beyond int64) is the smallest int64.

    ``rint(us * 1000)`` rounds the product to a float first, which near 2**43 us can land a
    nanosecond off; here the product is formed in integers: us == m * 2**-shift exactly, with m
    a 53-bit integer, so m * 1000 (< 2**63) shifted back with rounding is exact.
    """
    with np.errstate(invalid="ignore", over="ignore"):
        product = np.rint(us * 1000)  # right where the integer path does not apply
        fits = (product >= -(2.0**63)) & (product < 2.0**63)
    out[:] = np.where(fits, product, 0).astype(np.int64)
    out[~fits] = np.iinfo(np.int64).min
    mantissa, exponent = np.frexp(us)
    shift = 53 - exponent.astype(np.int64)
    # shift <= 52 (|us| >= 1) leaves headroom for the rounding term; below, the float product
    # is off by far less than a nanosecond's rounding margin.
    exact = (shift >= 1) & (shift <= 52) & np.isfinite(us)
    m = (mantissa[exact] * 2.0**53).astype(np.int64)
    s = shift[exact]
    out[exact] = (m * 1000 + (np.int64(1) << (s - 1))) >> s


try:
    from gpuprofile.importers.kineto._gather import (
        exact_ns,
        gather_floats,
        gather_ints,
        pair_codes,
        raw_codes,
        text_codes,
    )
except ImportError:
    gather_ints, gather_floats = py_gather_ints, py_gather_floats
    text_codes, raw_codes, pair_codes = py_text_codes, py_raw_codes, py_pair_codes
    exact_ns = py_exact_ns
    COMPILED = False
else:
    COMPILED = True


def int_column(
    items: list[Any], path: Path, mode: int = PLAIN, absent: int = NO_ID, alt: Path = ()
) -> tuple[np.ndarray, int]:
    """The integers of each item's value at ``path`` (see gather_ints) as int64, and how many
    were beyond int64 (those ``absent``)."""
    out = np.empty(len(items), np.int64)
    beyond = gather_ints(items, path, alt, mode, absent, RULES[mode], out)
    return out, beyond


def float_column_of(items: list[Any], path: Path) -> tuple[np.ndarray, np.ndarray | None]:
    """``float_column`` of each item's value at ``path``: the numbers (None: NaN) as float64,
    and where a value could not be one, or None when every value could."""
    out = np.empty(len(items), np.float64)
    bad = np.empty(len(items), bool)
    return out, (bad if gather_floats(items, path, out, bad) else None)


def text_codes_of(values: list[Any], texts: dict[Any, int]) -> np.ndarray:
    """Each value's code among texts (int64), a value not among them added with the next
    code (see text_codes)."""
    out = np.empty(len(values), np.int64)
    text_codes(values, texts, out)
    return out


def raw_codes_of(raws: list[Any]) -> tuple[np.ndarray, list[bytes]]:
    """The raws' texts factorized (see raw_codes): each one's code (int64), and the distinct
    texts as bytes, in the order first met."""
    out = np.empty(len(raws), np.int64)
    return out, raw_codes(raws, out)


def pair_codes_of(
    items: list[Any], first: str, second: str, codes: Mapping[tuple[Any, Any], int]
) -> np.ndarray:
    """Each item's code for its pair of values (see pair_codes), as int8."""
    out = np.empty(len(items), np.int8)
    pair_codes(items, first, second, codes, out)
    return out


def exact_ns_of(us: Any) -> np.ndarray:
    """Microseconds (float64) -> int64 nanoseconds nearest to each value's exact binary value
    (see py_exact_ns), in the shape of ``us``."""
    flat = np.ascontiguousarray(us, dtype=np.float64).reshape(-1)
    out = np.empty(len(flat), np.int64)
    exact_ns(flat, out)
    return out.reshape(np.shape(us))
