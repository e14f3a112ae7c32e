# The compiled direct path (_scan.c); direct.py wraps it, and the msgspec path (decode.py,
# columns.py) is its reference.
from typing import Any

def part_columns(
    raws: list[Any], anchor: int | None = None, /
) -> dict[str, dict[str, Any]] | None: ...
def earliest_us(raws: list[Any], /) -> tuple[bool, int | None]: ...
