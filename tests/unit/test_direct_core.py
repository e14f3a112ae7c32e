"""The Kineto reader's direct path (importers/kineto/_scan.c, through direct.py) reads a part's
events from their JSON texts into exactly the columns the msgspec path makes of them (decode,
sort_events, checked_times, the columns builders: the reference), or declines the part: on
crafted events that reach every rule, where each value it cannot read exactly must decline,
on every part of every shared Kineto trace, and on whole loads of the shared traces read in
parts. A part it reads records no finding on the msgspec path either. The same with exact
times (every ts rebased on an anchor, as decode.py does with Decimal), and the earliest whole
microsecond of a part's ts against decode.exact_times'.
Without the built core the comparisons skip (fail under CI=true, where ``make setup`` builds
it)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import msgspec
import numpy as np
import pandas as pd
import pytest

from gpuprofile.importers.kineto import direct
from gpuprofile.importers.kineto import trace as kineto
from gpuprofile.importers.kineto.check import Findings, Shapes, checked_times
from gpuprofile.importers.kineto.columns import sort_events
from gpuprofile.importers.kineto.decode import (
    LIST_DECODER,
    PART_BYTES,
    PART_EVENTS,
    exact_times,
    first_byte,
    rebase,
)
from gpuprofile.importers.kineto.direct import DirectPart
from gpuprofile.importers.source import read_trace_bytes
from helpers.prerequisites import SHARED_TRACES, missing

KINETO = SHARED_TRACES / "kineto"


class _Outline(msgspec.Struct):
    traceEvents: list[msgspec.Raw]


_RAWS = msgspec.json.Decoder(list[msgspec.Raw])
_OUTLINE = msgspec.json.Decoder(_Outline)


@pytest.fixture(scope="module")
def core() -> ModuleType:
    try:
        from gpuprofile.importers.kineto import _scan
    except ImportError as error:
        missing(f"the compiled reader core is not built ({error}); `make setup` builds it")
    return _scan


def reference(
    raws: list[bytes], anchor: int | None = None
) -> tuple[DirectPart, Findings, tuple[list[Any], list[Any]]]:
    """What the msgspec path reads of a part as a DirectPart (the columns of each table with
    events, what was skipped, the threads' names, the profiler's spans' ends, as trace.py
    takes them from sort_events), its findings, and the counters and out-of-memory instants
    (which the direct path never reads); with an anchor, each ts rebased on it exactly."""
    part = b"[" + b",".join(raws) + b"]"
    events = LIST_DECODER.decode(part)
    if anchor is not None:
        rebase(events, exact_times(Path("part.json"), part, part), anchor)
    buckets, counters, annotations, spans, names, skipped, failures = sort_events(events)
    buckets = {**buckets, "gpu_annotations": annotations}
    findings = Findings()
    shapes = Shapes(findings)
    tables: dict[str, dict[str, Any]] = {}
    _, span_start, span_dur = checked_times(spans, "profiler spans", True, Findings(), str)
    for table, bucket in buckets.items():
        kept, start, dur = checked_times(
            bucket, kineto._WHAT[table], table not in kineto._INSTANTS, findings, lambda e: ""
        )
        columns = kineto._BUILDERS[table](kept, (start, dur), findings, shapes)
        if table in kineto._LANELESS:
            columns.update(kineto._lane_columns(kept, findings))
        if len(bucket):
            tables[table] = columns
    part = DirectPart(tables, dict(skipped), names, (span_start + span_dur).tolist())
    return part, findings, (counters, failures)


def read_directly(
    raws: list[bytes], findings: Findings | None = None, anchor: int | None = None
) -> DirectPart | None:
    reader = direct.direct_reader(Shapes(findings or Findings()))
    assert reader is not None
    return reader([msgspec.Raw(r) for r in raws], anchor)


def assert_equal_columns(got: dict[str, Any], want: dict[str, Any], where: str) -> None:
    assert sorted(got) == sorted(want), where
    for name, expected in want.items():
        value = got[name]
        if isinstance(expected, np.ndarray):
            assert isinstance(value, np.ndarray), (where, name)
            assert value.dtype == expected.dtype, (where, name, value.dtype, expected.dtype)
            np.testing.assert_array_equal(value, expected, err_msg=f"{where} {name}")
        else:
            assert list(value) == list(expected), (where, name)


def compared(raws: list[bytes], where: str = "", anchor: int | None = None) -> DirectPart | None:
    """What the direct path reads of raws, checked equal to the msgspec path's reading where
    it read them (the msgspec path then recording no finding, no counter, no failure)."""
    found = Findings()
    got = read_directly(raws, found, anchor)
    if got is None:
        return None
    want, findings, others = reference(raws, anchor)
    # Only the recorded inputs' check (check.Shapes, which both paths run) finds anything.
    assert not findings.rejected and not found.rejected, (where, findings.summary())
    assert found.unknown == findings.unknown, where
    assert set(findings.unknown) <= {
        "Input Dims that are not lists of non-negative integer sizes",
        "Input types that are not lists of text",
        "Concrete Inputs that are not lists of values",
    }, where
    counters, failures = others
    assert not (counters or failures), where
    assert list(got.skipped.items()) == list(want.skipped.items()), where  # in order first met
    assert list(got.thread_names.items()) == list(want.thread_names.items()), where
    assert got.span_ends == want.span_ends, where
    assert sorted(got.tables) == sorted(want.tables), where
    for table in want.tables:
        assert_equal_columns(got.tables[table], want.tables[table], f"{where} {table}")
    return got


def text(event: dict[str, Any] | bytes) -> bytes:
    """An event's JSON text (non-ASCII as UTF-8, as torch writes it); bytes as they are."""
    return event if isinstance(event, bytes) else json.dumps(event, ensure_ascii=False).encode()


OP = {
    "ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 8, "ts": 1000.5,
    "dur": 20.25,
    "args": {
        "External id": 3, "Input Dims": [[2, 3], [3, 4]], "Input type": ["float", "float"],
        "Concrete Inputs": ["", ""], "Sequence number": 11, "Fwd thread id": 0,
    },
}  # fmt: skip
KERNEL = {
    "ph": "X", "cat": "kernel", "name": "sgemm_kernel", "pid": 0, "tid": 7, "ts": 1003.125,
    "dur": 5.5,
    "args": {
        "External id": 3, "device": 0, "stream": 7, "correlation": 40, "grid": [4, 2, 1],
        "block": [128, 1, 1], "registers per thread": 64, "shared memory": 4096,
        "blocks per SM": 0.5, "est. achieved occupancy %": 25, "queued": 0,
    },
}  # fmt: skip
MEMCPY = {
    "ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 0,
    "tid": 7, "ts": 1010, "dur": 2,
    "args": {"device": 0, "stream": 7, "correlation": 41, "bytes": 4096,
             "memory bandwidth (GB/s)": 12.345678901234567890123},
}  # fmt: skip
MEMSET = {
    "ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7,
    "ts": 1012, "dur": 1, "args": {"device": 0, "stream": 7, "correlation": 42, "bytes": 16},
}  # fmt: skip
RUNTIME = {
    "ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 8,
    "ts": 1002, "dur": 3, "args": {"External id": 3, "correlation": 40, "bytes": "616"},
}  # fmt: skip
MEMORY = {
    "ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 7, "tid": 8, "ts": 1001,
    "s": "t",
    "args": {"Device Type": 1, "Device Id": 0, "Addr": 140000000000, "Bytes": 512,
             "Total Allocated": 1024, "Total Reserved": 2048},
}  # fmt: skip
FLOW = {"ph": "f", "id": 40, "pid": 0, "tid": 7, "ts": 1003.125, "cat": "ac2g", "name": "ac2g"}
GOOD = [OP, RUNTIME, KERNEL, MEMCPY, MEMSET, MEMORY, FLOW]
# record_param_comms' args (torch 2.x), on the op and on its NCCL kernel
COLLECTIVE = {
    "Collective name": "allreduce", "Process Group Name": "0", "Process Group Ranks": "[0, 1]",
    "Group size": 2, "In msg nelems": 2049000, "Out msg nelems": 2049000, "dtype": "Float",
    "Seq": 12, "In split size": "[]", "Out split size": "[]",
}  # fmt: skip


def with_changes(
    event: dict[str, Any], args: dict[str, Any] | None = None, **fields: Any
) -> dict[str, Any]:
    changed = {**event, **fields}
    if args is not None:
        changed["args"] = {**event.get("args", {}), **args}
    return changed


def test_a_part_of_every_kind_reads_as_the_msgspec_path(core: ModuleType) -> None:
    raws = [text(e) for e in GOOD]
    part = compared(raws)
    assert part is not None
    got = part.tables
    assert sorted(got) == ["kernels", "memcpy", "memory", "memset", "ops", "runtime"]
    # By hand: the times in nanoseconds, the recorded inputs' texts, the kernel's launch.
    ops = got["ops"]
    assert ops["start_ns"].tolist() == [1_000_500] and ops["dur_ns"].tolist() == [20_250]
    assert ops["input_dims"] == ["[[2, 3], [3, 4]]"] and ops["sequence"].tolist() == [11]
    kernels = got["kernels"]
    assert kernels["grid_x"].tolist() == [4] and kernels["block_x"].tolist() == [128]
    assert kernels["occupancy"].tolist() == [25.0] and kernels["_tid"].tolist() == [7]
    assert got["memcpy"]["kind"] == ["HtoD"] and got["memcpy"]["pinned"].tolist() == [True]
    assert got["memory"]["device"].tolist() == [0] and got["memory"]["addr"].tolist() == [
        140000000000
    ]


# Variants the direct path reads: each is equal to the msgspec path's reading.
READ: dict[str, list[dict[str, Any] | bytes]] = {
    "no args": [{**OP, "args": None}, {k: v for k, v in OP.items() if k != "args"}],
    "legacy names": [
        {**OP, "cat": "Operator", "args": {"external id": 5, "Input dims": [[1]]}},
        {**KERNEL, "cat": "Kernel"}, {**RUNTIME, "cat": "Runtime"},
        {**MEMCPY, "cat": "Memcpy"}, {**MEMSET, "cat": "Memset"},
        {**RUNTIME, "cat": "cuda_driver"}, {**OP, "cat": "user_annotation"},
        {**OP, "cat": "python_function"},
    ],
    "defaults": [{"ph": "X", "cat": "cpu_op", "ts": 5, "dur": 1}],
    "ints for times": [with_changes(OP, ts=1000, dur=0), with_changes(OP, ts=-3, dur=-0.0)],
    "grid as text": [with_changes(KERNEL, args={"grid": "(4, 2)", "block": []})],
    "short grid": [with_changes(KERNEL, args={"grid": [4], "block": [1, 2, 3, 4]})],
    "no device": [with_changes(KERNEL, args={"device": None}), with_changes(KERNEL, pid=2**31)],
    "stream from tid": [with_changes(KERNEL, args={"stream": None})],
    "odd counts": [
        with_changes(OP, args={"Sequence number": True, "Fwd thread id": 1.5}),
        with_changes(OP, args={"Sequence number": -4, "Fwd thread id": [1], "Caller line": {}}),
        with_changes(OP, args={"Caller line": 10**17}),
        with_changes(OP, args={"Sequence number": None, "Fwd thread id": None}),
    ],
    "host memory": [
        with_changes(MEMORY, args={"Device Type": 0, "Device Id": 5}),
        with_changes(MEMORY, args={"Addr": "0x10", "Device Id": None}),
        with_changes(MEMORY, ph="I", args={"Addr": None, "Bytes": -512}),
    ],
    "raw inputs as written": [
        with_changes(OP, args={"Input Dims": "not a list", "Input type": [1, 2],
                               "Concrete Inputs": ['a"b', "\u00e9", None]}),
        with_changes(OP, args={"Input Dims": [[-1]], "Input type": None}),
    ],
    "unknown keys skipped": [
        b'{"ph": "X", "cat": "cpu_op", "ts": 1, "dur": 1, "args": {"Python id": 1e400, '
        b'"x": "\\u00e9\\n\\"", "nested": [{"a": [1e-400, -0, 12345678901234567890123]}]}}',
        b'{"ph": "X", "cat": "cpu_op", "ts": 1, "dur": 1, "extra": {"x": [1, "\\u0041"]}}',
    ],
    "non-ASCII name": [with_changes(OP, name="caf\u00e9 \u4e2d")],
    "values msgspec ignores": [
        with_changes(KERNEL, id={"a": 1}, args={"Process Group Name": 0, "Seq": "7"})
    ],
    "ids as text": [
        with_changes(OP, pid="67844", tid="4093687616"),
        with_changes(KERNEL, pid="0", tid="stream 7", args={"stream": None}),
        with_changes(KERNEL, args={"stream": "stream 9", "device": None}, pid="-3"),
        with_changes(MEMSET, args={"bytes": "16"}, tid="x 12345678901234567890"),
        with_changes(MEMCPY, args={"bytes": "no number"}, tid=""),
        with_changes(RUNTIME, pid="7 ", tid="-"),
        with_changes(MEMORY, pid="spans", tid="a b -12"),
    ],
    "metadata": [
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "main"}},
        {"ph": "M", "name": "thread_name", "pid": "Spans", "tid": "7", "args": {"name": "x"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 3, "args": {"name": ""}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 4},
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python3"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "renamed"}},
    ],
    "the profiler's own events": [
        {"ph": "X", "cat": "Trace", "ts": 999, "dur": 40.5, "pid": "Spans",
         "tid": "PyTorch Profiler", "name": "PyTorch Profiler (0)", "args": {"Op count": 0}},
        {"ph": "X", "cat": "Trace", "ts": None, "dur": 4, "name": "unusable span"},
        {"name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g", "pid": "Traces",
         "tid": "Trace PyTorch Profiler", "ts": 999},
        {"name": "Record Window End", "ph": "i", "s": "g", "ts": None},
    ],
    "skipped kinds": [
        with_changes(OP, cat="overhead"), with_changes(OP, cat=""),
        {k: v for k, v in OP.items() if k != "cat"}, with_changes(OP, cat="cuda_profiler_range"),
        with_changes(MEMORY, name="caf\u00e9"), {"ph": "P", "name": "x"}, {"name": "no phase"},
        with_changes(OP, cat="overhead", ts=None, dur=-5),
    ],
    "GPU annotations": [
        {"ph": "X", "cat": "gpu_user_annotation", "name": "## forward ##", "pid": 0, "tid": 7,
         "ts": 1001, "dur": 8, "args": {"External id": 3, "device": 0}},
        {"ph": "X", "cat": "gpu_user_annotation", "name": "step", "pid": 1, "tid": "stream 9",
         "ts": 1001.5, "dur": 2},
    ],
    "whitespace": [b' {\n "ph" : "X" ,\t"cat":"cpu_op",\r\n"ts":1,"dur":1 , "args" : { } }\n'],
    "collectives": [
        with_changes(OP, name="record_param_comms", args=COLLECTIVE),
        with_changes(KERNEL, name="ncclKernel_AllReduce", args=COLLECTIVE),
        with_changes(OP, args={"Collective name": "wait", "Process Group Name": 0,
                               "Process Group Ranks": [0, 1], "dtype": "Byte", "Seq": None,
                               "In msg nelems": 0, "Out msg nelems": 12}),
        with_changes(KERNEL, args={"Collective name": "", "dtype": "Unknown", "Seq": 10**17,
                                   "In msg nelems": -1, "Out msg nelems": 10**17 - 1}),
        with_changes(OP, args={"Collective name": {"a": 1}, "dtype": None, "Seq": 1.5,
                               "Process Group Name": -3, "In msg nelems": 2**58}),
        OP, KERNEL, with_changes(RUNTIME, args={"Collective name": True}),
    ],
    "collectives' keys without one": [
        with_changes(OP, args={"Collective name": None, "Seq": "7", "dtype": 1.5}),
        with_changes(KERNEL, args={"Process Group Name": True, "In msg nelems": "x"}),
    ],
}  # fmt: skip

# Variants the direct path declines: a finding, a type msgspec refuses, or what it does not read.
DECLINED = {
    "counter": {"ph": "C", "name": "util", "pid": 1, "ts": 1, "args": {"value": 3}},
    "out of memory": with_changes(MEMORY, name="[OutOfMemory]"),
    "annotation without a dur": {"ph": "X", "cat": "gpu_user_annotation", "ts": 1, "name": "a"},
    "thread name escaped": {"ph": "M", "name": "thread_name", "args": {"name": "a\\b"}},
    "collective's bool": with_changes(OP, args={"Collective name": True}),
    "collective's float": with_changes(KERNEL, args={"Collective name": "x", "dtype": 1.5}),
    "collective with a count as text": [
        with_changes(OP, args={"Seq": "7"}),
        with_changes(OP, args={"Collective name": "allreduce"}),
    ],
    "message bytes beyond int64": with_changes(
        OP, args={"Collective name": "a", "In msg nelems": 2**61, "dtype": "Double"}
    ),
    "an id as_id cannot read": with_changes(OP, tid="--7"),
    "a stream as_id cannot read": with_changes(KERNEL, args={"stream": "stream --7"}),
    "text count": with_changes(OP, args={"Sequence number": "11"}),
    "null pid": with_changes(OP, pid=None),
    "no ts": with_changes(OP, ts=None),
    "no dur": {k: v for k, v in OP.items() if k != "dur"},
    "negative dur": with_changes(OP, dur=-1),
    "ts beyond": with_changes(OP, ts=5e15),
    "dur beyond": with_changes(OP, dur=5e15),
    "fraction beyond 2**43 us": with_changes(FLOW, ts=9e12 + 0.5),
    "device out of range": with_changes(KERNEL, args={"device": -1}),
    "grid out of range": with_changes(KERNEL, args={"grid": [2**31, 1, 1]}),
    "negative block": with_changes(KERNEL, args={"block": [-1, 1, 1]}),
    "registers out of range": with_changes(KERNEL, args={"registers per thread": 2**31}),
    "occupancy out of range": with_changes(KERNEL, args={"est. achieved occupancy %": 101}),
    "per SM out of range": with_changes(KERNEL, args={"blocks per SM": -0.5}),
    "bytes out of range": with_changes(MEMCPY, args={"bytes": -2}),
    "allocator device out of range": with_changes(MEMORY, args={"Device Id": 2**31}),
    "float for an int": with_changes(KERNEL, args={"correlation": 40.0}),
    "bool for an int": with_changes(KERNEL, args={"shared memory": True}),
    "19 digits": with_changes(OP, args={"External id": 10**18}),
    "inexact float": with_changes(OP, ts=1000.12345678901234567),
    "float beyond float64": with_changes(OP, ts=1e400),
    "args not an object": with_changes(OP, args=None) | {"args": [1]},
    "list grid of floats": with_changes(KERNEL, args={"grid": [1.0, 1, 1]}),
    "escaped name": with_changes(OP, name='a "quoted" name'),
    "ints beyond 18 digits in a read field": with_changes(MEMORY, args={"Addr": 2**62}),
    "text of a wrong type": with_changes(OP, name=3),
}  # fmt: skip


@pytest.mark.parametrize("case", list(READ))
def test_read_variants_equal_the_msgspec_path(core: ModuleType, case: str) -> None:
    raws = [text(e) for e in [*GOOD, *READ[case]]]
    assert compared(raws, case) is not None, f"{case}: declined"


@pytest.mark.parametrize("case", list(DECLINED))
def test_declined_variants(core: ModuleType, case: str) -> None:
    declined = DECLINED[case]
    raws = [text(e) for e in GOOD] + [
        text(e) for e in (declined if isinstance(declined, list) else [declined])
    ]
    assert read_directly(raws) is None, case
    assert compared([text(e) for e in GOOD]) is not None  # the rest alone is read


@pytest.mark.parametrize(
    "raw",
    [
        b'{"ph": "X", "ph": "X", "cat": "cpu_op", "ts": 1, "dur": 1}',  # a repeated key
        b'{"ph": "X", "cat": "cpu_op", "ts": 1, "dur": 1, "args": {}, "args": {}}',
        b'{"ph": "X", "cat": "cpu_op", "ts": 1, "dur": 1, "args": {"device": 1, "device": 2}}',
        b'{"p\\u0068": "X", "cat": "cpu_op", "ts": 1, "dur": 1}',  # a key with an escape
        b'{"ph": "X", "cat": "cpu_op", "name": "\\u00e9", "ts": 1, "dur": 1}',
        b'{"ph": "X", "cat": "cpu_op", "name": "\xff", "ts": 1, "dur": 1}',  # not UTF-8
        b'{"ph": "f", "cat": "ac2g", "name": "\xff", "ts": 1}',
        # msgspec decodes every name: one not UTF-8 where this path skips the event too
        b'{"ph": "X", "cat": "overhead", "name": "\xff", "ts": 1, "dur": 1}',
        b'{"ph": "X", "cat": "Trace", "name": "\xed\xa0\x80", "ts": 1, "dur": 1}',
        b'{"ph": "Q", "name": "\xff"}',
        b'{"ph": "M", "name": "\xff"}',
        b'{"ph": "i", "name": "\xff", "ts": 1}',
        b'{"ph": "X", "cat": "cpu_op", "ts": 01, "dur": 1}',  # not JSON
        b'{"ph": "X", "cat": "cpu_op", "ts": 1e400, "dur": 1}',  # beyond float64
        b'{"ph": "X", "cat": "cpu_op", "ts": 1, "dur": 1, "args": {"Seq": 1e400}}',
        b'{"ph": "X", "cat": "cpu_op", "ts": 1, "dur": 1, "args": {"caf\xc3\xa9": 1}}',
        b"[1, 2]",
        b'{"ph": "X", "cat": "cpu_op", "ts": 1, "dur": 1} 3',
    ],
)
def test_declined_texts(core: ModuleType, raw: bytes) -> None:
    assert read_directly([text(OP), raw]) is None


# Exact times: ts in absolute Unix microseconds with nanosecond decimals (HTA's ns-resolution
# traces), beyond float64's nanoseconds, read as decimals and rebased on an anchor.
NS = 1712195495519689


def with_ts(event: dict[str, Any], ts: str) -> bytes:
    """The event's text with ts written as ``ts`` (a JSON number's text, or any JSON)."""
    return text({**event, "ts": "@ts@"}).replace(b'"@ts@"', ts.encode())


NS_GOOD = [with_ts(e, f"{NS + k}.{37 * k + 5:03d}") for k, e in enumerate(GOOD)]
EXACT_READ: dict[str, tuple[list[bytes], int]] = {
    "nanosecond decimals": (NS_GOOD, NS),
    "ints, short and long fractions": (
        [with_ts(OP, f"{NS}"), with_ts(KERNEL, f"{NS + 3}.5"), with_ts(RUNTIME, f"{NS}.000"),
         with_ts(MEMORY, f"{NS + 1}.123456789012"), with_ts(MEMCPY, f"{NS}.999999999999999"),
         with_ts(MEMSET, f"{NS - 5}.125")],
        NS,
    ),
    "negative and zero": (
        [with_ts(OP, "-12.5"), with_ts(KERNEL, "-0.0"), with_ts(MEMORY, "0"),
         with_ts(MEMSET, "7.25"), with_ts(RUNTIME, "-3")],
        3,
    ),
    "null ts": ([with_ts(OP, f"{NS}.5"), with_ts(READ["the profiler's own events"][3], "null")],
                NS),
    # the most a fraction may lie from the anchor (2**43 us, decode._FLOAT_EXACT_LIMIT_US),
    # and the most an integer may (2**53: the significand)
    "the largest distances from the anchor": (
        [with_ts(OP, f"{NS + 2**43 - 1}.999"), with_ts(FLOW, f"{NS + 2**53}"),
         with_ts(FLOW, f"{NS - 2**53}")],
        NS,
    ),
}  # fmt: skip
EXACT_DECLINED = {
    "an exponent": with_ts(OP, "1.712195495519689e15"),
    "ts as text": with_ts(OP, f'"{NS}.5"'),
    "19 fraction digits": with_ts(OP, f"{NS}.1234567890123456789"),
    "19 whole digits": with_ts(OP, "1712195495519689000.5"),
    "a fraction beyond float64's nanoseconds after the anchor": with_ts(FLOW, f"{NS + 2**43}.5"),
    "a significand beyond 2**53": with_ts(FLOW, f"{NS + 2**53 // 1000}.999"),
    "an integer beyond 2**53": with_ts(FLOW, f"{NS + 2**53 + 1}"),
}


@pytest.mark.parametrize("case", list(EXACT_READ))
def test_exact_times_equal_the_msgspec_path(core: ModuleType, case: str) -> None:
    raws, anchor = EXACT_READ[case]
    assert compared(raws, case, anchor) is not None, f"{case}: declined"


def test_exact_times_keep_the_nanoseconds(core: ModuleType) -> None:
    raws = [with_ts(OP, f"{NS + 2}.047"), with_ts(KERNEL, f"{NS}.001"), with_ts(OP, f"{NS}")]
    part = compared(raws, anchor=NS)
    assert part is not None
    # By hand: (ts - NS us) in ns, and the durations as written.
    assert part.tables["ops"]["start_ns"].tolist() == [2_047, 0]
    assert part.tables["kernels"]["start_ns"].tolist() == [1]
    # Without an anchor the core declines ts that float64 cannot hold to the nanosecond.
    assert read_directly(raws) is None


@pytest.mark.parametrize("anchor", [10**18, -(10**18), 10**30, -(2**63) - 1])
def test_an_anchor_past_the_numbers_read_is_declined(core: ModuleType, anchor: int) -> None:
    # The earliest ts of a file Decimal reads and the core does not ("-1e30"): the msgspec
    # path rebases on it; the core declines, raising nothing.
    assert core.part_columns([msgspec.Raw(r) for r in NS_GOOD], anchor) is None
    assert read_directly(NS_GOOD, anchor=anchor) is None


@pytest.mark.parametrize("case", list(EXACT_DECLINED))
def test_exact_times_declined(core: ModuleType, case: str) -> None:
    assert read_directly([*NS_GOOD, EXACT_DECLINED[case]], anchor=NS) is None, case
    assert compared(NS_GOOD, anchor=NS) is not None


def python_earliest(raws: list[bytes]) -> int | None:
    """decode._earliest_microsecond's answer for one part, from exact_times' Decimals."""
    part = b"[" + b",".join(raws) + b"]"
    times = [int(t) for t in exact_times(Path("part.json"), part, part) if t is not None]
    return min(times) if times else None


@pytest.mark.parametrize(
    "raws",
    [
        [with_ts(OP, f"{NS}.047"), with_ts(KERNEL, f"{NS - 3}.999"), with_ts(FLOW, f"{NS}")],
        [with_ts(OP, "-3.7"), with_ts(KERNEL, "-0.5"), with_ts(OP, "12")],
        [with_ts(OP, "-0.5"), with_ts(OP, "0.25")],
        [with_ts(OP, "null"), with_ts(OP, '"5"'), with_ts(OP, "[1]"), with_ts(OP, "true"),
         with_ts(OP, "{}"), with_ts(OP, "3.5")],
        [b'{"args": {"ts": 1}, "ts": 9}', b'{"x": [{"ts": -100}], "ts": 4.5}', b"[1]", b"7",
         b'"ts"', b"null", b"{}"],
        [b'{"name": "no ts"}', b"{}"],
        [],
    ],
)  # fmt: skip
def test_earliest_microsecond_equals_the_decimals(core: ModuleType, raws: list[bytes]) -> None:
    read, earliest = core.earliest_us([msgspec.Raw(r) for r in raws])
    assert read
    assert earliest == python_earliest(raws)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"ts": 1.5e3}',
        b'{"ts": 1, "ts": 2}',  # a repeated key
        b'{"\\u0074s": 1}',  # a key with an escape: ts, to msgspec
        b'{"ts": 12345678901234567890}',
    ],
)
def test_earliest_microsecond_declined(core: ModuleType, raw: bytes) -> None:
    assert core.earliest_us([msgspec.Raw(text(OP)), msgspec.Raw(raw)]) == (False, None)


# Values a mutated field takes: each type msgspec's structs meet, at and past every range this
# path checks, and numbers written as JSON may write them (RAW_NUMBERS, spliced in as text).
VALUES: list[Any] = [
    0, 1, -1, 7, 2**31 - 1, 2**31, 2**62 - 1, 2**62, 2**63 - 1, 10**17, 10**18, 100, 101,
    1.5, -0.0, 0.5, 1e-300, 1e300, 25.000001, "", "7", "-7", "stream 7", "x 12", "Float",
    "BFloat16", "allreduce", "caf\u00e9", "a\\b", True, False, None, [], [1, 2, 3], [2**31],
    [1.5], ["a"], {}, {"a": 1}, {"ts": 1},
]  # fmt: skip
RAW_NUMBERS = [
    f"{NS}.047", f"{NS}", f"{NS - 1}.999999", "1.5e3", "-0", "0.1", "12345678901234567890",
    "1e400", "-1e400", f"{NS + 2**43}.5", "3.000", "-12.5", f"{NS + 1}.5",
]  # fmt: skip
FIELDS = ["ph", "cat", "name", "pid", "tid", "ts", "dur", "id"]
ARGS = [
    "External id", "external id", "correlation", "device", "stream", "bytes", "Input Dims",
    "Input dims", "Input type", "Concrete Inputs", "grid", "block", "registers per thread",
    "shared memory", "blocks per SM", "est. achieved occupancy %", "Bytes", "Total Allocated",
    "Total Reserved", "Device Type", "Addr", "Device Id", "name", "Collective name",
    "Process Group Name", "Process Group Ranks", "Seq", "In msg nelems", "Out msg nelems",
    "dtype", "Sequence number", "Fwd thread id", "Caller line",
]  # fmt: skip
SEEDS = [
    *GOOD, with_changes(OP, name="record_param_comms", args=COLLECTIVE),
    with_changes(KERNEL, args=COLLECTIVE), *READ["the profiler's own events"],
    *READ["metadata"], *READ["GPU annotations"],
]  # fmt: skip


_NEAR = re.compile(rb'"ts": (-?[0-9]+)')


def mutated(event: dict[str, Any], rng: np.random.Generator) -> bytes:
    """The event with one or two fields (its own or its args') set to a value of VALUES or
    RAW_NUMBERS, or deleted."""
    changed = {**event, "args": dict(event.get("args") or {})}
    raws: dict[str, str] = {}
    for _ in range(int(rng.integers(1, 3))):
        in_args = bool(rng.integers(2))
        keys = ARGS if in_args else FIELDS
        key = keys[int(rng.integers(len(keys)))]
        where = changed["args"] if in_args else changed
        pick = int(rng.integers(len(VALUES) + len(RAW_NUMBERS) + 4))
        if pick < len(VALUES):
            where[key] = VALUES[pick]
        elif pick < len(VALUES) + len(RAW_NUMBERS):
            marker = f"@{len(raws)}@"
            raws[marker] = RAW_NUMBERS[pick - len(VALUES)]
            where[key] = marker
        else:
            where.pop(key, None)
    out = text(changed)
    for marker, number in raws.items():
        out = out.replace(f'"{marker}"'.encode(), number.encode())
    return out


@pytest.mark.parametrize("seed", range(4))
def test_mutated_parts_read_as_the_msgspec_path(core: ModuleType, seed: int) -> None:
    """Parts of mutated events, with and without exact times: where the core reads one, the
    msgspec path reads it too, to the same columns and with no finding (compared); and the
    core reads a good share of them, so the comparison is not empty."""
    rng = np.random.default_rng(seed)
    read = 0
    cases = 400
    for case in range(cases):
        events = [SEEDS[int(i)] for i in rng.integers(len(SEEDS), size=int(rng.integers(1, 9)))]
        raws = [mutated(e, rng) if rng.random() < 0.3 else text(e) for e in events]
        anchor = [None, None, 0, 3, NS][int(rng.integers(5))]
        if anchor == NS:  # the seeds' ts near the anchor, as a ns-resolution trace's
            raws = [_NEAR.sub(lambda m: f'"ts": {NS + int(m[1])}'.encode(), r) for r in raws]
        if read_directly(raws, anchor=anchor) is not None:
            assert compared(raws, f"seed {seed} case {case}: {raws}", anchor) is not None
            read += 1
    assert read > cases // 4, f"only {read} of {cases} mutated parts read"


def test_no_reference_is_kept_or_lost(core: ModuleType) -> None:
    raws = [msgspec.Raw(text(e)) for e in GOOD * 50]
    counts = [sys.getrefcount(r) for r in raws]
    for _ in range(20):
        assert core.part_columns(raws) is not None
        assert core.part_columns([*raws, msgspec.Raw(text(DECLINED["counter"]))]) is None
    assert [sys.getrefcount(r) for r in raws] == counts
    names = core.part_columns(raws)["ops"]["name"]
    assert all(n is names[0] for n in names)  # one object per distinct name of a part
    with pytest.raises(TypeError):
        core.part_columns([1])
    with pytest.raises(TypeError):
        core.part_columns(tuple(raws))


def _parts(path: Path) -> list[list[bytes]]:
    raw = read_trace_bytes(path)
    events = _RAWS.decode(raw) if first_byte(raw) == b"[" else _OUTLINE.decode(raw).traceEvents
    texts = [bytes(e) for e in events]
    return [texts[i : i + PART_EVENTS] for i in range(0, len(texts), PART_EVENTS)]


SHARED = sorted(KINETO.glob("*.json*")) if KINETO.is_dir() else []
# Traces whose every part the direct path reads: that it keeps reading them is part of what is
# tested (a core that declined every part would pass the comparisons).
MOSTLY_READ = (
    "hta_v100_16gb_train_rank1_of2.json.gz",
    "hta_v100_32gb_memory_rank1_of2.json.gz",
    "hta_a100_train_rank3_of8_async_cpu_to_gpu.json.gz",
    "tracelens_h100_owlv2_large_inference.json.gz",
    "tracelens_mi300x_xdit_sd3.5_large_inference.json.gz",
    # torch 1.8's format: capitalized categories, ids as text ("stream 7"), "Input dims"
    "kineto_tbplugin_resnet50_v100_memory_shapes.pt.trace.json.gz",
    # collectives (record_param_comms and NCCL kernels) in most parts
    "hta_a100_nccl_2rank_rank0.json.gz",
    "tracelens_mi300x_resnet_act_checkpoint_rank0_of8.json.gz",
)
# Traces whose ts need exact times (absolute Unix us with nanosecond decimals): every part read
# with them.
EXACT = ("hta_v100_32gb_ns_resolution.pt.trace.json.gz",)


@pytest.mark.parametrize("path", SHARED or [None], ids=lambda p: p.name if p else "none")
def test_every_part_of_every_shared_trace(core: ModuleType, path: Path | None) -> None:
    if path is None:
        missing(f"no shared Kineto traces in {KINETO}")
    parts = _parts(path)
    read = [compared(part, f"{path.name} part {k}") is not None for k, part in enumerate(parts)]
    if path.name in MOSTLY_READ:
        assert all(read), f"{path.name}: {sum(read)} of {len(read)} parts read"
    # With exact times, rebased on the earliest whole us (which the core finds as the
    # Decimals do, part by part).
    earliest = [python_earliest(part) for part in parts]
    found = [core.earliest_us([msgspec.Raw(r) for r in part]) for part in parts]
    assert found == [(True, e) for e in earliest], path.name
    anchor = min((e for e in earliest if e is not None), default=0)
    read = [
        compared(part, f"{path.name} part {k}, exact", anchor) is not None
        for k, part in enumerate(parts)
    ]
    if path.name in EXACT:
        assert all(read), f"{path.name}: {sum(read)} of {len(read)} parts read with exact times"


@pytest.mark.parametrize("name", MOSTLY_READ + EXACT)
def test_whole_loads_equal_without_the_direct_path(
    core: ModuleType, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = KINETO / name
    if not path.exists():
        missing(f"the shared trace {path} is absent")
    assert len(read_trace_bytes(path)) > PART_BYTES  # read in parts
    with_direct = kineto.load_kineto(path)
    monkeypatch.setattr(direct, "scanned", None)
    without = kineto.load_kineto(path)
    for table in (
        "ops",
        "kernels",
        "memcpy",
        "memset",
        "runtime",
        "memory",
        "counters",
        "gpu_annotations",
    ):
        pd.testing.assert_frame_equal(getattr(with_direct, table), getattr(without, table))
    assert with_direct.meta == without.meta
