"""Readings are spelt alike in the text report and the widget (js/model/format.js)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuprofile.units import format_reading


# The cases js/model/format.test.js asserts for formatReading, plus the gauges' FLOP/s.
@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (1.5e9, "B", "1.50 GB"),
        (512, "B", "512 B"),
        (12.04e9, "B/s", "12.0 GB/s"),
        (73.24, "%", "73.2%"),
        (12345, "", "12.3 k"),
        (1500, "MHz", "1500 MHz"),
        (251.37, "W", "251.4 W"),
        (33.9e9, "FLOP/s", "33.9 GFLOP/s"),
        (999.96e9, "B/s", "1.00 TB/s"),
        (0, "B", "0 B"),
    ],
)
def test_readings_read_as_the_widget_shows_them(value: float, unit: str, text: str) -> None:
    assert format_reading(value, unit) == text


def test_the_js_cases_are_the_same_cases() -> None:
    # If the widget's spelling changes, this file's cases must follow.
    js = (Path(__file__).parents[2] / "js" / "model" / "format.test.js").read_text()
    for case in ('(1.5e9, "B"), "1.50 GB"', '(12345, ""), "12.3 k"', '(1500, "MHz"), "1500 MHz"'):
        assert f"formatReading{case}" in js
