"""Hand-made bad inputs (issue 16), each made here in tmp_path: every one gives a result or a
clear error, in-process (gpuprofile.load, the report, the text view) and through the CLI
(`python -m gpuprofile report PATH`: exit 0, or 2 with one line naming the file; never a
traceback, a hang, exit 1 or 3).

Each case says what it must give: "ok" (a result), "error" (a GpuprofileError) or "either"
(an honest result or a clear error, both within the contract), and what a result must hold
where the issue names a figure (copies counted once, skipped events in the notices, a declared
rank kept).
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import gpuprofile
from gpuprofile.errors import GpuprofileError
from helpers.kineto_docs import cpu_op, document, kernel, memcpy, runtime, write
from helpers.mutants import impossible, unsafe_text

REPO = Path(__file__).resolve().parents[2]
# The gzip bomb: this much inflated, read under a limit far below it.
BOMB_BYTES = 2**30
BOMB_LIMIT = 16 * 2**20
SECONDS = 40  # a hang fails the test; a fair run of any case takes a few seconds
TERMINAL_CONTROLS = ("\x1b", "\r", "\x07", "\x9b")


def _base_events() -> list[dict[str, Any]]:
    """An aten::mm, its launch and kernel, and a copy: enough for every analysis to run."""
    dims = {"Input Dims": [[64, 64], [64, 64]], "Input type": ["float", "float"]}
    return [
        cpu_op("aten::mm", 0, 40, ext=1, **dims),
        runtime("cudaLaunchKernel", 5, 10, corr=7),
        kernel("sgemm_64x64", 20, 30, 7, **{"External id": 1}),
        memcpy("HtoD", 60, 20, 4096),
    ]


def _h100(**props: Any) -> list[dict[str, Any]]:
    return [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "numSms": 132, **props}]


def _trace(folder: Path, events: list[dict[str, Any]], **top: Any) -> Path:
    return write(folder / "trace.json", document(events, **top))


def _raw(folder: Path, text: bytes, name: str = "trace.json") -> Path:
    path = folder / name
    path.write_bytes(text)
    return path


# --- the cases -----------------------------------------------------------------------------


def deep_nesting(folder: Path) -> Path:
    depth = 100_000
    event = json.dumps(kernel("k", 0, 10, 1))[:-2]  # open: '..."correlation": 1}' minus '}}'
    return _raw(
        folder, f'{{"traceEvents": [{event}, "deep": {"[" * depth}{"]" * depth}}}}}]}}'.encode()
    )


def negative_durations(folder: Path) -> Path:
    events = _base_events()
    events += [kernel("neg", 100, -50, 8), runtime("cudaLaunchKernel", 90, -3, corr=8)]
    return _trace(folder, events)


def times_past_int64(folder: Path) -> Path:
    events = _base_events()
    events += [kernel("far", 2**64, 10, 8), kernel("long", 0, 2**63, 9), cpu_op("op", 1e300, 5)]
    return _trace(folder, events)


def non_finite_times(folder: Path) -> Path:
    text = json.dumps(document([*_base_events(), kernel("nan", 1, 2, 8), kernel("inf", 3, 4, 9)]))
    text = text.replace('"ts": 1, "dur": 2', '"ts": NaN, "dur": 2')
    text = text.replace('"ts": 3, "dur": 4', '"ts": Infinity, "dur": -Infinity')
    return _raw(folder, text.encode())


def strings_in_numeric_args(folder: Path) -> Path:
    args = {
        "registers per thread": "1e400", "blocks per SM": "True", "warps per SM": "1e400",
        "est. achieved occupancy %": "True", "grid": ["1e400", 1, 1], "block": [True, 1, 1],
        "shared memory": "NaN",
    }  # fmt: skip
    events = [*_base_events(), kernel("odd_args", 100, 10, 8, **args)]
    return _trace(folder, events, deviceProperties=_h100())


def bool_names(folder: Path) -> Path:
    events = _base_events()
    events[0]["name"], events[2]["name"] = True, False
    return _trace(folder, events)


def list_where_a_string_belongs(folder: Path) -> Path:
    events = _base_events()
    events[2]["name"], events[2]["cat"], events[0]["name"] = ["k"], ["kernel"], {"a": 1}
    events[0]["args"]["Input type"] = [["float"], 3]
    return _trace(folder, events)


def negative_shape_dims(folder: Path) -> Path:
    events = _base_events()
    events[0]["args"]["Input Dims"] = [[-1, 64], [64, -3]]
    events.append(
        cpu_op("aten::conv2d", 50, 5, ext=2, **{"Input Dims": [[1, -3, 8, 8], [4, 3, -1, 3]]})
    )
    return _trace(folder, events, deviceProperties=_h100())


def negative_num_sms(folder: Path) -> Path:
    return _trace(folder, _base_events(), deviceProperties=_h100(numSms=-132))


def bool_num_sms(folder: Path) -> Path:
    return _trace(folder, _base_events(), deviceProperties=_h100(numSms=True))


def _no_such_sm_count(report: dict[str, Any], text: str) -> None:
    # A negative or boolean SM count is no roof: the device's count is unknown, not -132 or 1.
    for rank in report["ranks"]:
        for device in rank["devices"]:
            count = device.get("sm_count")
            assert count is None or (type(count) is int and count > 0), device


DUPLICATED_COPIES = ((60.0, 20.0), (100.0, 7.5), (130.0, 12.0))


def duplicates_x3(folder: Path) -> Path:
    events = _base_events()[:3] + [memcpy("HtoD", ts, dur, 4096) for ts, dur in DUPLICATED_COPIES]
    return _trace(folder, [dict(e) for e in events for _ in range(3)])


def _copy_time_counted_once(report: dict[str, Any], text: str) -> None:
    # Worked out from the events written above, not from gpuprofile: each copy once, in ns.
    expected = round(sum(dur for _, dur in DUPLICATED_COPIES) * 1000)
    (rank,) = report["ranks"]
    assert sum(c["total_ns"] for c in rank["copies"]) == expected
    assert rank["counts"]["memcpy"] == len(DUPLICATED_COPIES)
    assert any("duplicate" in n["text"].lower() for n in report["notices"]), report["notices"]


def unknown_ph_and_cat(folder: Path) -> Path:
    odd = [
        {"ph": "Q", "cat": "kernel", "name": f"q{i}", "pid": 0, "tid": 7, "ts": i} for i in range(3)
    ]
    odd += [{**kernel(f"c{i}", 200 + i, 1, 90 + i), "cat": "mystery_category"} for i in range(5)]
    return _trace(folder, _base_events() + odd)


def _skipped_counts_reach_the_notices(report: dict[str, Any], text: str) -> None:
    said = " ".join(n["text"] for n in report["notices"])
    # 3 events of an unknown ph and 5 of an unknown category, as made above.
    assert "3" in said and "5" in said, report["notices"]
    assert "3" in text and "5" in text


def mixed_folder(folder: Path) -> Path:
    job = folder / "job"
    job.mkdir()
    info = {"backend": "nccl", "rank": 1, "world_size": 2}
    write(job / "declared.json", document(_base_events(), distributedInfo=info))
    write(job / "worker0.json", document(_base_events()))
    return job


def _declared_rank_kept(report: dict[str, Any], text: str) -> None:
    assert 1 in {r["rank"] for r in report["ranks"]}, [r["rank"] for r in report["ranks"]]


def escapes_in_names(folder: Path) -> Path:
    events = _base_events()
    events[2]["name"] = "\x1b[2J\x1b[Hcleared\rover\x07bell\x9b31m"
    events[0]["name"] = "aten::\x1b]0;title\x07mm"
    return _trace(folder, events)


def _names_shown_escaped(report: dict[str, Any], text: str) -> None:
    assert not any(c in text for c in TERMINAL_CONTROLS)
    assert "cleared" in text  # the kernel is still named, its controls shown as text


def utf8_bom(folder: Path) -> Path:
    return _raw(folder, b"\xef\xbb\xbf" + json.dumps(document(_base_events())).encode())


def invalid_utf8(folder: Path) -> Path:
    text = json.dumps(document(_base_events())).encode()
    return _raw(folder, text.replace(b"sgemm_64x64", b"sgemm_\xff\xfe\xc3"))


def truncated_json(folder: Path) -> Path:
    text = json.dumps(document(_base_events())).encode()
    return _raw(folder, text[: len(text) // 2])


def truncated_gzip(folder: Path) -> Path:
    data = gzip.compress(json.dumps(document(_base_events() * 50)).encode())
    return _raw(folder, data[: len(data) // 2], "trace.json.gz")


def empty_file(folder: Path) -> Path:
    return _raw(folder, b"")


def fifo(folder: Path) -> Path:
    path = folder / "trace.json"
    os.mkfifo(path)  # nothing ever writes to it: a reader that opens it waits forever
    return path


def dev_zero(folder: Path) -> Path:
    return Path("/dev/zero")


def gzip_bomb(folder: Path) -> Path:
    path = folder / "bomb.json.gz"
    packer = zlib.compressobj(1, zlib.DEFLATED, 31)  # 31: a gzip header and trailer
    chunk = bytes(2**20)
    with path.open("wb") as out:
        for _ in range(BOMB_BYTES // len(chunk)):
            out.write(packer.compress(chunk))
        out.write(packer.flush())
    return path


def directory_for_a_file(folder: Path) -> Path:
    path = folder / "trace.json"
    path.mkdir()
    return path


def unreadable_file(folder: Path) -> Path:
    if os.geteuid() == 0:
        pytest.skip("root reads a file whatever its mode: an unreadable file cannot be made")
    path = write(folder / "trace.json", document(_base_events()))
    path.chmod(0)
    return path


@dataclass(frozen=True)
class Case:
    make: Callable[[Path], Path]
    expect: str  # "ok", "error" or "either"
    check: Callable[[dict[str, Any], str], None] | None = None
    options: dict[str, Any] = field(default_factory=dict)  # gpuprofile.load's
    env: dict[str, str] = field(default_factory=dict)  # the CLI's


CASES = {
    "deep nesting": Case(deep_nesting, "either"),
    "negative durations": Case(negative_durations, "either"),
    "ts and dur past int64": Case(times_past_int64, "either"),
    "NaN and Infinity ts": Case(non_finite_times, "either"),
    "1e400 and True in numeric args": Case(strings_in_numeric_args, "either"),
    "bool names": Case(bool_names, "either"),
    "list where a string belongs": Case(list_where_a_string_belongs, "either"),
    "negative shape dims": Case(negative_shape_dims, "either"),
    "negative numSms": Case(negative_num_sms, "either", _no_such_sm_count),
    "bool numSms": Case(bool_num_sms, "either", _no_such_sm_count),
    "exact duplicates x3": Case(duplicates_x3, "ok", _copy_time_counted_once),
    "unknown ph and cat": Case(unknown_ph_and_cat, "ok", _skipped_counts_reach_the_notices),
    "mixed folder": Case(mixed_folder, "either", _declared_rank_kept),
    "escape sequences in names": Case(escapes_in_names, "ok", _names_shown_escaped),
    "UTF-8 BOM": Case(utf8_bom, "ok"),
    "invalid UTF-8": Case(invalid_utf8, "either"),
    "truncated JSON": Case(truncated_json, "either"),
    "truncated gzip": Case(truncated_gzip, "either"),
    "empty file": Case(empty_file, "error"),
    "FIFO": Case(fifo, "error"),
    "/dev/zero": Case(dev_zero, "error"),
    "gzip bomb": Case(
        gzip_bomb,
        "error",
        options={"max_bytes": BOMB_LIMIT},
        env={"GPUPROFILE_MAX_BYTES": str(BOMB_LIMIT)},
    ),
    "directory where a file is expected": Case(directory_for_a_file, "error"),
    "unreadable file": Case(unreadable_file, "error"),
}


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], Path]]:
    """Each case's input, made once for the module (the gzip bomb takes seconds to write)."""
    paths: dict[str, Path] = {}

    def make(name: str) -> Path:
        if name not in paths:
            paths[name] = CASES[name].make(tmp_path_factory.mktemp("bad"))
        return paths[name]

    yield make
    for path in paths.values():
        if path.exists() and path.is_file() and not path.is_relative_to("/dev"):
            path.chmod(0o600)


class _Hung(BaseException):
    pass


@contextmanager
def _limit(seconds: int) -> Iterator[None]:
    def ring(signum: int, frame: Any) -> None:
        raise _Hung

    previous = signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)
    try:
        yield
    except _Hung:
        pytest.fail(f"still reading after {seconds} s: a hang", pytrace=False)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _names_the_file(message: str, path: Path) -> None:
    assert path.name in message, f"the message does not name {path.name}: {message!r}"
    assert "\n" not in message.strip(), f"not one line: {message!r}"


@pytest.mark.parametrize("name", CASES)
def test_in_process(name: str, made: Callable[[str], Path]) -> None:
    case, path = CASES[name], made(name)
    with _limit(SECONDS):
        try:
            profile = gpuprofile.load(path, **case.options)
            report = profile.report()
            text = profile.text()
        except GpuprofileError as exc:
            assert case.expect != "ok", f"{name}: a result was due, got {exc}"
            _names_the_file(str(exc), path)
            return
    assert case.expect != "error", f"{name}: a clear error was due, got a result"
    assert impossible(report) == ""
    assert unsafe_text(text) == ""
    if case.check is not None:
        case.check(report, text)


@pytest.mark.parametrize("name", CASES)
def test_through_the_cli(name: str, made: Callable[[str], Path]) -> None:
    case, path = CASES[name], made(name)
    env = {**os.environ, "PYTHONPATH": str(REPO / "python"), **case.env}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "gpuprofile", "report", str(path)],
            capture_output=True,
            text=True,
            errors="surrogateescape",
            timeout=SECONDS,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{name}: the CLI still ran after {SECONDS} s: a hang", pytrace=False)
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.returncode in (0, 2), f"exit {done.returncode}: {done.stderr[-2000:]}"
    assert done.returncode == {"ok": 0, "error": 2}.get(case.expect, done.returncode), done.stderr
    if done.returncode == 2:
        _names_the_file(done.stderr, path)
    assert not any(c in done.stdout + done.stderr for c in TERMINAL_CONTROLS)
