"""The widget's wire format and timeline layout (no browser: that is tests/ui)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from kineto_docs import cpu_op, document, kernel, runtime, write

import gpuprofile
from gpuprofile.widget.encoding import decode_table, encode_table
from gpuprofile.widget.timeline import KINDS, timeline_data


def test_round_trip_keeps_values_and_alignment() -> None:
    rng = np.random.default_rng(1)
    columns = {
        "start_ns": rng.random(7) * 1e9,
        "dur_ns": rng.random(7).astype(np.float32),
        "name": rng.integers(0, 100, 7).astype(np.uint32),
        "lane": rng.integers(0, 5, 7).astype(np.uint16),
        "kind": rng.integers(0, 3, 7).astype(np.uint8),
    }
    data = encode_table(columns)
    decoded = decode_table(data)
    assert list(decoded) == list(columns)
    for name, values in columns.items():
        assert decoded[name].dtype == values.dtype
        np.testing.assert_array_equal(decoded[name], values)
    header_len = int.from_bytes(data[4:8], "little")
    import json

    header = json.loads(data[8 : 8 + header_len])
    assert all(spec["offset"] % 8 == 0 for spec in header["columns"])


def test_empty_table_and_bad_input() -> None:
    decoded = decode_table(encode_table({"x": np.empty(0, np.float64)}))
    assert len(decoded["x"]) == 0
    with pytest.raises(ValueError, match="bad magic"):
        decode_table(b"JSON")
    with pytest.raises(ValueError, match="dtype"):
        encode_table({"x": np.array(["a"], dtype=object)})
    with pytest.raises(ValueError, match="differ in length"):
        encode_table({"a": np.zeros(2), "b": np.zeros(3)})


def test_timeline_lanes_rows_and_names(tmp_path: Path) -> None:
    path = write(
        tmp_path / "t.json",
        document(
            [
                cpu_op("outer", 0, 100, ext=1),
                cpu_op("inner", 10, 20, ext=2),
                runtime("cudaLaunchKernel", 12, 3, corr=1),
                kernel("a", 20, 30, corr=1),
                kernel("b", 30, 10, corr=2),  # overlaps "a" on the same stream: a second row
                kernel("c", 60, 10, corr=3),
                kernel("<img src=x onerror=alert(1)>", 80, 1, corr=4, stream=9),
            ]
        ),
    )
    data = timeline_data(gpuprofile.load(path).trace)
    labels = [lane["label"] for lane in data.lanes]
    assert labels == ["thread 1", "GPU 0 · stream 7", "GPU 0 · stream 9"]
    assert [lane["rows"] for lane in data.lanes] == [3, 2, 1]
    cols = data.columns
    names = [data.names[i] for i in cols["name"]]
    rows = dict(zip(names, cols["row"].tolist()))
    assert rows["outer"] == 0 and rows["inner"] == 1 and rows["cudaLaunchKernel"] == 2
    assert rows["a"] == 0 and rows["b"] == 1 and rows["c"] == 0
    assert KINDS[cols["kind"][names.index("cudaLaunchKernel")]] == "runtime"
    # Sorted by lane, then start; times are offsets from the trace start.
    order = np.lexsort((cols["start_ns"], cols["lane"]))
    np.testing.assert_array_equal(order, np.arange(len(order)))
    assert cols["start_ns"][names.index("c")] == 60_000
    assert "<img src=x onerror=alert(1)>" in data.names  # carried as data; the view sets text


def test_widget_state_is_binary_not_a_json_event_list(tmp_path: Path) -> None:
    path = write(tmp_path / "t.json", document([kernel("a", 0, 5, corr=1)]))
    widget = gpuprofile.load(path).widget()
    assert isinstance(widget.events, bytes) and widget.events[:4] == b"GPT1"
    assert widget.summary["ranks"][0]["counts"]["kernels"] == 1
    assert widget.span_ns == 5000.0
