"""Readings are spelt alike in the text report and the widget (js/model/format.js)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from gpuprofile.units import format_reading

JS_TESTS = Path(__file__).parents[2] / "js" / "model" / "format.test.js"
# assert.equal(formatReading(1.5e9, "B"), "1.50 GB");
JS_CASE = re.compile(r'formatReading\(([-\d.e]+), ("[^"]*")\), ("[^"]*")\)')


def test_readings_read_as_the_widget_shows_them() -> None:
    # Every case the widget's formatReading is held to, held against format_reading.
    cases = JS_CASE.findall(JS_TESTS.read_text())
    assert len(cases) >= 10
    for value, unit, text in cases:
        assert format_reading(float(value), json.loads(unit)) == json.loads(text), (value, unit)
