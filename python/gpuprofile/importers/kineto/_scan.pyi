# The compiled direct path (_scan.c); direct.py wraps it, and the msgspec path (decode.py,
# columns.py) is its reference.
from typing import Any

def part_columns(raws: list[Any], /) -> dict[str, dict[str, Any]] | None: ...
