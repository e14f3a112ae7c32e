"""The Kineto importer on documents built here, one variant at a time."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gpuprofile.importers.kineto import decode, direct, load_kineto
from gpuprofile.trace.model import NO_ID, SCHEMA
from helpers.kineto_docs import cpu_op, document, kernel, memcpy, memset, runtime, write
from helpers.prerequisites import missing


def launch_doc() -> dict:
    return document(
        [
            cpu_op("aten::linear", 1000, 50, ext=1),
            cpu_op("aten::addmm", 1010, 30, ext=2),
            runtime("cudaLaunchKernel", 1015, 5, corr=77),
            kernel("gemm_kernel", 1030, 12.5, corr=77, grid=[4, 2, 1], block=[128, 1, 1]),
            kernel("relu_kernel", 1050, 2, corr=78),
            memcpy("HtoD", 990, 4, 4096, pinned=True),
            memset(1060, 1, 256),
            {
                "ph": "i",
                "cat": "cpu_instant_event",
                "name": "[memory]",
                "pid": 100,
                "tid": 1,
                "ts": 1001,
                "s": "t",
                "args": {
                    "Device Type": 1,
                    "Device Id": 0,
                    "Bytes": 512,
                    "Total Allocated": 512,
                    "Total Reserved": 2048,
                },
            },
            {"ph": "s", "id": 77, "pid": 100, "tid": 1, "ts": 1015, "cat": "ac2g", "name": "ac2g"},
            {"ph": "M", "name": "thread_name", "pid": 100, "tid": 1, "args": {"name": "main"}},
        ],
        distributedInfo={"rank": 0, "world_size": 1},
        deviceProperties=[
            {
                "id": 0,
                "name": "NVIDIA H100 80GB HBM3",
                "numSms": 132,
                "computeMajor": 9,
                "computeMinor": 0,
                "totalGlobalMem": 85e9,
            }
        ],
    )


def test_tables_hold_the_events_with_exact_times(tmp_path: Path) -> None:
    trace = load_kineto(write(tmp_path / "t.json", launch_doc()))
    # The earliest event (the memcpy at 990 us) is time zero.
    assert trace.meta.origin_ns == 990_000
    k = trace.kernels.set_index(trace.kernels["name"].astype(str))
    assert k.loc["gemm_kernel", "start_ns"] == 40_000
    assert k.loc["gemm_kernel", "dur_ns"] == 12_500
    assert (k.loc["gemm_kernel", ["grid_x", "grid_y", "block_x"]] == [4, 2, 128]).all()
    assert k.loc["relu_kernel", "grid_x"] == NO_ID
    assert trace.memcpy["kind"].tolist() == ["HtoD"]
    assert trace.memcpy["pinned"].tolist() == [True]
    assert trace.memcpy["bytes"].tolist() == [4096]
    assert trace.memset["bytes"].tolist() == [256]
    assert trace.memory["time_ns"].tolist() == [11_000]
    assert trace.memory["total_reserved"].tolist() == [2048]
    assert trace.ranks == [0]
    assert trace.meta.ranks[0].devices[0]["sm_count"] == 132
    for table, schema in SCHEMA.items():
        assert list(trace.table(table).columns) == list(schema)


def test_nesting_and_launching_op(tmp_path: Path) -> None:
    trace = load_kineto(write(tmp_path / "t.json", launch_doc()))
    ops = trace.ops.set_index(trace.ops["name"].astype(str))
    assert ops.loc["aten::linear", "depth"] == 0
    assert ops.loc["aten::addmm", "depth"] == 1
    assert ops.loc["aten::addmm", "parent"] == ops.loc["aten::linear", "id"]
    k = trace.kernels.set_index(trace.kernels["name"].astype(str))
    # The launch (correlation 77) runs inside aten::addmm, the innermost op around it.
    assert k.loc["gemm_kernel", "op_id"] == ops.loc["aten::addmm", "id"]
    assert k.loc["relu_kernel", "op_id"] == NO_ID


def test_float_and_base_relative_timestamps(tmp_path: Path) -> None:
    doc = document(
        [cpu_op("a", 4458676522690.655, 1.5), kernel("k", 4458676522691.000, 0.25, corr=1)],
        baseTimeNanoseconds=1711964646000000000,
    )
    trace = load_kineto(write(tmp_path / "t.json", doc))
    assert trace.kernels["start_ns"].tolist() == [345]
    assert trace.kernels["dur_ns"].tolist() == [250]
    assert trace.ops["dur_ns"].tolist() == [1500]
    assert trace.meta.origin_ns == 1711964646000000000 + 4458676522690655


def test_legacy_list_document_with_old_categories(tmp_path: Path) -> None:
    events = [
        {
            "ph": "X",
            "cat": "Operator",
            "name": "aten::mm",
            "pid": 1,
            "tid": "4093687616",
            "ts": 10,
            "dur": 5,
            "args": {"Input dims": [[2, 3], [3, 4]], "external id": 3},
        },
        {
            "ph": "X",
            "cat": "Runtime",
            "name": "cudaLaunchKernel",
            "pid": 1,
            "tid": "4093687616",
            "ts": 11,
            "dur": 1,
            "args": {"correlation": 9, "external id": 3},
        },
        {
            "ph": "X",
            "cat": "Kernel",
            "name": "mm_kernel",
            "pid": 0,
            "tid": "stream 7",
            "ts": 13,
            "dur": 2,
            "args": {"correlation": 9, "external id": 3},
        },
        {
            "ph": "X",
            "cat": "Memcpy",
            "name": "Memcpy DtoH (Device -> Pageable)",
            "pid": 0,
            "tid": "stream 7",
            "ts": 16,
            "dur": 1,
            "args": {"bytes": "64"},
        },
    ]
    trace = load_kineto(write(tmp_path / "t.json.gz", events, gz=True))
    assert trace.ops["category"].tolist() == ["cpu_op"]
    assert trace.ops["tid"].tolist() == [4093687616]
    assert json.loads(trace.ops["input_dims"].iloc[0]) == [[2, 3], [3, 4]]
    assert trace.kernels["stream"].tolist() == [7]
    assert trace.kernels["device"].tolist() == [0]
    assert trace.kernels["op_id"].tolist() == trace.ops["id"].tolist()
    assert trace.memcpy["kind"].tolist() == ["DtoH"]
    assert trace.memcpy["bytes"].tolist() == [64]
    assert trace.memcpy["pinned"].tolist() == [False]


def test_rank_directory_aligns_clocks(tmp_path: Path) -> None:
    for rank, offset in ((0, 0), (1, 250)):
        doc = document(
            [kernel("k", 1000 + offset, 10, corr=1)],
            distributedInfo={"rank": rank, "world_size": 2},
        )
        write(tmp_path / f"rank{rank}.json", doc)
    (tmp_path / "notes.txt").write_text("not a trace")
    trace = load_kineto(tmp_path)
    assert trace.ranks == [0, 1]
    by_rank = dict(zip(trace.kernels["rank"].tolist(), trace.kernels["start_ns"].tolist()))
    assert by_rank == {0: 0, 1: 250_000}
    assert np.array_equal(trace.kernels["id"].to_numpy(), np.arange(2))


def test_duplicate_ranks_in_a_directory_are_an_error(tmp_path: Path) -> None:
    for name in ("a.json", "b.json"):
        write(tmp_path / name, document([kernel("k", 1, 1, corr=1)], distributedInfo={"rank": 3}))
    with pytest.raises(Exception, match=r"rank 3 appears twice: a\.json and b\.json"):
        load_kineto(tmp_path)


def test_unknown_event_kinds_are_counted_not_dropped_silently(tmp_path: Path) -> None:
    doc = document(
        [
            kernel("k", 1, 1, corr=1),
            {
                "ph": "X",
                "cat": "cuda_profiler_range",
                "name": "r",
                "ts": 1,
                "dur": 1,
                "pid": 0,
                "tid": 0,
            },
        ]
    )
    trace = load_kineto(write(tmp_path / "t.json", doc))
    assert trace.meta.ranks[0].skipped == {"cuda_profiler_range": 1}


def test_nanoseconds_written_below_2_43_us_survive_the_float_decode(tmp_path: Path) -> None:
    # Kineto writes ts in microseconds with three decimals from a base up to 91 days back,
    # i.e. up to ~7.9e12 us, where float64 steps are ~1 ns: the written nanoseconds must come
    # back exactly, without the slower exact re-decode.
    rng = np.random.default_rng(7)
    # 12 hours just above 2**42 us: a trace spans hours at most (events over a day apart are
    # taken for corrupt times, test_kineto_boundary.py); the precision is that of the magnitude.
    written = np.sort(rng.integers(2**42 * 1000, 2**42 * 1000 + 12 * 3600 * 10**9, 5000))
    events = "\n,".join(
        f'{{"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, '
        f'"ts": {n // 1000}.{n % 1000:03d}, "dur": 0.001}}'
        for n in written.tolist()
    )
    path = tmp_path / "near_2_43.json"
    path.write_text(f'{{"baseTimeNanoseconds": 1000, "traceEvents": [{events}]}}')
    trace = load_kineto(path)
    got = trace.meta.origin_ns + np.sort(trace.ops["start_ns"].to_numpy())
    np.testing.assert_array_equal(got, 1000 + written)
    # The float product alone would have moved some of them.
    floats = np.array([float(f"{n // 1000}.{n % 1000:03d}") for n in written.tolist()])
    assert (np.rint(floats * 1000).astype(np.int64) != written).any()


def test_value_and_id_keys_of_other_events_do_not_stop_the_load(tmp_path: Path) -> None:
    # "value" and "id" are read for counters; other events use them for anything at all.
    doc = document(
        [
            cpu_op("aten::mm", 0.0, 5.0),
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": "a",
                "pid": 1,
                "tid": 1,
                "ts": 1.0,
                "dur": 1.0,
                "args": {"value": "text"},
            },
            {"ph": "s", "cat": "fwdbwd", "name": "f", "pid": 1, "tid": 1, "ts": 1.0, "id": 1.5},
            {"ph": "C", "name": "odd", "pid": 1, "ts": 2.0, "id": [1], "args": {"value": "x"}},
            {
                "ph": "C",
                "name": "GPU utilization [%]",
                "pid": 1,
                "ts": 3.0,
                "id": 2.5,
                "args": {"value": 7},
            },
        ]
    )
    trace = load_kineto(write(tmp_path / "loose.json", doc))
    assert len(trace.ops) == 2
    (counter,) = trace.counters.itertuples()
    assert (counter.name, counter.unit, counter.device, counter.value) == (
        "GPU utilization", "%", NO_ID, 7.0,
    )  # fmt: skip
    assert trace.meta.ranks[0].skipped["counter odd without a numeric 'value'"] == 1


@pytest.mark.parametrize(
    "entry", ["a string", [1, 2], {"windows": "none"}, {"windows": [{"x": 1}]}]
)
def test_a_foreign_gpuprofile_key_neither_fails_nor_makes_windows(
    tmp_path: Path, entry: Any
) -> None:
    doc = document([kernel("k", 10.0, 5.0, corr=1)], gpuprofile=entry)
    trace = load_kineto(write(tmp_path / "t.json", doc))
    assert len(trace.kernels) == 1
    assert trace.meta.windows == () and trace.meta.steps is None


def test_autograd_sequence_and_forward_thread_are_read_per_op(tmp_path: Path) -> None:
    # A forward linear and its inner transpose share a sequence number; the engine op of the
    # grad_fn they made carries it too, on the backward thread counter; AccumulateGrad has
    # none; a number that is no integer is unknown.
    events = [
        cpu_op("aten::linear", 10.0, 5.0, **{"Sequence number": 42, "Fwd thread id": 0}),
        cpu_op("aten::t", 10.5, 1.0, **{"Sequence number": 42, "Fwd thread id": 0}),
        cpu_op("aten::relu", 16.0, 1.0, **{"Sequence number": 43, "Fwd thread id": 0}),
        cpu_op(
            "autograd::engine::evaluate_function: AddmmBackward0",
            30.0,
            4.0,
            tid=2,
            **{"Sequence number": 42, "Fwd thread id": 1},
        ),
        cpu_op("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", 35, 1),
        cpu_op("aten::mul", 40.0, 1.0, **{"Sequence number": "x", "Fwd thread id": True}),
    ]
    doc = document(events)
    trace = load_kineto(write(tmp_path / "t.json", doc))
    expected = {
        (e["name"], int(e["ts"] * 1000)): (
            e["args"].get("Sequence number"),
            e["args"].get("Fwd thread id"),
        )
        for e in doc["traceEvents"]
    }
    origin = trace.meta.origin_ns
    for row in trace.ops.itertuples():
        sequence, fwd = expected[(row.name, row.start_ns + origin)]
        assert row.sequence == (sequence if isinstance(sequence, int) else NO_ID), row.name
        ok = isinstance(fwd, int) and not isinstance(fwd, bool)
        assert row.fwd_tid == (fwd if ok else NO_ID), row.name
    # A trace without autograd args has the columns, all unknown.
    plain = load_kineto(write(tmp_path / "p.json", document([cpu_op("aten::add", 1.0, 1.0)])))
    assert plain.ops["sequence"].tolist() == [NO_ID]
    assert plain.ops["fwd_tid"].tolist() == [NO_ID]


def test_a_range_left_open_ends_with_the_profilers_span(tmp_path: Path) -> None:
    """A ProfilerStep never closed is written ending seconds after the profiler's own span
    (its Trace event): it is cut at the span's end and said; a range ending within the
    tolerance of the span's end keeps its time."""
    span = {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": 1, "tid": 1}
    doc = document(
        [
            {**span, "ts": 0, "dur": 2000},
            cpu_op("ProfilerStep#1", 1000, 10_000_000),
            cpu_op("aten::add", 1100, 50),
            cpu_op("aten::sync_at_stop", 1900, 100.5),  # ends 0.5 us after the span
        ]
    )
    trace = load_kineto(write(tmp_path / "trace.json", doc))
    ops = trace.ops.set_index("name")
    origin = 1000 * 1000  # the first timeline event's start, in ns: the trace's time 0
    assert ops.loc["ProfilerStep#1", "start_ns"] == 0
    assert ops.loc["ProfilerStep#1", "dur_ns"] == 2000 * 1000 - origin
    assert ops.loc["aten::add", "dur_ns"] == 50 * 1000
    assert ops.loc["aten::sync_at_stop", "dur_ns"] == 100_500
    [(reason, count)] = trace.meta.ranks[0].unknown.items()
    assert count == 1 and "outlasts the profiler's own span" in reason


@pytest.mark.parametrize(
    ("part_bytes", "whole_us"),
    [(10**12, 0), (0, 0), (0, 16)],
    ids=["whole", "parts", "parts, the first two whole us"],
)
def test_absolute_nanoseconds_beyond_float64_come_back_exactly_whole_or_in_parts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, part_bytes: int, whole_us: int
) -> None:
    # Absolute Unix microseconds with nanosecond digits (1.7e15 us: float64 steps of 0.25 us)
    # need the exact second decode. In parts (a file over PART_BYTES), the parts' earliest ts is
    # found first, as a whole decode finds it, and each part is rebased on it: from the start
    # where the first part shows the need, else once a later part shows it (whole_us: the
    # first events' ts are whole microseconds, which float64 holds).
    monkeypatch.setattr(decode, "PART_BYTES", part_bytes)
    monkeypatch.setattr(decode, "PART_EVENTS", 7)
    if part_bytes:  # whole: msgspec's decode (with the compiled core every file is in parts)
        monkeypatch.setattr(direct, "scanned", None)
    rng = np.random.default_rng(11)
    drawn = rng.integers(1_700_000_000_000_000_000, 1_700_000_000_600_000_000, 50)
    drawn[:whole_us] -= drawn[:whole_us] % 1000
    written = np.sort(drawn)
    events = "\n,".join(
        f'{{"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, '
        f'"ts": {n // 1000}{"" if k < whole_us else f".{n % 1000:03d}"}, "dur": 0.001}}'
        for k, n in enumerate(drawn.tolist())
    )
    path = tmp_path / "absolute.json"
    path.write_text(f'{{"traceEvents": [{events}]}}')
    trace = load_kineto(path)
    got = trace.meta.origin_ns + np.sort(trace.ops["start_ns"].to_numpy())
    np.testing.assert_array_equal(got, written)
    assert (trace.ops["dur_ns"] == 1).all()


def test_an_earliest_ts_past_what_the_core_reads_loads_as_without_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Exact times rebased on an earliest ts of 31 digits (-1e30 us, which Decimal reads): the
    # compiled core declines the parts (its numbers stop at 18 digits) and the msgspec path
    # reads them, as it does without the core; nothing is raised.
    if direct.scanned is None:  # else both loads below would be without it: nothing compared
        missing("the compiled reader core is not built; `make setup` builds it")
    monkeypatch.setattr(decode, "PART_BYTES", 0)
    monkeypatch.setattr(decode, "PART_EVENTS", 3)
    events = ",".join(
        f'{{"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": {ts}, "dur": 1}}'
        for ts in ("1712195495519689.047", "1712195495519690.5", "-1e30", "1712195495519691")
    )
    path = tmp_path / "far.json"
    path.write_text(f'{{"traceEvents": [{events}]}}')
    with_core = load_kineto(path)
    monkeypatch.setattr(direct, "scanned", None)
    without = load_kineto(path)
    assert with_core.ops.equals(without.ops)
    assert with_core.meta == without.meta


@pytest.mark.parametrize("space", [b"\n", b" \t\r\n"])
@pytest.mark.parametrize("as_list", [False, True])
def test_leading_whitespace_reads_as_without_it(
    tmp_path: Path, space: bytes, as_list: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch's export starts with a newline: the file reads as the same trace, whether read
    whole (small, without the compiled core) or in parts (with it, or past PART_BYTES: 1 KB
    here), object or legacy list."""
    doc: Any = launch_doc()
    text = json.dumps(doc["traceEvents"] if as_list else doc).encode()
    plain = load_kineto(_written(tmp_path / "plain.json", text))
    spaced = _written(tmp_path / "spaced.json", space + text)
    for raw in (space + text, b"", b" \x0b\x0c[", space):  # as bytes.lstrip() reads them
        assert decode.first_byte(raw) == raw.lstrip()[:1]
    for part_bytes, scanned in (
        (decode.PART_BYTES, direct.scanned),
        (decode.PART_BYTES, None),
        (1024, None),
    ):
        monkeypatch.setattr(decode, "PART_BYTES", part_bytes)
        monkeypatch.setattr(direct, "scanned", scanned)
        got = load_kineto(spaced)
        for table in ("ops", "kernels", "runtime"):
            assert got.table(table).equals(plain.table(table)), (table, part_bytes, scanned)


def _written(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path
