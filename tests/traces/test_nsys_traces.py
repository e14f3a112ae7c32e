"""The Nsight Systems fixtures (../shared/traces/nsys) read by gpuprofile, held to figures
computed here from the files with sqlite3 and csv alone: counts, kernel time, copy bytes by
kind, NVTX ranges, devices, the hardware roofs, the CLI's JSON and text reports."""

from __future__ import annotations

import csv
import json
import re
import shutil
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from gpuprofile.cli import main
from gpuprofile.hardware.match import hardware_for_trace
from gpuprofile.importers.formats import detect_format
from gpuprofile.importers.nsys import load_nsys
from gpuprofile.trace.model import Trace
from helpers.prerequisites import SHARED_TRACES, require_trace

NSYS = SHARED_TRACES / "nsys"
SAXPY = NSYS / "pipit_perlmutter_a100_40gb_saxpy_mpi.sqlite"  # schema 2.9.1
CLOVERLEAF = NSYS / "pipit_perlmutter_4xa100_80gb_cloverleaf.sqlite"  # schema 3.13.2
NVTX_CSV = NSYS / "pipit_nbody_nvtx_pushpop_trace.csv"
EXPORTS = [SAXPY, CLOVERLEAF]
# CUPTI's copy kinds (cupti_activity.h, CUpti_ActivityMemcpyKind) and memory kinds.
COPY_KINDS = {1: "HtoD", 2: "DtoH", 8: "DtoD", 10: "PtoP"}
PINNED = 1
BACKTRACE_CLASS = 67  # TRACE_PROCESS_EVENT_CUDABACKTRACE: a second row of a call, with stack
NVTX_RANGE_TYPES = (59, 60)  # NvtxPushPopRange, NvtxStartEndRange


@pytest.fixture(scope="module")
def traces() -> dict[Path, Trace]:
    return {path: load_nsys(require_trace(path)) for path in EXPORTS}


def _query(path: Path, sql: str) -> list[tuple[Any, ...]]:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


def _one(path: Path, sql: str) -> int:
    ((value,),) = _query(path, sql)
    return int(value or 0)


def _has(path: Path, table: str) -> bool:
    return bool(_query(path, f"SELECT 1 FROM sqlite_master WHERE name = '{table}'"))


@pytest.mark.parametrize("path", EXPORTS, ids=lambda p: p.stem)
def test_kernels_match_the_export(traces: dict[Path, Trace], path: Path) -> None:
    kernels = traces[path].kernels
    table = "CUPTI_ACTIVITY_KIND_KERNEL"
    assert len(kernels) == _one(path, f"SELECT count(*) FROM {table}")
    assert int(kernels["dur_ns"].sum()) == _one(path, f"SELECT sum(end - start) FROM {table}")
    names = Counter(
        str(name)
        for (name,) in _query(
            path, f"SELECT s.value FROM {table} k JOIN StringIds s ON s.id = k.demangledName"
        )
    )
    assert Counter(kernels["name"].astype(str)) == names
    expected_shared = _one(
        path, f"SELECT sum(staticSharedMemory + dynamicSharedMemory) FROM {table}"
    )
    assert int(kernels["shared_memory"].sum()) == expected_shared
    grid = _one(path, f"SELECT sum(gridX * gridY * gridZ * blockX * blockY * blockZ) FROM {table}")
    threads = (
        kernels[["grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z"]]
        .astype("int64")
        .prod(axis=1)
    )
    assert int(threads.sum()) == grid
    regs = _one(path, f"SELECT sum(registersPerThread) FROM {table}")
    assert int(kernels["registers_per_thread"].sum()) == regs


@pytest.mark.parametrize("path", EXPORTS, ids=lambda p: p.stem)
def test_copies_match_the_export(traces: dict[Path, Trace], path: Path) -> None:
    memcpy = traces[path].memcpy
    rows = _query(
        path,
        "SELECT copyKind, sum(bytes), count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY GROUP BY copyKind",
    )
    expected = {COPY_KINDS[int(kind)]: (int(b), int(n)) for kind, b, n in rows}
    got = memcpy.groupby("kind", observed=True)["bytes"].agg(["sum", "count"])
    assert {k: (int(r["sum"]), int(r["count"])) for k, r in got.iterrows()} == expected
    pinned = _one(
        path,
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE (copyKind = 1 AND srcKind = "
        f"{PINNED}) OR (copyKind = 2 AND dstKind = {PINNED})",
    )
    assert int(memcpy["pinned"].sum()) == pinned
    memsets = (
        _one(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET")
        if _has(path, "CUPTI_ACTIVITY_KIND_MEMSET")
        else 0
    )
    assert len(traces[path].memset) == memsets


@pytest.mark.parametrize("path", EXPORTS, ids=lambda p: p.stem)
def test_runtime_calls_and_their_launch_links(traces: dict[Path, Trace], path: Path) -> None:
    trace = traces[path]
    runtime = trace.runtime
    table = "CUPTI_ACTIVITY_KIND_RUNTIME"
    # One row per call: a backtrace row repeats its call's correlation id.
    calls = _one(path, f"SELECT count(DISTINCT correlationId) FROM {table}")
    assert len(runtime) == calls
    assert len(runtime) == _one(
        path, f"SELECT count(*) FROM {table} WHERE eventClass != {BACKTRACE_CLASS}"
    )
    # Each kernel's launch call is found by its correlation id and is a launch.
    launched = {
        int(c): re.sub(r"_v\d+$", "", str(name))
        for c, name in _query(
            path,
            f"SELECT r.correlationId, s.value FROM {table} r JOIN StringIds s ON s.id = r.nameId "
            f"WHERE r.eventClass != {BACKTRACE_CLASS} AND r.correlationId IN "
            "(SELECT correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL)",
        )
    }
    call_of = dict(
        zip(runtime["correlation"].tolist(), runtime["name"].astype(str).tolist(), strict=True)
    )
    assert {c: call_of[c] for c in trace.kernels["correlation"].tolist()} == {
        c: launched[c] for c in trace.kernels["correlation"].tolist()
    }
    assert set(launched.values()) == {"cudaLaunchKernel"}
    syncs = _one(
        path,
        f"SELECT count(*) FROM {table} r JOIN StringIds s ON s.id = r.nameId WHERE s.value "
        f"LIKE 'cudaDeviceSynchronize%' AND r.eventClass != {BACKTRACE_CLASS}",
    )
    assert int((runtime["name"] == "cudaDeviceSynchronize").sum()) == syncs


@pytest.mark.parametrize("path", EXPORTS, ids=lambda p: p.stem)
def test_times_devices_and_roofs(traces: dict[Path, Trace], path: Path) -> None:
    trace = traces[path]
    # The events read: GPU activity, runtime calls but not their backtrace rows, NVTX ranges.
    read = {
        "CUPTI_ACTIVITY_KIND_KERNEL": "",
        "CUPTI_ACTIVITY_KIND_MEMCPY": "",
        "CUPTI_ACTIVITY_KIND_MEMSET": "",
        "CUPTI_ACTIVITY_KIND_RUNTIME": f"WHERE eventClass != {BACKTRACE_CLASS}",
        "NVTX_EVENTS": f"WHERE eventType IN {NVTX_RANGE_TYPES} AND end IS NOT NULL",
    }
    earliest = min(
        _one(path, f"SELECT min(start) FROM {table} {where}") or 2**62
        for table, where in read.items()
        if _has(path, table)
    )
    session = _one(path, "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME")
    assert trace.meta.origin_ns == session + earliest
    assert int(trace.runtime["start_ns"].min()) >= 0
    gpus = _query(
        path,
        "SELECT id, name, smCount, totalMemory, memoryBandwidth FROM TARGET_INFO_GPU ORDER BY id",
    )
    (facts,) = trace.meta.ranks.values()
    assert [(d["id"], d["name"], d["sm_count"], d["memory_bytes"]) for d in facts.devices] == [
        g[:4] for g in gpus
    ]
    hw = hardware_for_trace(trace)
    assert hw.source == "datasheet" and "A100" in hw.name
    # The datasheet's DRAM roof is the one nsys reports for the GPU (40GB: 1555, 80GB: 2039 GB/s).
    bandwidth = {int(g[4]) for g in gpus}
    assert len(bandwidth) == 1 and hw.dram_bytes_per_s == pytest.approx(bandwidth.pop(), rel=0.01)
    version = dict(
        _query(
            path,
            "SELECT name, value FROM "
            + ("EXPORT_META_DATA" if path == SAXPY else "META_DATA_EXPORT"),
        )
    )
    assert trace.meta.source.version is not None
    assert str(version["EXPORT_SCHEMA_VERSION"]) in trace.meta.source.version


def test_nvtx_ranges_of_the_schema_2_export(traces: dict[Path, Trace]) -> None:
    rows = _query(
        SAXPY,
        "SELECT coalesce(n.text, s.value), n.end - n.start FROM NVTX_EVENTS n LEFT JOIN StringIds "
        f"s ON s.id = n.textId WHERE n.eventType IN {NVTX_RANGE_TYPES} AND n.end IS NOT NULL",
    )
    ops = traces[SAXPY].ops
    assert Counter(ops["name"].astype(str)) == Counter(str(name) for name, _ in rows)
    assert int(ops["dur_ns"].sum()) == sum(int(d) for _, d in rows)
    assert set(ops["category"]) == {"user_annotation"}


def _report(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["report", *argv]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("path", [SAXPY, NVTX_CSV], ids=lambda p: p.stem)
def test_the_cli_reports_nsys_files(capsys: pytest.CaptureFixture[str], path: Path) -> None:
    require_trace(path)
    report = json.loads(_report(capsys, str(path), "--format", "json"))
    assert report["source"]["format"] == "nsys"
    text = _report(capsys, str(path))
    assert "nsys" in text.splitlines()[0]
    if path == SAXPY:
        assert report["hardware"]["source"] == "datasheet"
        # The report keeps the signature; the text prints the function it calls.
        (kernel,) = report["ranks"][0]["top_kernels"]
        assert kernel["name"] == "saxpy(double *, double *, double *, double, int)"
        assert kernel["label"] == "saxpy"
        assert any(line.endswith(" saxpy") for line in text.splitlines())
    else:
        assert any("no GPU events" in n["text"] for n in report["notices"])


def test_a_renamed_export_is_detected_as_nsys(tmp_path: Path) -> None:
    renamed = tmp_path / "trace.bin"
    shutil.copyfile(require_trace(SAXPY), renamed)
    assert detect_format(renamed) == "nsys"
    assert len(load_nsys(renamed).kernels) == _one(
        SAXPY, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"
    )


def test_a_truncated_fixture_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = require_trace(CLOVERLEAF).read_bytes()
    cut = tmp_path / "cut.sqlite"
    cut.write_bytes(data[: len(data) * 2 // 3])
    assert main(["report", str(cut)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(cut) in err[0] and "damaged or truncated" in err[0]


def test_the_stats_csv_ranges(tmp_path: Path) -> None:
    with require_trace(NVTX_CSV).open(newline="") as file:
        rows = list(csv.DictReader(file))
    trace = load_nsys(NVTX_CSV)
    ops = trace.ops
    assert len(ops) == len(rows)
    assert ops["name"].astype(str).tolist() == [r["Name"] for r in rows]
    assert ops["dur_ns"].tolist() == [int(r["Duration (ns)"]) for r in rows]
    first = min(int(r["Start (ns)"]) for r in rows)
    assert ops["start_ns"].tolist() == [int(r["Start (ns)"]) - first for r in rows]
    # Nesting rebuilt from the times on each thread agrees with nsys's own level column.
    assert ops["depth"].tolist() == [int(r["Lvl"]) for r in rows]
    assert trace.kernels.empty and trace.meta.source.format == "nsys"
    renamed = tmp_path / "ranges.txt"
    shutil.copyfile(NVTX_CSV, renamed)
    assert detect_format(renamed) == "nsys"


def test_a_grid_smaller_than_the_gpu_is_found_in_an_nsys_export(traces: dict[Path, Trace]) -> None:
    """The saxpy export launches 2 blocks a kernel on a 108-SM A100: every kernel leaves most
    SMs idle. Its figures from sqlite3: kernels with fewer blocks than the GPU's SMs, their
    time, and the idle SM capacity, duration x (1 - blocks / SMs)."""
    from gpuprofile.analyses.context import Analysis
    from gpuprofile.analyses.detectors import low_occupancy

    ((sms,),) = _query(SAXPY, "SELECT smCount FROM TARGET_INFO_GPU")
    rows = _query(
        SAXPY,
        "SELECT end - start, gridX * gridY * gridZ FROM CUPTI_ACTIVITY_KIND_KERNEL",
    )
    under = [(dur, blocks) for dur, blocks in rows if blocks < sms]
    assert len(under) == len(rows) == 5
    trace = traces[SAXPY]
    [hint] = low_occupancy.detect(Analysis(trace, hardware_for_trace(trace)))
    assert hint.numbers["sm_count"] == sms
    assert hint.numbers["kernels_underfilled"] == len(under)
    assert hint.numbers["underfilled_ns"] == sum(dur for dur, _ in under)
    idle = sum(dur * (1 - blocks / sms) for dur, blocks in under)
    assert hint.numbers["idle_capacity_ns"] == pytest.approx(idle, abs=len(under))
    assert "occupancy is" not in hint.explanation  # the export has no occupancy estimate


def test_a_first_cuda_range_of_an_nvtx_csv_is_the_context(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The n-body CSV holds NVTX ranges only: its first range named for a CUDA call (read
    with csv: cudaMallocManaged, 204.8 ms) creates the context, and the report says so
    first."""
    from gpuprofile.units import format_time

    with require_trace(NVTX_CSV).open(newline="") as file:
        rows = list(csv.DictReader(file))
    cuda = [r for r in rows if r["Name"].startswith("cuda")]
    first = min(cuda, key=lambda r: int(r["Start (ns)"]))
    assert first["Name"] == "cudaMallocManaged"
    report = json.loads(_report(capsys, str(NVTX_CSV), "--format", "json"))
    one_off = next(n["text"] for n in report["notices"] if n["kind"] == "one-off")
    duration = format_time(int(first["Duration (ns)"]))
    assert f"CUDA context creation, cudaMallocManaged {duration}" in one_off
