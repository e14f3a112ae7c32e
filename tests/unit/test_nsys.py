"""The Nsight Systems importer on small nsys-like SQLite files built here: both schema
generations' metadata tables, with and without ENUM_* tables, no kernel table, several
processes; damaged inputs and .nsys-rep reports through the CLI (exit 2, one line)."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest

from gpuprofile.cli import main
from gpuprofile.errors import TraceFormatError
from gpuprofile.hardware.match import hardware_for_trace
from gpuprofile.importers.formats import detect_format
from gpuprofile.importers.nsys import load_nsys
from gpuprofile.report.notices import notices

SESSION_START = 1_700_000_000_000_000_000
PID, OTHER_PID, TID = 4242, 4343, 4250
STRINGS = {
    1: "void gemm<float>(float const*, float*, int)",
    2: "gemm",
    3: "cudaLaunchKernel_v7000",
    4: "cudaMemcpy_v3020",
    5: "cudaLaunchKernel",
    6: "step",
    7: "cudaDeviceSynchronize_v3020",
    8: "main thread",
    9: "cuMemAlloc_v2",
}


def _global(pid: int, tid: int = 0) -> int:
    """nsys's serialized global id: the process id in bits 24.., the thread id below."""
    return (1 << 48) | (pid << 24) | tid


def build(
    path: Path,
    *,
    generation: int = 3,
    enums: bool = True,
    kernels: bool = True,
    second_process: bool = False,
    kernel_rows: int = 2,
) -> Path:
    """A minimal export of one process (two with ``second_process``): kernels, copies, a
    memset, runtime calls (one with its backtrace twin), NVTX ranges, a GPU."""
    db = sqlite3.connect(path)
    meta_table = "EXPORT_META_DATA" if generation == 2 else "META_DATA_EXPORT"
    schema = "2.9.1" if generation == 2 else "3.13.2"
    db.execute(f"CREATE TABLE {meta_table} (name TEXT, value TEXT)")
    db.executemany(
        f"INSERT INTO {meta_table} VALUES (?, ?)",
        [("EXPORT_PRODUCT_VERSION", "2099.1.1"), ("EXPORT_SCHEMA_VERSION", schema)],
    )
    db.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)")
    db.executemany("INSERT INTO StringIds VALUES (?, ?)", STRINGS.items())
    db.execute("CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER)")
    db.execute("INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (?)", (SESSION_START,))
    db.execute(
        "CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT, totalMemory INTEGER, "
        "smCount INTEGER, computeMajor INTEGER, computeMinor INTEGER, "
        "memoryBandwidth INTEGER, clockRate INTEGER, l2CacheSize INTEGER)"
    )
    db.execute(
        "INSERT INTO TARGET_INFO_GPU VALUES (0, 'NVIDIA A100-SXM4-80GB', 85899345920, 108, 8, "
        "0, 2039040000000, 1410000000, 41943040)"
    )
    gpid = _global(PID)
    if kernels:
        db.execute(
            "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT "
            "NULL, deviceId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER,"
            " demangledName INTEGER, shortName INTEGER, registersPerThread INTEGER, gridX "
            "INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY INTEGER, blockZ "
            "INTEGER, staticSharedMemory INTEGER, dynamicSharedMemory INTEGER)"
        )
        db.executemany(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES "
            "(?, ?, 0, 7, ?, ?, 1, 2, 64, 128, 2, 1, 256, 1, 1, 1024, 4096)",
            [(2000 + 1000 * i, 2500 + 1000 * i, 10 + i, gpid) for i in range(kernel_rows)],
        )
    db.execute(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL,"
        " deviceId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER, bytes "
        "INTEGER, copyKind INTEGER, srcKind INTEGER, dstKind INTEGER)"
    )
    db.executemany(
        "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?, ?, 0, 7, ?, ?, ?, ?, ?, ?)",
        [
            (1200, 1400, 20, gpid, 4096, 1, 0, 2),  # HtoD from pageable memory
            (5000, 5100, 21, gpid, 1024, 2, 2, 1),  # DtoH into pinned memory
            (5200, 5300, 22, gpid, 512, 8, 2, 2),  # DtoD
        ],
    )
    db.execute(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL,"
        " deviceId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER, value "
        "INTEGER, bytes INTEGER, memKind INTEGER)"
    )
    db.execute(
        "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (5400, 5450, 0, 7, 23, ?, 0, 2048, 2)",
        (gpid,),
    )
    db.execute(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT "
        "NULL, eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId "
        "INTEGER NOT NULL, returnValue INTEGER NOT NULL)"
    )
    gtid = _global(PID, TID)
    calls = [
        (1000, 1500, 0, gtid, 20, 4),  # cudaMemcpy_v3020
        (1900, 2100, 0, gtid, 10, 3),  # cudaLaunchKernel_v7000
        (1890, 2110, 67, gtid, 10, 5),  # its backtrace twin
        (2900, 3100, 0, gtid, 11, 3),
        (3200, 4600, 0, gtid, 30, 7),  # cudaDeviceSynchronize_v3020
        (4700, 4800, 1, gtid, 31, 9),  # cuMemAlloc_v2 (driver)
    ]
    if second_process:
        calls.append((900, 950, 0, _global(OTHER_PID, OTHER_PID), 1, 4))
    db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?, ?, ?, 0)", calls)
    db.execute(
        "CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT "
        "NULL, text TEXT, globalTid INTEGER, textId INTEGER)"
    )
    db.executemany(
        "INSERT INTO NVTX_EVENTS VALUES (?, ?, ?, ?, ?, ?)",
        [
            (800, 5000, 59, "outer", gtid, None),  # push/pop, text inline
            (1800, 3500, 59, None, gtid, 6),  # push/pop, text in StringIds ("step")
            (1850, 3400, 60, "async", gtid, None),  # start/end
            (3000, None, 34, "a mark", gtid, None),  # mark: not a range
            (3300, None, 59, "never popped", gtid, None),
        ],
    )
    db.execute("CREATE TABLE ThreadNames (nameId INTEGER, priority INTEGER, globalTid INTEGER)")
    db.execute("INSERT INTO ThreadNames VALUES (8, 0, ?)", (gtid,))
    if enums:
        _enums(db)
    db.commit()
    db.close()
    return path


def _enums(db: sqlite3.Connection) -> None:
    tables: dict[str, list[tuple[int, str, str]]] = {
        # The copy kind enum with values CUPTI's own numbering does not use: the file's enum
        # must decide.
        "ENUM_CUDA_MEMCPY_OPER": [
            (1, "CUDA_MEMCPY_KIND_HTOD", "Host-to-Device"),
            (2, "CUDA_MEMCPY_KIND_DTOH", "Device-to-Host"),
            (8, "CUDA_MEMCPY_KIND_PTOP", "Peer-to-Peer"),
        ],
        "ENUM_CUDA_MEM_KIND": [
            (0, "CUDA_MEMOPR_MEMORY_KIND_PAGEABLE", "Pageable"),
            (1, "CUDA_MEMOPR_MEMORY_KIND_PINNED", "Pinned"),
            (2, "CUDA_MEMOPR_MEMORY_KIND_DEVICE", "Device"),
        ],
        "ENUM_NSYS_EVENT_CLASS": [
            (0, "TRACE_PROCESS_EVENT_CUDA_RUNTIME", "CUDA runtime"),
            (1, "TRACE_PROCESS_EVENT_CUDA_DRIVER", "CUDA driver"),
            (67, "TRACE_PROCESS_EVENT_CUDABACKTRACE", "CUDA backtrace"),
        ],
        "ENUM_NSYS_EVENT_TYPE": [
            (34, "NvtxMark", "NvtxMark"),
            (59, "NvtxPushPopRange", "NvtxPushPopRange"),
            (60, "NvtxStartEndRange", "NvtxStartEndRange"),
        ],
    }
    for table, rows in tables.items():
        db.execute(f"CREATE TABLE {table} (id INTEGER, name TEXT, label TEXT)")
        db.executemany(f"INSERT INTO {table} VALUES (?, ?, ?)", rows)


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["report", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("generation", "enums"), [(2, False), (3, True), (3, False)])
def test_an_export_fills_every_table(tmp_path: Path, generation: int, enums: bool) -> None:
    trace = load_nsys(build(tmp_path / "x.sqlite", generation=generation, enums=enums))
    assert trace.meta.source.format == "nsys"
    assert (
        trace.meta.source.version == f"2099.1.1 (schema {'2.9.1' if generation == 2 else '3.13.2'})"
    )
    # Times from the earliest event (the range "outer" at 800 ns), origin absolute.
    assert trace.meta.origin_ns == SESSION_START + 800
    kernels = trace.kernels
    assert kernels["name"].tolist() == [STRINGS[1]] * 2
    assert kernels["start_ns"].tolist() == [1200, 2200]
    assert kernels["dur_ns"].tolist() == [500, 500]
    first = kernels.iloc[0]
    assert (first.grid_x, first.grid_y, first.grid_z) == (128, 2, 1)
    assert (first.block_x, first.block_y, first.block_z) == (256, 1, 1)
    assert (first.registers_per_thread, first.shared_memory) == (64, 1024 + 4096)
    assert (first.device, first.stream, first.correlation) == (0, 7, 10)

    copies = trace.memcpy
    expected_kinds = ["HtoD", "DtoH", "PtoP" if enums else "DtoD"]
    assert copies["kind"].tolist() == expected_kinds
    assert copies["pinned"].tolist() == [False, True, False]
    assert copies["bytes"].tolist() == [4096, 1024, 512]
    assert copies["name"].tolist()[0] == "Memcpy HtoD (Pageable -> Device)"
    assert trace.memset["bytes"].tolist() == [2048]

    runtime = trace.runtime
    # The backtrace twin (event class 67) is left out; CUPTI's version suffixes are dropped,
    # a driver function's own _v2 is kept.
    assert runtime["name"].tolist() == [
        "cudaMemcpy",
        "cudaLaunchKernel",
        "cudaLaunchKernel",
        "cudaDeviceSynchronize",
        "cuMemAlloc_v2",
    ]
    assert runtime["category"].tolist()[-2:] == ["cuda_runtime", "cuda_driver"]
    assert set(runtime["pid"]) == {PID} and set(runtime["tid"]) == {TID}
    launches = runtime[runtime["name"] == "cudaLaunchKernel"]
    assert sorted(launches["correlation"]) == sorted(kernels["correlation"])
    facts = trace.meta.ranks[0]
    assert facts.skipped["CUDA backtrace records (second rows of runtime calls)"] == 1
    assert facts.skipped["NVTX ranges never closed"] == 1
    assert sum(v for k, v in facts.skipped.items() if "not ranges" in k) == 1
    assert facts.thread_names == {f"{PID}/{TID}": "main thread"}

    ops = trace.ops.set_index("name")
    assert set(ops["category"]) == {"user_annotation"}
    assert ops.loc["step", "parent"] == ops.loc["outer", "id"]
    assert ops.loc["async", "parent"] == ops.loc["step", "id"]
    assert ops.loc["step", "dur_ns"] == 3500 - 1800

    (device,) = facts.devices
    assert (device["name"], device["sm_count"], device["compute_capability"]) == (
        "NVIDIA A100-SXM4-80GB",
        108,
        "8.0",
    )
    assert device["properties"]["clockRate"] == 1_410_000  # kHz, as CUDA's properties say
    hw = hardware_for_trace(trace)
    assert hw.source == "datasheet" and "A100" in hw.name and "80GB" in hw.name
    assert trace.meta.notes == ()


def test_no_kernel_table_is_an_empty_gpu_profile_with_a_notice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = build(tmp_path / "x.sqlite", kernels=False)
    trace = load_nsys(path)
    assert trace.kernels.empty and len(trace.memcpy) == 3
    (note,) = trace.meta.notes
    assert "CUPTI_ACTIVITY_KIND_KERNEL" in note and "empty" in note
    assert any(n["text"] == note for n in notices(trace.meta))
    code, out, _ = _cli(capsys, str(path))
    assert code == 0 and "CUPTI_ACTIVITY_KIND_KERNEL" in out


def test_an_empty_kernel_table_says_so_too(tmp_path: Path) -> None:
    trace = load_nsys(build(tmp_path / "x.sqlite", kernel_rows=0))
    assert trace.kernels.empty
    assert "holds no rows" in trace.meta.notes[0]


def test_a_process_without_gpu_work_is_a_helper_not_a_rank(tmp_path: Path) -> None:
    # The second process made one runtime call and ran no kernel, copy or set.
    trace = load_nsys(build(tmp_path / "x.sqlite", second_process=True))
    assert trace.ranks == [0]
    other = trace.runtime[trace.runtime["pid"] == OTHER_PID]
    assert other["rank"].tolist() == [0]  # kept, with its own pid
    assert any(f"pid {OTHER_PID} (with rank 0)" in n for n in trace.meta.notes)
    assert trace.meta.origin_ns == SESSION_START + 800  # the second process's call at 900


def test_each_process_with_gpu_work_is_a_rank_in_pid_order(tmp_path: Path) -> None:
    path = build(tmp_path / "x.sqlite", second_process=True)
    third = 4500  # a second GPU process, after the helper's pid
    db = sqlite3.connect(path)
    db.execute(
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES "
        "(9000, 9500, 0, 7, 99, ?, 1, 2, 64, 128, 2, 1, 256, 1, 1, 1024, 4096)",
        (_global(third),),
    )
    db.commit()
    db.close()
    trace = load_nsys(path)
    assert trace.ranks == [0, 1]
    assert trace.kernels.groupby("rank").size().to_dict() == {0: 2, 1: 1}  # 4242's two, 4500's
    # The helper (4343) is nearer 4242 than 4500: it joins rank 0.
    assert trace.runtime.loc[trace.runtime["pid"] == OTHER_PID, "rank"].tolist() == [0]
    assert any(
        f"pid {PID} -> rank 0" in n and f"pid {third} -> rank 1" in n for n in trace.meta.notes
    )


def test_a_renamed_export_is_read_by_content(tmp_path: Path) -> None:
    path = build(tmp_path / "x.sqlite")
    renamed = tmp_path / "profile.bin"
    path.rename(renamed)
    assert detect_format(renamed) == "nsys"
    assert len(load_nsys(renamed).kernels) == 2


def _one_line_error(capsys: pytest.CaptureFixture[str], path: Path) -> str:
    code, out, err = _cli(capsys, str(path))
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0], err
    return lines[0]


def test_a_truncated_export_exits_2_naming_the_damage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole = build(tmp_path / "x.sqlite", kernel_rows=2000).read_bytes()
    cut = tmp_path / "cut.sqlite"
    cut.write_bytes(whole[: len(whole) // 2])
    assert "damaged or truncated" in _one_line_error(capsys, cut)


def test_zeroed_pages_exit_2_naming_the_damage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole = bytearray(build(tmp_path / "x.sqlite", kernel_rows=2000).read_bytes())
    page = int.from_bytes(whole[16:18], "big")
    whole[page:] = bytes(len(whole) - page)  # every page but the schema's
    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(bytes(whole))
    assert "damaged or truncated" in _one_line_error(capsys, broken)


def test_a_sqlite_that_is_not_nsys_names_the_missing_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE notes (body TEXT)")
    db.close()
    line = _one_line_error(capsys, other)
    assert "not an Nsight Systems export" in line and "META_DATA_EXPORT" in line
    no_strings = tmp_path / "no_strings.sqlite"
    with sqlite3.connect(no_strings) as db:
        db.execute("CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT)")
    db.close()
    assert "no StringIds table" in _one_line_error(capsys, no_strings)


def test_a_missing_required_column_is_named(tmp_path: Path) -> None:
    path = build(tmp_path / "x.sqlite")
    with sqlite3.connect(path) as db:
        db.execute("ALTER TABLE CUPTI_ACTIVITY_KIND_MEMCPY DROP COLUMN copyKind")
    db.close()
    with pytest.raises(
        TraceFormatError, match="CUPTI_ACTIVITY_KIND_MEMCPY has no column 'copyKind'"
    ):
        load_nsys(path)


def _report_file(tmp_path: Path) -> Path:
    report = tmp_path / "run.nsys-rep"
    report.write_bytes(b"QDSTRM\x00 not sqlite")
    return report


def test_a_report_without_nsys_says_how_to_export_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    report = _report_file(tmp_path)
    assert detect_format(report) == "nsys"
    line = _one_line_error(capsys, report)
    assert "is an Nsight Systems report" in line
    assert "nsys export --type sqlite --output run.sqlite run.nsys-rep" in line


def _fake_nsys(bin_dir: Path, body: str) -> None:
    bin_dir.mkdir()
    script = bin_dir / "nsys"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


def test_a_report_is_exported_with_nsys_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    export = build(tmp_path / "made.sqlite")
    _fake_nsys(
        tmp_path / "bin",
        'while [ $# -gt 0 ]; do [ "$1" = --output ] && out="$2"; shift; done\n'
        f'cp "{export}" "$out"\n',
    )
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    report = _report_file(tmp_path)
    trace = load_nsys(report)
    assert len(trace.kernels) == 2
    assert trace.meta.source.path == str(report)


def test_a_failing_nsys_export_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_nsys(
        tmp_path / "bin", 'echo "starting" >&2\necho "ERROR: unsupported report" >&2\nexit 1\n'
    )
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    line = _one_line_error(capsys, _report_file(tmp_path))
    assert "`nsys export --type sqlite` failed: ERROR: unsupported report" in line


def _csv(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "stats.csv"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    return path


def test_a_stats_csv_gives_nested_ranges_and_a_note(tmp_path: Path) -> None:
    path = _csv(
        tmp_path,
        "Start (ns),End (ns),Duration (ns),Name,PID,TID,Lvl\r\n"
        "100,900,800,main,7,8,0\r\n"
        "200,400,200,inner,7,8,1\r\n",
    )
    assert detect_format(path) == "nsys"
    trace = load_nsys(path)
    assert trace.meta.source.format == "nsys" and trace.kernels.empty
    assert trace.ops["name"].tolist() == ["main", "inner"]
    assert trace.ops["start_ns"].tolist() == [0, 100] and trace.meta.origin_ns == 100
    assert trace.ops["depth"].tolist() == [0, 1]
    assert "no GPU events" in trace.meta.notes[0]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Start (ns),Duration (ns),CorrId\n1,2,3\n", "nsys stats CSV gpuprofile does not read"),
        ("Start (ns),End (ns),Name\n1,x,main\n", "line 2, column 'End (ns)': 'x' is not a number"),
    ],
)
def test_a_stats_csv_it_cannot_read_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    assert expected in _one_line_error(capsys, _csv(tmp_path, text))


def test_hardware_is_estimated_from_nsys_properties_for_an_unlisted_gpu(tmp_path: Path) -> None:
    path = build(tmp_path / "x.sqlite")
    with sqlite3.connect(path) as db:
        db.execute("UPDATE TARGET_INFO_GPU SET name = 'NVIDIA Future GPU'")
    db.close()
    hw = hardware_for_trace(load_nsys(path))
    assert hw.source == "estimated"
    # 108 SMs x 64 FP32 lanes (CC 8.0) x 2 x 1.41 GHz, from nsys's clockRate in Hz.
    assert hw.peak_flops["fp32"] == pytest.approx(108 * 64 * 2 * 1.41e9)
    assert hw.dram_bytes_per_s == 2039040000000  # TARGET_INFO_GPU.memoryBandwidth
