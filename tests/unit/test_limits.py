"""Reading is bounded: a size limit per file (one option, three spellings), gzip inflated no
further than the limit, paths that are not regular files refused before they are opened, and
raw errors met while reading turned into TraceFormatError naming the file (issue 16)."""

from __future__ import annotations

import gzip
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import zlib
from pathlib import Path

import pytest

import gpuprofile
from gpuprofile.errors import OptionError, TraceFormatError
from gpuprofile.importers.source import (
    DEFAULT_MAX_BYTES,
    byte_limit,
    max_bytes,
    parse_size,
    read_trace_bytes,
)
from helpers.kineto_docs import document, kernel, write

ROOT_READS_ALL = "running as root: chmod 000 does not stop root from reading"


def _trace(tmp: Path, name: str = "t.json") -> Path:
    return write(tmp / name, document([kernel("k", 1, 2, corr=1), kernel("k", 5, 2, corr=2)]))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("123", 123),
        (123, 123),
        ("4G", 4 * 1024**3),
        ("4GiB", 4 * 1024**3),
        ("4gb", 4 * 1000**3),
        ("500MB", 500 * 1000**2),
        ("1.5K", 1536),
        ("2 MiB", 2 * 1024**2),
        ("10B", 10),
    ],
)
def test_sizes_read_as_gnu_tools_read_them(text: int | str, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "abc", "-1", "0", "4 GiBs", "1e9", True, 0, -5])
def test_a_bad_size_is_an_option_error(text: object) -> None:
    with pytest.raises(OptionError, match="max_bytes"):
        parse_size(text)  # type: ignore[arg-type]


def test_the_limit_comes_from_the_block_then_the_environment_then_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GPUPROFILE_MAX_BYTES", raising=False)
    assert max_bytes() == DEFAULT_MAX_BYTES == 4 * 2**30
    monkeypatch.setenv("GPUPROFILE_MAX_BYTES", "1MiB")
    assert max_bytes() == 2**20
    with byte_limit("2KiB"):
        assert max_bytes() == 2048
        with byte_limit(None):
            assert max_bytes() == 2048
    assert max_bytes() == 2**20
    monkeypatch.setenv("GPUPROFILE_MAX_BYTES", "lots")
    with pytest.raises(OptionError, match="GPUPROFILE_MAX_BYTES"):
        max_bytes()


def test_a_file_over_the_limit_is_refused_by_its_size(tmp_path: Path) -> None:
    path = _trace(tmp_path)
    size = path.stat().st_size
    with pytest.raises(TraceFormatError) as info:
        gpuprofile.load(path, max_bytes=size - 1)
    message = str(info.value)
    assert message.startswith(f"{path}: it holds {size:,} bytes, more than the limit of ")
    assert f"{size - 1:,} bytes" in message and "--max-bytes" in message
    assert gpuprofile.load(path, max_bytes=size).trace.kernels.shape[0] == 2


def test_the_environment_sets_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _trace(tmp_path)
    monkeypatch.setenv("GPUPROFILE_MAX_BYTES", "100")
    with pytest.raises(TraceFormatError, match="more than the limit of 100 bytes"):
        gpuprofile.load(path)


def test_the_limit_holds_in_worker_processes(tmp_path: Path) -> None:
    """Set in this process, the limit reaches the workers that read a job's ranks."""
    run = tmp_path / "run"
    run.mkdir()
    small = _trace(run, "rank0.json")
    big = write(run / "rank1.json", document([kernel("k", i, 1, corr=i) for i in range(1, 200)]))
    limit = (small.stat().st_size + big.stat().st_size) // 2
    with pytest.raises(TraceFormatError) as info:
        gpuprofile.load(run, workers=2, max_bytes=limit)
    assert info.value.path == str(big) and "more than the limit" in info.value.problem


def test_gzip_is_inflated_no_further_than_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "t.json.gz"
    text = json.dumps(document([kernel("k", 1, 2, corr=1)])).encode()
    path.write_bytes(gzip.compress(text))
    assert read_trace_bytes(path) == text
    with byte_limit(len(text)):
        assert read_trace_bytes(path) == text
    with byte_limit(len(text) - 1), pytest.raises(TraceFormatError) as info:
        read_trace_bytes(path)
    assert info.value.problem.startswith("the gzip data inflates to more than the limit of ")


def test_every_gzip_member_is_read_and_counts_toward_the_limit(tmp_path: Path) -> None:
    """gzip files may be members end to end (RFC 1952, `cat a.gz b.gz`): all are the file."""
    text = json.dumps(document([kernel("k", 1, 2, corr=1)])).encode()
    path = tmp_path / "t.json.gz"
    half = len(text) // 2
    path.write_bytes(gzip.compress(text[:half]) + gzip.compress(text[half:]) + b"\0" * 8)
    assert read_trace_bytes(path) == text
    with byte_limit(len(text) - 1), pytest.raises(TraceFormatError, match="more than the limit"):
        read_trace_bytes(path)
    path.write_bytes(gzip.compress(text) + b"not gzip")
    with pytest.raises(TraceFormatError, match="bytes that are not gzip follow"):
        read_trace_bytes(path)


# The child reads the bomb and prints its peak resident memory before and after (VmHWM: its
# ru_maxrss would start at the peak of the process that started it).
_BOMB_CHILD = """
import sys, time
import gpuprofile

def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
before = hwm()
started = time.perf_counter()
try:
    gpuprofile.load(sys.argv[1], max_bytes=sys.argv[2])
except gpuprofile.TraceFormatError as exc:
    print(exc.problem)
print(hwm() - before, time.perf_counter() - started)
"""

BOMB_BYTES = 5 * 10**9
CHUNK = 4 * 2**20


def _bomb(path: Path, members: bool) -> None:
    """A JSON head, then 5 GB of zeros, written a chunk at a time (never held): one deflate
    stream of identical fully flushed blocks, or gzip members end to end."""
    head = b'{"traceEvents": ['
    zeros = bytes(CHUNK)
    with path.open("wb") as out:
        if members:
            out.write(gzip.compress(head))
            member = gzip.compress(zeros, compresslevel=9)
            for _ in range(BOMB_BYTES // CHUNK):
                out.write(member)
            return
        deflate = zlib.compressobj(9, zlib.DEFLATED, 31)
        out.write(deflate.compress(head) + deflate.flush(zlib.Z_FULL_FLUSH))
        block = deflate.compress(zeros) + deflate.flush(zlib.Z_FULL_FLUSH)
        for _ in range(BOMB_BYTES // CHUNK):
            out.write(block)
        out.write(deflate.flush())


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux's /proc")
@pytest.mark.parametrize("members", [False, True], ids=["one stream", "many members"])
def test_a_gzip_bomb_stops_at_the_limit_in_bounded_memory(tmp_path: Path, members: bool) -> None:
    path = tmp_path / "bomb.json.gz"
    _bomb(path, members)
    assert path.stat().st_size < BOMB_BYTES // 500  # a bomb: 5 GB in a few MB
    limit = 64 * 2**20
    done = subprocess.run(
        [sys.executable, "-c", _BOMB_CHILD, str(path), str(limit)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    problem, numbers = done.stdout.strip().splitlines()
    assert problem.startswith("the gzip data inflates to more than the limit of 67,108,864 bytes")
    grown, seconds = int(numbers.split()[0]), float(numbers.split()[1])
    # The limit's worth of output and the compressed file, with room for the allocator; the
    # whole bomb would be 5 GB, and a member-by-member join could double the output.
    assert grown < 3 * limit, f"peak memory grew by {grown:,} bytes"
    assert seconds < 30


def _special_paths(tmp: Path) -> dict[str, Path]:
    fifo = tmp / "fifo.json"
    os.mkfifo(fifo)
    paths = {"FIFO (named pipe)": fifo, "directory": tmp}
    if Path("/dev/zero").exists():
        paths["character device"] = Path("/dev/zero")
    return paths


def _load_in_thread(path: Path) -> BaseException | None:
    """load(path)'s exception; fails the test when it has not returned within 20 s (a FIFO
    opened for reading would wait for a writer forever)."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            gpuprofile.load(path)
            outcome.append(None)
        except BaseException as exc:  # handed to the test
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(20)
    assert outcome, f"load({path}) blocked"
    return outcome[0]


@pytest.mark.parametrize("kind", ["FIFO (named pipe)", "character device"])
def test_special_files_are_refused_without_being_opened(tmp_path: Path, kind: str) -> None:
    paths = _special_paths(tmp_path)
    if kind not in paths:
        pytest.skip(f"no {kind} to try on this machine")
    error = _load_in_thread(paths[kind])
    assert isinstance(error, TraceFormatError)
    assert error.problem.startswith(f"is a {kind}, not a file")


def test_a_socket_is_refused(tmp_path: Path) -> None:
    # AF_UNIX paths are short (108 bytes): a folder of its own under the system's temp folder.
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "s.json"
        server = socket.socket(socket.AF_UNIX)
        try:
            server.bind(str(path))
            with pytest.raises(TraceFormatError, match="is a socket, not a file"):
                gpuprofile.load(path)
        finally:
            server.close()


def test_a_directory_where_a_file_is_expected(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    with pytest.raises(TraceFormatError, match="is a directory"):
        read_trace_bytes(tmp_path)
    with pytest.raises(TraceFormatError, match="is a directory"):
        gpuprofile.load(trace, ncu=tmp_path)


def test_a_fifo_among_a_jobs_files_is_named_not_skipped(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    _trace(run, "rank0.json")
    os.mkfifo(run / "rank1.json")
    error = _load_in_thread(run)
    assert isinstance(error, TraceFormatError)
    assert error.path == str(run / "rank1.json") and "FIFO" in error.problem


@pytest.mark.skipif(os.geteuid() == 0, reason=ROOT_READS_ALL)
def test_unreadable_files_and_folders_say_permission_denied(tmp_path: Path) -> None:
    path = _trace(tmp_path)
    path.chmod(0)
    with pytest.raises(TraceFormatError, match="permission denied"):
        gpuprofile.load(path)
    run = tmp_path / "run"
    run.mkdir()
    _trace(run, "rank0.json")
    run.chmod(0)
    try:
        with pytest.raises(TraceFormatError, match="permission denied"):
            gpuprofile.load(run)
    finally:
        run.chmod(0o755)


@pytest.mark.parametrize("compress", [False, True], ids=["json", "json.gz"])
def test_a_byte_order_mark_is_accepted(tmp_path: Path, compress: bool) -> None:
    plain = _trace(tmp_path)
    text = b"\xef\xbb\xbf" + plain.read_bytes()
    marked = tmp_path / ("bom.json.gz" if compress else "bom.json")
    marked.write_bytes(gzip.compress(text) if compress else text)
    expected = gpuprofile.load(plain).trace.kernels
    got = gpuprofile.load(marked).trace.kernels
    assert got.shape[0] == 2
    assert got["dur_ns"].tolist() == expected["dur_ns"].tolist() == [2000, 2000]


def test_a_path_with_a_newline_reads(tmp_path: Path) -> None:
    path = _trace(tmp_path, "two\nlines.json")
    assert gpuprofile.load(path).trace.kernels.shape[0] == 2


def test_nesting_too_deep_is_a_trace_format_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"traceEvents": [], "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(TraceFormatError) as info:
        gpuprofile.load(path)
    assert info.value.path == str(path) and "nested too deeply" in info.value.problem


@pytest.mark.parametrize(
    ("raised", "problem"),
    [
        (MemoryError(), "ran out of memory"),
        (RecursionError(), "nested too deeply"),
        (PermissionError(13, "Permission denied"), "permission denied"),
        (OSError(5, "Input/output error"), "cannot read: Input/output error"),
        (UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"), "not UTF-8"),
    ],
)
def test_raw_errors_met_reading_name_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, raised: BaseException, problem: str
) -> None:
    import gpuprofile.importers.kineto.trace as reader

    def fails(path: Path) -> bytes:
        raise raised

    monkeypatch.setattr(reader, "read_trace_bytes", fails)
    path = _trace(tmp_path)
    with pytest.raises(TraceFormatError) as info:
        gpuprofile.load(path)
    assert info.value.path == str(path) and problem in info.value.problem


def test_a_byte_order_mark_is_accepted_in_tensorrt_exports(tmp_path: Path) -> None:
    """Every JSON format reads its bytes through source.read_trace_bytes: a TensorRT profile
    and the graph beside it, each with a mark, read as they do without."""
    records = [{"count": 10}]
    records += [
        {"name": n, "timeMs": ms * 10, "averageMs": ms, "medianMs": ms, "percentage": 50.0}
        for n, ms in (("conv1", 1.0), ("fc", 1.0))
    ]
    graph = {"Layers": [{"Name": "conv1", "LayerType": "Convolution"}], "Bindings": ["in"]}
    folders = {}
    for marked in (False, True):
        folder = tmp_path / ("marked" if marked else "plain")
        folder.mkdir()
        mark = b"\xef\xbb\xbf" if marked else b""
        (folder / "net.graph.json").write_bytes(mark + json.dumps(graph).encode())
        (folder / "net.profile.json").write_bytes(mark + json.dumps(records).encode())
        folders[marked] = gpuprofile.load(folder / "net.profile.json").report()["inference"]
    assert [layer["name"] for layer in folders[True]["layers"]] == ["conv1", "fc"]
    assert folders[True] == folders[False]
