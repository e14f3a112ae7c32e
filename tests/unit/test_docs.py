"""The README's picture of the widget (docs/widget.png, made by tests/ui/test_screenshot.py with
GPUPROFILE_UPDATE_SCREENSHOT=1): there, a PNG, small enough to keep in the repository."""

from __future__ import annotations

import struct
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PICTURE = REPO / "docs" / "widget.png"
BUDGET = 150_000  # bytes


def test_the_readme_picture_is_a_small_png() -> None:
    data = PICTURE.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "docs/widget.png is not a PNG"
    assert len(data) < BUDGET, f"docs/widget.png is {len(data):,} bytes, over {BUDGET:,}"
    width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk comes first
    assert 800 <= width <= 1200 and height > 200, (width, height)
