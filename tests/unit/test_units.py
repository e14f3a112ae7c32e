"""Numbers are spelt alike in the text report, the hints and the widget: units.py is held to
every case of the widget's table (js/model/format.cases.json), which format.test.js holds
format.js to."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpuprofile import units

# {"about": ..., "cases": [{"fn": "time", "args": [850], "text": "850 ns"}, ...]}; fn "time" is
# format.js's formatTime and units.format_time.
CASES = Path(__file__).parents[2] / "js" / "model" / "format.cases.json"


def _cases() -> list[Any]:
    table = json.loads(CASES.read_text(encoding="utf-8"))
    return [
        pytest.param(c["fn"], tuple(c["args"]), c["text"], id=f"{c['fn']}{tuple(c['args'])!r}")
        for c in table["cases"]
    ]


def test_the_table_covers_every_kind_of_number() -> None:
    kinds = {fn for fn, *_ in (p.values for p in _cases())}
    assert kinds == {
        "time", "delta_time", "si", "bytes", "bytes_per_s", "flops", "flops_per_s", "reading",
        "percent", "fraction", "count", "intensity",
    }  # fmt: skip


@pytest.mark.parametrize(("fn", "args", "text"), _cases())
def test_numbers_read_as_the_widget_shows_them(fn: str, args: tuple[Any, ...], text: str) -> None:
    assert getattr(units, f"format_{fn}")(*args) == text


def test_durations_are_never_spelt_us() -> None:
    assert units.format_time(3_000) == "3.00 µs"
    assert units.format_time(-3_000) == "-3.00 µs"


def test_a_count_of_a_noun_takes_its_number() -> None:
    assert units.format_count(1, "call") == "1 call"
    assert units.format_count(0, "window") == "0 windows"
    assert units.format_count(12_345, "event") == "12,345 events"
    assert units.format_count(None, "call") == units.UNKNOWN
