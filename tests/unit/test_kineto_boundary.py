"""The Kineto reader's boundary (issue 16): what reaches the tables is valid; an event it cannot
use is skipped and counted by reason, a value it cannot use is unknown and counted, and every
count reaches the report. Each bad trace is a small document written here, by hand."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import gpuprofile
from gpuprofile.importers.kineto import decode as kineto_decode
from gpuprofile.importers.kineto import direct, load_kineto
from gpuprofile.importers.kineto.decode import MAX_NESTING
from gpuprofile.report.notices import notices
from gpuprofile.trace.model import NO_ID, Trace
from helpers.kineto_docs import cpu_op, document, kernel, memcpy, runtime, write


@pytest.fixture(params=["whole", "parts"])
def read(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every case read whole (by msgspec, as where the compiled core is not built), and in
    parts of 2 events (as every file is with the core, and larger ones without it)."""
    if request.param == "whole":
        monkeypatch.setattr(direct, "scanned", None)
    if request.param == "parts":
        monkeypatch.setattr(kineto_decode, "PART_BYTES", 0)
        monkeypatch.setattr(kineto_decode, "PART_EVENTS", 2)
    return str(request.param)


def good_kernels(n: int = 3) -> list[dict]:
    """n kernels 10 us long, 100 us apart, correlations 1..n."""
    return [kernel(f"k{i}", 100.0 * i, 10.0, corr=i + 1) for i in range(n)]


def load(tmp_path: Path, events: list[Any], **top: Any) -> Trace:
    return load_kineto(write(tmp_path / "t.json", document(events, **top)))


def rejected(trace: Trace) -> dict[str, int]:
    return dict(trace.meta.ranks[trace.ranks[0]].rejected)


def unknown(trace: Trace) -> dict[str, int]:
    return dict(trace.meta.ranks[trace.ranks[0]].unknown)


def texts(trace: Trace, kind: str) -> list[str]:
    return [n["text"] for n in notices(trace.meta) if n["kind"] == kind]


# --- 1. times ---------------------------------------------------------------------------------


def test_negative_dur_is_skipped_and_counted(tmp_path: Path, read: str) -> None:
    bad = kernel("neg", 50.0, -5.0, corr=9)
    trace = load(tmp_path, [*good_kernels(), bad])
    assert sorted(trace.kernels["name"].astype(str)) == ["k0", "k1", "k2"]
    assert rejected(trace) == {"kernel events with a negative dur": 1}
    assert (trace.kernels["dur_ns"] == 10_000).all()
    assert texts(trace, "rejected") == ["kernel events with a negative dur: 1 not read."]


@pytest.mark.parametrize(
    ("ts", "reason"),
    [
        ("12.5", "events whose ts is not a number"),
        (True, "events whose ts is not a number"),
        (10**30, "kernel events with a ts beyond int64 nanoseconds"),
        (10**400, "kernel events with a ts beyond int64 nanoseconds"),
        (-(10**17), "kernel events with a ts beyond int64 nanoseconds"),
    ],
)
def test_unusable_ts_is_skipped(tmp_path: Path, read: str, ts: Any, reason: str) -> None:
    bad = kernel("bad", 0.0, 1.0, corr=9)
    bad["ts"] = ts
    trace = load(tmp_path, [*good_kernels(), bad])
    assert len(trace.kernels) == 3
    assert rejected(trace) == {reason: 1}
    # The wall (first start to last end) is that of the good kernels: 210 us.
    end = trace.kernels["start_ns"] + trace.kernels["dur_ns"]
    assert int(end.max()) - int(trace.kernels["start_ns"].min()) == 210_000


def test_float_beyond_float64_is_skipped(tmp_path: Path, read: str) -> None:
    text = json.dumps(document([*good_kernels(), kernel("bad", 7.0, 1.0, corr=9)]))
    path = tmp_path / "t.json"
    path.write_text(text.replace('"ts": 7.0', '"ts": 1e400'))
    trace = load_kineto(path)
    assert len(trace.kernels) == 3
    assert rejected(trace) == {"kernel events with a ts beyond int64 nanoseconds": 1}


def test_nan_is_not_json(tmp_path: Path) -> None:
    # json.dumps writes NaN; JSON has no such number, and the decoder says where it is.
    path = write(tmp_path / "nan.json", document([kernel("k", float("nan"), 1.0, corr=1)]))
    with pytest.raises(gpuprofile.TraceFormatError, match=r"line 1, column \d+"):
        load_kineto(path)


def test_missing_times_are_skipped_and_named(tmp_path: Path, read: str) -> None:
    no_ts, no_dur = kernel("a", 1.0, 1.0, corr=8), kernel("b", 1.0, 1.0, corr=9)
    del no_ts["ts"], no_dur["dur"]
    trace = load(tmp_path, [*good_kernels(), no_ts, no_dur])
    assert len(trace.kernels) == 3
    assert rejected(trace) == {"kernel events without a ts": 1, "kernel events without a dur": 1}


def test_nothing_usable_left_is_an_error_that_says_why(tmp_path: Path, read: str) -> None:
    a, b = kernel("a", 1.0, -1.0, corr=8), kernel("b", 5.0, -2.0, corr=9)
    path = write(tmp_path / "bad.json", document([runtime("r", 0.0, 1.0, corr=1), a, b]))
    path.write_text(path.read_text().replace('"cuda_runtime"', '"unknown_cat"'))
    with pytest.raises(gpuprofile.TraceFormatError) as info:
        load_kineto(path)
    assert str(info.value).startswith(f"{path}: no usable event")
    assert "2 kernel events with a negative dur (first: traceEvents[1] (kernel 'a'))" in str(
        info.value
    )


@pytest.mark.parametrize("days", [-41, 2, 40 * 365])
def test_a_far_off_time_is_an_outlier_not_a_long_trace(
    tmp_path: Path, read: str, days: int
) -> None:
    start = 1.7e15  # absolute Unix microseconds, as traces without a base time write them
    events = [kernel(f"k{i}", start + 100.0 * i, 10.0, corr=i + 1) for i in range(5)]
    far = kernel("far", start + days * 86400 * 1e6, 1.0, corr=9)
    trace = load(tmp_path, [*events, far])
    assert sorted(trace.kernels["name"].astype(str)) == [f"k{i}" for i in range(5)]
    reason = next(iter(rejected(trace)))
    assert reason.startswith("kernel events more than 12 h from the trace's median time")
    assert int(trace.kernels["start_ns"].max()) == 400_000
    report = gpuprofile.load(tmp_path / "t.json").report()
    assert "9223372037" not in json.dumps(report, default=str)


# --- 2. names, categories, phases ------------------------------------------------------------


@pytest.mark.parametrize("key", ["name", "cat", "ph"])
@pytest.mark.parametrize("value", [True, 5, ["k"], {"a": 1}])
def test_name_category_phase_must_be_text(tmp_path: Path, key: str, value: Any) -> None:
    bad = kernel("bad", 7.0, 1.0, corr=9)
    bad[key] = value
    path = write(tmp_path / "t.json", document([*good_kernels(), bad]))
    trace = load_kineto(path)
    assert len(trace.kernels) == 3
    assert rejected(trace) == {f"events whose {key} is not text": 1}
    text = gpuprofile.load(path).text()
    assert f"events whose {key} is not text: 1 not read." in text


# --- 3. args the analyses read -----------------------------------------------------------------


def test_kernel_args_out_of_range_or_wrong_type_are_unknown(tmp_path: Path, read: str) -> None:
    events = good_kernels(6)
    launch = {"grid": [4, 1, 1], "block": [128, 1, 1], "registers per thread": 32}
    for e in events:
        e["args"].update(launch, **{"est. achieved occupancy %": 50, "blocks per SM": 0.5})
    events[0]["args"]["registers per thread"] = "1e400"
    events[1]["args"]["registers per thread"] = True
    events[2]["args"]["registers per thread"] = -5
    events[3]["args"]["grid"] = [-1, 2, 3]
    events[4]["args"]["est. achieved occupancy %"] = "True"
    events[5]["args"]["blocks per SM"] = -2.0
    events[5]["args"]["correlation"] = 2**70
    trace = load(tmp_path, events)
    k = trace.kernels.sort_values("correlation", kind="stable")
    by_name = trace.kernels.set_index(trace.kernels["name"].astype(str))
    assert by_name["registers_per_thread"].tolist() == [NO_ID, NO_ID, NO_ID, 32, 32, 32]
    assert by_name["grid_x"].tolist() == [4, 4, 4, NO_ID, 4, 4]
    assert by_name.loc["k3", "grid_y"] == 2 and by_name.loc["k3", "grid_z"] == 3
    assert np.isnan(by_name.loc["k4", "occupancy"]) and by_name.loc["k3", "occupancy"] == 50
    assert (
        np.isnan(by_name.loc["k5", "blocks_per_sm"]) and by_name.loc["k0", "blocks_per_sm"] == 0.5
    )
    assert by_name.loc["k5", "correlation"] == NO_ID
    assert len(k) == 6
    counts = unknown(trace)
    assert sum(counts.values()) == 7, counts
    assert counts["registers per thread out of range [0, 2^31)"] == 1
    assert counts["grid sizes out of range [0, 2^31)"] == 1


def test_op_shapes_types_and_text_are_checked(tmp_path: Path, read: str) -> None:
    dims_ok = {"Input Dims": [[2, 3], [], [[4], [5, 6]]], "Input type": ["float", "", "TensorList"]}
    ops = [
        cpu_op("aten::ok", 0.0, 5.0, **dims_ok),
        cpu_op("aten::neg", 10.0, 5.0, **{"Input Dims": [[-1, 3]], "Input type": ["float"]}),
        cpu_op("aten::bool", 20.0, 5.0, **{"Input Dims": [[True, 3]], "Input type": ["float"]}),
        cpu_op("aten::str", 30.0, 5.0, **{"Input Dims": [["2", 3]], "Input type": [["float"]]}),
        cpu_op("aten::deep", 40.0, 5.0, **{"Input Dims": [[[[1]]]], "Input type": ["x"]}),
        cpu_op("aten::float", 50.0, 5.0, **{"Input Dims": [[2.5]], "Input type": "float"}),
    ]
    trace = load(tmp_path, ops)
    dims = dict(zip(trace.ops["name"].astype(str), trace.ops["input_dims"], strict=True))
    types = dict(zip(trace.ops["name"].astype(str), trace.ops["input_types"], strict=True))
    assert json.loads(dims["aten::ok"]) == dims_ok["Input Dims"]
    assert json.loads(types["aten::ok"]) == dims_ok["Input type"]
    for name in ("aten::neg", "aten::bool", "aten::str", "aten::deep", "aten::float"):
        assert dims[name] is None, name
    assert types["aten::str"] is None and types["aten::float"] is None
    assert {type(v) for v in trace.ops["input_dims"]} <= {str, type(None)}
    counts = unknown(trace)
    assert counts["Input Dims that are not lists of non-negative integer sizes"] == 5
    assert counts["Input types that are not lists of text"] == 2
    # The analyses run on what is left (no unhashable list, no negative dimension).
    gpuprofile.load(tmp_path / "t.json").report()


def test_invalid_utf8_in_recorded_args_is_unknown(tmp_path: Path, read: str) -> None:
    ops = [cpu_op("aten::mm", 0.0, 5.0, **{"Input Dims": [[2, 3]]}), cpu_op("aten::x", 9.0, 1.0)]
    text = json.dumps(document(ops)).encode()
    raw = text.replace(b'"Input Dims": [[2, 3]]', b'"Input Dims": ["\xff\xfe"]')
    (tmp_path / "t.json").write_bytes(raw)
    trace = load_kineto(tmp_path / "t.json")
    assert trace.ops["input_dims"].isna().all()
    assert unknown(trace) == {"Input Dims that are not lists of non-negative integer sizes": 1}


def test_invalid_utf8_in_a_name_is_a_clear_error(tmp_path: Path) -> None:
    raw = json.dumps(document(good_kernels())).encode().replace(b'"k1"', b'"k\xff"')
    (tmp_path / "t.json").write_bytes(raw)
    with pytest.raises(gpuprofile.TraceFormatError, match="not UTF-8"):
        load_kineto(tmp_path / "t.json")


# --- 4. nesting ---------------------------------------------------------------------------------


def _nested_in(tmp_path: Path, key: str, depth: int) -> Path:
    text = json.dumps(document(good_kernels()))
    nested = "[" * depth + "]" * depth
    text = text.replace('"correlation": 1}', f'"correlation": 1, "{key}": {nested}}}', 1)
    assert nested in text
    (tmp_path / "deep.json").write_text(text)
    return tmp_path / "deep.json"


@pytest.mark.parametrize("key", ["Collective name", "Input Dims", "a key not read"])
@pytest.mark.parametrize("depth", [MAX_NESTING + 10, 3_000, 100_000])
def test_deep_nesting_is_a_clear_error(tmp_path: Path, read: str, key: str, depth: int) -> None:
    path = _nested_in(tmp_path, key, depth)
    with pytest.raises(gpuprofile.TraceFormatError) as info:
        load_kineto(path)
    message = str(info.value)
    # The document, traceEvents, the event and its args nest 4 levels above.
    assert message.startswith(
        f"{path}: nested too deeply to read: {depth + 4} levels of arrays or objects, more "
        f"than {MAX_NESTING} (line 1, column "
    )


# --- 5. partial events, empty traces ---------------------------------------------------------


@pytest.mark.parametrize("limit", [200, 1_000_000])
def test_the_nesting_bound_holds_whatever_the_recursion_limit(
    tmp_path: Path, read: str, limit: int
) -> None:
    # A notebook may raise Python's recursion limit; the decoder's bound does not follow it.
    path = _nested_in(tmp_path, "Input Dims", 100_000)
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        with pytest.raises(gpuprofile.TraceFormatError, match="nested too deeply"):
            load_kineto(path)
        assert sys.getrecursionlimit() == limit
    finally:
        sys.setrecursionlimit(before)
    # 30 levels, as deep as no Kineto trace nests, still read.
    assert len(load_kineto(_nested_in(tmp_path, "Input Dims", 30)).kernels) == 3


def test_events_with_only_some_fields(tmp_path: Path, read: str) -> None:
    partial = [{"ph": "X"}, {"cat": "kernel"}, {}, {"name": "x", "ph": "i"}, 5, "text", None]
    trace = load(tmp_path, [*good_kernels(), *partial])
    assert len(trace.kernels) == 3
    assert rejected(trace) == {"events that are not JSON objects": 3}
    skipped = trace.meta.ranks[0].skipped
    assert skipped == {"(no category)": 1, "phase (none)": 2, "instant x": 1}


def test_a_trace_of_hours_keeps_every_event(tmp_path: Path) -> None:
    hours = [kernel(f"k{i}", i * 3600 * 1e6, 10.0, corr=i + 1) for i in range(20)]
    trace = load(tmp_path, hours)
    assert len(trace.kernels) == 20 and not rejected(trace)


def test_empty_trace_events_reads_as_an_empty_trace(tmp_path: Path, read: str) -> None:
    trace = load(tmp_path, [])
    assert all(len(trace.table(t)) == 0 for t in ("ops", "kernels", "runtime"))
    gpuprofile.load(tmp_path / "t.json").text()
    bare = write(tmp_path / "bare.json", [])  # the legacy bare list, empty
    assert all(len(load_kineto(bare).table(t)) == 0 for t in ("ops", "kernels", "runtime"))


# --- 6. exact duplicates ------------------------------------------------------------------------


def test_exact_duplicates_count_once(tmp_path: Path, read: str) -> None:
    copies = [memcpy("HtoD", 0.0, 40.0, 1000), memcpy("HtoD", 40.0, 40.0, 2000)]
    events = [*good_kernels(), *copies]
    trace = load(tmp_path, events * 3)
    assert len(trace.kernels) == 3 and len(trace.memcpy) == 2
    assert int(trace.memcpy["dur_ns"].sum()) == 80_000  # not 240 us within an 80 us window
    assert trace.kernels["id"].tolist() == [0, 1, 2]
    assert trace.meta.ranks[0].duplicates == 10
    assert texts(trace, "duplicates") == [
        "10 duplicate events ignored (each equal in every field read to an earlier event): "
        "counted once."
    ]


@pytest.mark.parametrize(("key", "value"), [("tid", 8), ("pid", 1)])
def test_events_that_differ_in_one_field_are_kept(tmp_path: Path, key: str, value: int) -> None:
    # pid and tid are no kernel columns, yet tell events apart: an export of a job writes
    # each rank's kernels under its own pid.
    a, b = kernel("k", 0.0, 10.0, corr=1), kernel("k", 0.0, 10.0, corr=1)
    b[key] = value
    trace = load(tmp_path, [a, b])
    assert len(trace.kernels) == 2 and trace.meta.ranks[0].duplicates == 0


# --- 7. what is skipped reaches the report ------------------------------------------------------


def test_skipped_kinds_reach_the_report_and_the_text(tmp_path: Path) -> None:
    others = [
        {"ph": "X", "cat": "mystery", "name": "m", "ts": 1, "dur": 1},
        {"ph": "X", "cat": "mystery", "name": "m", "ts": 2, "dur": 1},
        {"ph": "i", "cat": "x", "name": "marker", "ts": 3},
        {"ph": "Q", "name": "q", "ts": 3},
    ]
    path = write(tmp_path / "t.json", document([*good_kernels(), *others]))
    profile = gpuprofile.load(path)
    line = "4 events of kinds gpuprofile does not read: 2 mystery, 1 instant marker, 1 phase Q."
    assert [n["text"] for n in profile.report()["notices"] if n["kind"] == "skipped"] == [line]
    assert line in profile.text()


# --- 9. device properties ---------------------------------------------------------------------


@pytest.mark.parametrize("sms", [-106, 0, True, "108", 1.5, 10**40, [108]])
def test_device_property_that_is_no_count_is_unknown(tmp_path: Path, sms: Any) -> None:
    device = {"id": 0, "name": "NVIDIA A100-SXM4-80GB", "numSms": sms, "totalGlobalMem": 85e9}
    path = write(tmp_path / "t.json", document(good_kernels(), deviceProperties=[device]))
    trace = load_kineto(path)
    (summary,) = trace.devices(0)
    assert summary["sm_count"] is None and "numSms" not in summary["properties"]
    assert summary["memory_bytes"] == 85_000_000_000 and summary["name"] == device["name"]
    (reason,) = unknown(trace)
    assert reason.startswith("device property numSms")
    assert reason.endswith("is not a whole number above zero")
    report = gpuprofile.load(path).report()
    assert any(reason in n["text"] for n in report["notices"])


def test_device_entries_and_header_of_wrong_types(tmp_path: Path) -> None:
    top = {
        "deviceProperties": [5, {"id": 0, "name": ["x"], "numSms": 108}],
        "baseTimeNanoseconds": "soon",
        "record_shapes": "yes",
        "distributedInfo": {"rank": "abc", "world_size": 10**12},
        "schemaVersion": [1],
    }
    trace = load(tmp_path, good_kernels(), **top)
    (summary,) = trace.devices(0)
    assert summary["sm_count"] == 108 and summary["name"] == ""
    assert trace.meta.ranks[0].base_time_ns is None and trace.ranks == [0]
    assert trace.meta.ranks[0].distributed == {}
    assert len(unknown(trace)) == 7, unknown(trace)


def test_reading_in_threads_leaves_the_recursion_limit_as_it_was(tmp_path: Path) -> None:
    """Each decode lowers Python's recursion limit to bound nesting; threads reading at once
    (a Dask worker's) once restored each other's lowered limit and left it for good."""
    path = write(tmp_path / "t.json", document(good_kernels(2000)))
    before = sys.getrecursionlimit()
    threads = [
        threading.Thread(target=lambda: [load_kineto(path) for _ in range(20)]) for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sys.getrecursionlimit() == before
