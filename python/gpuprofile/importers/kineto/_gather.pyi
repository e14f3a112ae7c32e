# The compiled reader core (_gather.c); gather.py's py_gather_ints, py_gather_floats,
# py_text_codes, py_raw_codes, py_pair_codes and py_exact_ns are its pure-Python twins, with these
# signatures.
from collections.abc import Callable
from typing import Any

def gather_ints(
    items: list[Any],
    path: tuple[str, ...],
    alt: tuple[str, ...],
    mode: int,
    absent: int,
    rule: Callable[[Any], int | None],
    out: Any,
    /,
) -> int: ...
def gather_floats(items: list[Any], path: tuple[str, ...], out: Any, bad: Any, /) -> int: ...
def text_codes(values: list[Any], texts: dict[Any, int], out: Any, /) -> None: ...
def raw_codes(raws: list[Any], out: Any, /) -> list[bytes]: ...
def pair_codes(items: list[Any], first: str, second: str, codes: Any, out: Any, /) -> None: ...
def exact_ns(us: Any, out: Any, /) -> None: ...
