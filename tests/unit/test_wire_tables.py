"""The widget's binary tables (widget/wire.py) and the JS generated from them
(js/model/wire_tables.js): the file is what wire.py gives, a column added in Python without
regenerating makes it stale, encode_wire refuses a table that is not its kind's, and every
table the widget really sends has the columns and dtypes the JS file lists (read from the
bytes and from the file's text, not through wire.py)."""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import pytest

from gpuprofile.profiles import Profile
from gpuprofile.report.schema_gen import REPO, stale
from gpuprofile.widget import requests, wire
from gpuprofile.widget.encoding import read_header
from gpuprofile.widget.request_args import Source
from gpuprofile.widget.requests import handle
from gpuprofile.widget.timeline import timeline_data
from helpers.synthetic import synthetic_trace


def _js_tables() -> dict[str, dict[str, list[str]]]:
    """WIRE_TABLES as the committed JS file spells it: kind -> column -> dtypes."""
    text = (REPO / wire.TABLES_FILE).read_text(encoding="utf-8")
    body = text.split("export const WIRE_TABLES = {", 1)[1]
    tables: dict[str, dict[str, list[str]]] = {}
    for kind, columns in re.findall(r"\n  (\w+): \{\n(.*?)\n  \},", body, re.S):
        tables[kind] = {
            json.loads(name): json.loads(dtypes)
            for name, dtypes in re.findall(r'^    ("[^"]+"): (\[.*\]),$', columns, re.M)
        }
    return tables


def test_the_generated_file_is_up_to_date() -> None:
    assert not stale(REPO, wire.generated()), "regenerate: python -m gpuprofile.widget.wire --write"


def test_a_column_added_in_python_makes_it_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    about, columns = wire.TABLES["counters"]
    monkeypatch.setitem(wire.TABLES, "counters", (about, {**columns, "unit": ("uint8",)}))
    assert stale(REPO, wire.generated()) == [wire.TABLES_FILE]
    assert " * @property {Uint8Array} unit\n" in wire.javascript()


def test_encode_wire_refuses_what_its_kind_lacks_or_does_not_allow() -> None:
    counters = {"time_ns": np.zeros(2), "value": np.ones(2)}
    assert read_header(wire.encode_wire("counters", counters))["n"] == 2
    with pytest.raises(ValueError, match="columns"):
        wire.encode_wire("counters", {"time_ns": np.zeros(2)})
    with pytest.raises(ValueError, match="columns"):
        wire.encode_wire("counters", {**counters, "unit": np.zeros(2, np.uint8)})
    with pytest.raises(ValueError, match="columns"):
        wire.encode_wire("counters", {"value": np.ones(2), "time_ns": np.zeros(2)})
    with pytest.raises(ValueError, match="'value' is float32"):
        wire.encode_wire("counters", {**counters, "value": np.ones(2, np.float32)})


@pytest.fixture(scope="module")
def sent() -> dict[str, list[dict[str, Any]]]:
    """The header of each table the widget sends a synthetic trace: its traits, a window of
    real events, a merged window and a search's events."""
    trace = synthetic_trace(3000, streams=3, step=100, overlap_every=11)
    widget = Profile(trace).widget()
    source = Source(data=timeline_data(trace), trace=trace)

    def ask(**message: Any) -> dict[str, Any]:
        reply, (table,) = handle(source, {"request": 1, **message})
        assert "error" not in reply, reply
        return read_header(table)

    window = {"type": "window", "start": 1e6, "end": 2e6, "width": 50}
    real = ask(**window)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(requests, "DETAIL_LIMIT", 10)
        merged = ask(**window)
    return {
        "events": [read_header(widget.events), real, merged],
        "counters": [read_header(widget.counters)],
        "marks": [read_header(widget.marks)],
        "event_list": [ask(type="search", pattern="sgemm", regex=False)],
    }


def test_every_table_sent_is_as_the_js_lists_it(sent: dict[str, list[dict[str, Any]]]) -> None:
    tables = _js_tables()
    assert set(tables) == set(sent)
    for kind, headers in sent.items():
        for header in headers:
            assert header["n"] > 0, kind  # something was sent, so its columns say something
            listed = {name.rstrip("?"): dtypes for name, dtypes in tables[kind].items()}
            required = [name for name in tables[kind] if not name.endswith("?")]
            names = [c["name"] for c in header["columns"]]
            assert [n for n in names if n in required] == required, kind
            assert [n for n in listed if n in names] == names, kind  # in the listed order
            for column in header["columns"]:
                assert column["dtype"] in listed[column["name"]], (kind, column)
    events = [[c["name"] for c in h["columns"]] for h in sent["events"]]
    assert events[1] == ["start_ns", "dur_ns", "name", "row"]  # real events
    assert events[2] == [*events[1], "count"]  # merged boxes: with their count
