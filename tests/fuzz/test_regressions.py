"""Every crash the fuzzing of issue 16 found, as a small trace written here: the few events
that matter, each of which must now give a result or a clear error (helpers/mutants.py's
contract: no crash, no impossible figure, no unsafe text).

The place each case crashed before the fixes is in its name's comment; the mutants they were
shrunk from came from bench/fuzz.py on the shared traces (their content is not copied here).
"""

from __future__ import annotations

import copy
import csv
import io
import json
import sqlite3
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from helpers.kineto_docs import cpu_op, document, kernel, memcpy, runtime, write
from helpers.mutants import outcome

INT64_MAX = 2**63 - 1


# What CUPTI records of a launch: the occupancy detector reads it, and the device's properties.
LAUNCH = {
    "External id": 1, "grid": [128, 1, 1], "block": [256, 1, 1], "registers per thread": 32,
    "shared memory": 0, "blocks per SM": 0.97, "warps per SM": 7.76,
    "est. achieved occupancy %": 12,
}  # fmt: skip


def _events() -> list[dict[str, Any]]:
    """An op with shapes, its launch, its kernel, a copy: each analysis has something to read."""
    dims = {"Input Dims": [[64, 64], [64, 64]], "Input type": ["float", "float"],
            "Concrete Inputs": ["", ""]}  # fmt: skip
    return [
        cpu_op("aten::mm", 0, 40, ext=1, **dims),
        cpu_op("aten::t", 2, 5, ext=2),
        runtime("cudaLaunchKernel", 5, 10, corr=7),
        kernel("sgemm_64x64", 20, 30, 7, **LAUNCH),
        memcpy("HtoD", 60, 20, 4096),
    ]


def _devices(**props: Any) -> list[dict[str, Any]]:
    h100 = {"id": 0, "name": "NVIDIA H100 80GB HBM3", "numSms": 132, "computeMajor": 9,
            "computeMinor": 0, "maxThreadsPerMultiprocessor": 2048}  # fmt: skip
    return [{**h100, **props}]


def _kineto(change: Callable[[list[dict[str, Any]]], Any], **props: Any) -> Callable[[Path], Path]:
    """A trace of ``_events()`` changed by ``change`` (in place), with an H100 whose device
    properties ``props`` override."""

    def make(folder: Path) -> Path:
        events = _events()
        change(events)
        return write(folder / "trace.json", document(events, deviceProperties=_devices(**props)))

    return make


def _set(index: int, *path: Any, value: Any) -> Callable[[list[dict[str, Any]]], None]:
    """Set ``events[index][path...] = value``."""

    def change(events: list[dict[str, Any]]) -> None:
        node = events[index]
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return change


def _repeat(times: int) -> Callable[[list[dict[str, Any]]], None]:
    def change(events: list[dict[str, Any]]) -> None:
        events[:] = [copy.deepcopy(e) for e in events for _ in range(times)]

    return change


def _unchanged(events: list[dict[str, Any]]) -> None:
    pass


def _raw_bytes(replace: bytes, by: bytes) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        path = folder / "trace.json"
        text = json.dumps(document(_events(), deviceProperties=_devices())).encode()
        assert replace in text
        path.write_bytes(text.replace(replace, by, 1))
        return path

    return make


OP, RUNTIME, KERNEL = 0, 2, 3
KINETO: dict[str, Callable[[Path], Path]] = {
    # OverflowError in importers/kineto/columns.py (_ints, op_columns, _gpu_columns,
    # runtime_columns) and importers/kineto/trace.py: ids past int64.
    "kernel stream 2**63": _kineto(_set(KERNEL, "args", "stream", value=2**63)),
    "kernel device 2**64": _kineto(_set(KERNEL, "args", "device", value=2**64)),
    "kernel pid 1e30": _kineto(_set(KERNEL, "pid", value=10**30)),
    "runtime tid below int64": _kineto(_set(RUNTIME, "tid", value=-(2**63) - 1)),
    "runtime pid below int64": _kineto(_set(RUNTIME, "pid", value=-(2**63) - 1)),
    "op pid 2**64": _kineto(_set(OP, "pid", value=2**64)),
    "op tid 1e30": _kineto(_set(OP, "tid", value=10**30)),
    "External id below int64": _kineto(_set(OP, "args", "External id", value=-(2**63) - 1)),
    "correlation below int64": _kineto(_set(RUNTIME, "args", "correlation", value=-(2**63) - 1)),
    "kernel ts null": _kineto(_set(KERNEL, "ts", value=None)),
    # Timestamps that wrapped to "wall 9223372037 s" or a negative wall.
    "kernel ts past int64 ns": _kineto(_set(KERNEL, "ts", value=INT64_MAX)),
    "kernel dur 2**63": _kineto(_set(KERNEL, "dur", value=2**63)),
    "op ts 1e308": _kineto(_set(OP, "ts", value=1e308)),
    # ValueError "table ...: negative durations" from trace/model.py (validate_table).
    "kernel dur -1": _kineto(_set(KERNEL, "dur", value=-1)),
    "op dur -1": _kineto(_set(OP, "dur", value=-1)),
    "every event twice": _kineto(_repeat(2)),
    "every event three times": _kineto(_repeat(3)),
    # TypeError / KeyError in analyses/flops.py (_parse_args): args of the wrong shape.
    "Input type item a list": _kineto(_set(OP, "args", "Input type", 1, value=[1, 2])),
    "Input type item a dict": _kineto(_set(OP, "args", "Input type", 1, value={"a": 1})),
    "Input type a number": _kineto(_set(OP, "args", "Input type", value=7)),
    "Input type a dict": _kineto(_set(OP, "args", "Input type", value={"a": 1})),
    "Concrete Inputs a number": _kineto(_set(OP, "args", "Concrete Inputs", value=7)),
    "Concrete Inputs false": _kineto(_set(OP, "args", "Concrete Inputs", value=False)),
    "Input Dims item true": _kineto(_set(OP, "args", "Input Dims", 0, 1, value=True)),
    "Input Dims a list of lists of lists": _kineto(
        _set(OP, "args", "Input Dims", value=[[[-1, 2]]])
    ),
    # RuntimeError in analyses/torch_flops.py: negative dimensions.
    "Input Dims negative": _kineto(_set(OP, "args", "Input Dims", value=[[-1, 64], [64, -3]])),
    # ValueError in analyses/detectors/low_occupancy.py and hardware/match.py: device
    # properties that are strings or of another type.
    "device id 'True'": _kineto(_unchanged, id="True"),
    "device id 'NaN'": _kineto(_unchanged, id="NaN"),
    "device id a dict": _kineto(_unchanged, id={}),
    "maxThreadsPerMultiprocessor 'True'": _kineto(_unchanged, maxThreadsPerMultiprocessor="True"),
    "computeMajor 'True'": _kineto(_unchanged, computeMajor="True"),
    "numSms negative": _kineto(_unchanged, numSms=-132),
    "numSms true": _kineto(_unchanged, numSms=True),
    # ValueError in low_occupancy.py / tensor_cores.py: strings in numeric kernel args.
    "kernel args '1e400' and 'True'": _kineto(
        _set(
            KERNEL,
            "args",
            value={
                "device": 0,
                "stream": 7,
                "correlation": 7,
                "registers per thread": "1e400",
                "blocks per SM": "True",
                "est. achieved occupancy %": "1e400",
                "grid": [True, 1, 1],
                "block": ["1e400", 1, 1],
                "warps per SM": "True",
            },
        )
    ),
    # TypeError in report/text.py: a name that is not a string.
    "kernel name true": _kineto(_set(KERNEL, "name", value=True)),
    "op name a list": _kineto(_set(OP, "name", value=["aten::mm"])),
    "cat a list": _kineto(_set(KERNEL, "cat", value=["kernel"])),
    # UnicodeDecodeError in importers/kineto/columns.py (_raw_text): bytes that are not UTF-8.
    "name with invalid UTF-8": _raw_bytes(b"sgemm_64x64", b"sgemm\xff64x64"),
    "Concrete Inputs with invalid UTF-8": _raw_bytes(
        b'"Concrete Inputs": ["", ""]', b'"Concrete Inputs": ["", "[\xff\xfe, 16]"]'
    ),
    # RecursionError in the decoder.
    "args nested 100k deep": _raw_bytes(
        b'"cbid": 211', b'"cbid": ' + b"[" * 100_000 + b"]" * 100_000
    ),
    # Non-standard JSON numbers (numpy's "invalid value encountered in cast" made garbage).
    "ts NaN": _raw_bytes(b'"ts": 20', b'"ts": NaN'),
    "dur Infinity": _raw_bytes(b'"dur": 30', b'"dur": Infinity'),
    "ts 1e400": _raw_bytes(b'"ts": 20', b'"ts": 1e400'),
}


@pytest.mark.parametrize("name", KINETO)
def test_kineto_regression(name: str, tmp_path: Path) -> None:
    _judge(KINETO[name](tmp_path), name)


def _judge(path: Path, name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = outcome(path)
    assert result.kind in ("ok", "error"), f"{name}: {result.kind}: {result.detail}"


# --- the other importers --------------------------------------------------------------------


def _ncu(**cells: str) -> Callable[[Path], Path]:
    """An ncu CSV (details page) of one launch, with ``cells`` overriding its identity columns."""
    header = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
              "Block Size", "Grid Size", "Device", "CC", "Section Name", "Metric Name",
              "Metric Unit", "Metric Value"]  # fmt: skip
    identity = {"ID": "0", "Process ID": "1", "Process Name": "a.out", "Host Name": "h",
                "Kernel Name": "saxpy", "Context": "1", "Stream": "7", "Block Size": "(256, 1, 1)",
                "Grid Size": "(64, 1, 1)", "Device": "0", "CC": "9.0",
                "Section Name": "Command line profiler metrics", **cells}  # fmt: skip
    metrics = [("gpu__time_duration.sum", "ns", "2,048"), ("dram__bytes_read.sum", "byte", "4,096")]

    def make(folder: Path) -> Path:
        out = io.StringIO()
        writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
        writer.writerow(header)
        for name, unit, value in metrics:
            row = {**identity, "Metric Name": name, "Metric Unit": unit, "Metric Value": value}
            writer.writerow([row[h] for h in header])
        path = folder / "launches.csv"
        path.write_text(out.getvalue())
        return path

    return make


def _tensorrt(average_ms: Any) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        layers = [{"count": 10}, {"name": "conv1", "averageMs": 0.5, "timeMs": 5.0},
                  {"name": "relu1", "averageMs": average_ms, "timeMs": 1.0}]  # fmt: skip
        path = folder / "engine.profile.json"
        path.write_text(json.dumps(layers))
        return path

    return make


def _tensorrt_device(**info: Any) -> Callable[[Path], Path]:
    """A layer profile with TREx metadata beside it naming a device of ``info``'s figures."""

    def make(folder: Path) -> Path:
        path = _tensorrt(0.25)(folder)
        device = {"Selected Device": "NVIDIA A100-SXM4-40GB", "SMs": 108,
                  "Device Global Memory": "40396 MiB", **info}  # fmt: skip
        metadata = {"device_information": device, "inference_options": {}}
        (folder / "engine.profile.metadata.json").write_text(json.dumps(metadata))
        return path

    return make


def _nsys(
    start: Any = 1_000, end: Any = 3_000, epoch: Any = 1_700_000_000_000_000_000
) -> Callable[[Path], Path]:
    """A minimal nsys export: metadata, strings, one kernel, the session's start."""

    def make(folder: Path) -> Path:
        path = folder / "run.sqlite"
        db = sqlite3.connect(path)
        db.execute("CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT)")
        db.execute("INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SCHEMA_VERSION', '3.13.2')")
        db.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("INSERT INTO StringIds VALUES (1, 'gemm')")
        db.execute(
            "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId "
            "INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName "
            "INTEGER, shortName INTEGER)"
        )
        rows = [
            (0, 500, 0, 7, 1, (1 << 48) | (42 << 24), 1, 1),
            (start, end, 0, 7, 2, (1 << 48) | (42 << 24), 1, 1),
        ]
        db.executemany(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows
        )
        db.execute("CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT)")
        db.execute("INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (?, '')", (epoch,))
        db.commit()
        db.close()
        return path

    return make


OTHERS: dict[str, Callable[[Path], Path]] = {
    # OverflowError in importers/ncu.py (_kernels) and trace/model.py (_frame).
    "ncu device past int64": _ncu(Device="9223372036854775808"),
    "ncu stream 1e400": _ncu(Stream="1e400"),
    "ncu grid past int32": _ncu(**{"Grid Size": "(9223372036854775808, 1, 1)"}),
    "ncu negative block": _ncu(**{"Block Size": "(-1, 2, 3)"}),
    # OverflowError in importers/tensorrt.py (_average_inference); a wrapped negative wall.
    "tensorrt averageMs 2**63": _tensorrt(2**63),
    "tensorrt averageMs 2**64": _tensorrt(2**64),
    "tensorrt averageMs 1e308": _tensorrt(1e308),
    # OverflowError in importers/tensorrt.py (_devices): device figures past any device's.
    "tensorrt SMs Infinity": _tensorrt_device(SMs=float("inf")),
    "tensorrt SMs negative": _tensorrt_device(SMs=-108),
    "tensorrt memory 1e400 MiB": _tensorrt_device(
        **{"Device Global Memory": "1" + "0" * 400 + " MiB"}
    ),
    "tensorrt memory 1.2.3 MiB": _tensorrt_device(**{"Device Global Memory": "1.2.3 MiB"}),
    # ValueError in importers/nsys.py (_session_start); a wall of 9223372036 s.
    "nsys utcEpochNs text": _nsys(epoch="x"),
    "nsys utcEpochNs 1e308": _nsys(epoch=1e308),
    "nsys start near int64": _nsys(start=INT64_MAX - 10, end=INT64_MAX),
    "nsys start null": _nsys(start=None),
    "nsys end text": _nsys(end="later"),
    "nsys end before start": _nsys(start=5_000, end=-(2**63)),
}


@pytest.mark.parametrize("name", OTHERS)
def test_other_importer_regression(name: str, tmp_path: Path) -> None:
    _judge(OTHERS[name](tmp_path), name)


def test_nsys_rows_without_a_time_are_counted(tmp_path: Path) -> None:
    """The row nsys's clock cannot place is skipped and said, not read as a time."""
    import gpuprofile

    profile = gpuprofile.load(_nsys(start=None)(tmp_path))
    assert len(profile.trace.kernels) == 1
    skipped = profile.trace.meta.ranks[0].skipped
    assert skipped == {"CUPTI_ACTIVITY_KIND_KERNEL records without a usable start and end": 1}
