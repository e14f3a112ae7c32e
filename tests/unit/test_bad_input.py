"""Every kind of bad input gives one clear line naming the file and the problem."""

from __future__ import annotations

import gzip
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import gpuprofile
from gpuprofile.cli import main
from helpers.kineto_docs import document, kernel, write


def _missing(tmp: Path) -> Path:
    return tmp / "nope.json"


def _empty(tmp: Path) -> Path:
    (tmp / "empty.json").write_bytes(b"")
    return tmp / "empty.json"


def _not_a_trace(tmp: Path) -> Path:
    (tmp / "config.json").write_text('{"learning_rate": 0.1}')
    return tmp / "config.json"


def _truncated(tmp: Path) -> Path:
    text = '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2},\n'
    (tmp / "cut.json").write_text(text)
    return tmp / "cut.json"


def _truncated_gzip(tmp: Path) -> Path:
    data = gzip.compress(b'{"traceEvents": []}' * 200)
    (tmp / "cut.json.gz").write_bytes(data[: len(data) // 2])
    return tmp / "cut.json.gz"


def _corrupt_gzip(tmp: Path) -> Path:
    (tmp / "bad.json.gz").write_bytes(b"\x1f\x8b\x08\x00" + b"garbage" * 10)
    return tmp / "bad.json.gz"


def _empty_directory(tmp: Path) -> Path:
    (tmp / "run").mkdir()
    (tmp / "run" / "readme.txt").write_text("no traces here")
    return tmp / "run"


def _lacks_ts(tmp: Path) -> Path:
    # An event without a ts is skipped and counted (test_kineto_boundary.py); with no other
    # event left, nothing is usable.
    event = kernel("k", 1, 1, corr=1)
    del event["ts"]
    return write(tmp / "nots.json", document([event]))


def _lacks_dur(tmp: Path) -> Path:
    event = kernel("k", 1, 1, corr=1)
    del event["dur"]
    return write(tmp / "nodur.json", document([event]))


def _wrong_type(tmp: Path) -> Path:
    # A value of the wrong type inside an event is unknown (test_kineto_boundary.py); the
    # events themselves of the wrong type are no trace.
    return write(tmp / "type.json", {"traceEvents": {"k": 1}})


def _binary(tmp: Path) -> Path:
    (tmp / "blob.json").write_bytes(bytes(range(256)) * 4)
    return tmp / "blob.json"


def _latin1(tmp: Path) -> Path:
    (tmp / "latin1.json").write_bytes('{"traceEvents": [{"name": "caf\xe9"}]}'.encode("latin-1"))
    return tmp / "latin1.json"


CASES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "missing path": (_missing, "no such file or directory"),
    "empty file": (_empty, "file is empty"),
    "JSON that is not a trace": (_not_a_trace, "no 'traceEvents' list"),
    "truncated JSON": (_truncated, "truncated"),
    "truncated gzip": (_truncated_gzip, "corrupt or truncated gzip"),
    "corrupt gzip": (_corrupt_gzip, "corrupt or truncated gzip"),
    "directory with no traces": (_empty_directory, "holds no trace files"),
    "event lacking ts": (_lacks_ts, "kernel events without a ts (first: traceEvents[0] (kernel"),
    "event lacking dur": (_lacks_dur, "kernel events without a dur (first: traceEvents[0] (kernel"),
    "field of the wrong type": (_wrong_type, "$.traceEvents"),
    "binary bytes": (_binary, "not a trace gpuprofile reads"),
    "bytes that are not UTF-8": (_latin1, "not UTF-8"),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_load_raises_one_clear_error(case: str, tmp_path: Path) -> None:
    make, problem = CASES[case]
    path = make(tmp_path)
    with pytest.raises(gpuprofile.TraceFormatError) as info:
        gpuprofile.load(path)
    message = str(info.value)
    assert message.startswith(str(path) + ": "), message
    assert problem in message
    assert "\n" not in message


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_cli_exits_2_with_one_line(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make, problem = CASES[case]
    path = make(tmp_path)
    assert main(["report", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("gpuprofile: error: ")
    assert problem in err and str(path) in err


def test_truncated_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"traceEvents": [\n  {"ph": "X",, "ts": 1}\n]}')
    with pytest.raises(gpuprofile.TraceFormatError, match=r"line 2, column"):
        gpuprofile.load(path)


def test_cli_process_prints_no_traceback(tmp_path: Path) -> None:
    path = _truncated(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "gpuprofile", "report", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        f"gpuprofile: error: {path}: JSON is truncated (the file ends before the trace does)"
    ]


def test_a_notebook_shows_the_error_not_gpuprofiles_call_stack(
    shell: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """In IPython (and so in Jupyter) a bad file is one line: what is wrong with it."""
    path = _not_a_trace(tmp_path)
    result = shell.run_cell(f"import gpuprofile\ngpuprofile.load({str(path)!r})")
    assert isinstance(result.error_in_exec, gpuprofile.TraceFormatError)
    shown = capsys.readouterr()
    text = shown.out + shown.err
    assert text.strip() == f"TraceFormatError: {path}: {result.error_in_exec.problem}"
    assert "Traceback" not in text and "formats.py" not in text
