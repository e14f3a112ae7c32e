"""The command line answers every input with one line: exit 2 for bad input, 3 for an internal
error (with the traceback saved), 130 when interrupted; text from traces is printed escaped
(issue 16)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

import gpuprofile
import gpuprofile.importers.formats as formats
from gpuprofile.cli import main
from gpuprofile.units import printable
from helpers.kineto_docs import document, kernel, write

# ESC [ 2 J clears the screen; \r and \b overwrite what was printed; BEL rings; U+009B is the
# C1 form of ESC [; U+202E shows what follows reversed.
HOSTILE = "evil\x1b[2J\r\b\x07\x9b\u202ekernel"
HOSTILE_SHOWN = "evil\\x1b[2J\\r\\x08\\x07\\x9b\\u202ekernel"
RAW = ("\x1b", "\r", "\b", "\x07", "\x9b", "\u202e")


def _dev_zero(tmp: Path) -> Path:
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero on this machine")
    return Path("/dev/zero")


def _fifo(tmp: Path) -> Path:
    os.mkfifo(tmp / "pipe.json")
    return tmp / "pipe.json"


def _empty(tmp: Path) -> Path:
    (tmp / "empty.json").write_bytes(b"")
    return tmp / "empty.json"


def _no_match(tmp: Path) -> Path:
    return tmp / "rank*.json"


def _newline_in_name(tmp: Path) -> Path:
    (tmp / "two\nlines.json").write_bytes(b"")
    return tmp / "two\nlines.json"


def _unreadable_folder(tmp: Path) -> Path:
    if os.geteuid() == 0:
        pytest.skip("running as root: chmod 000 does not stop root from reading")
    run = tmp / "run"
    run.mkdir()
    for rank in range(2):
        write(run / f"rank{rank}.json", document([kernel("k", 1, 2, corr=1)])).chmod(0)
    return run


CASES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "/dev/zero": (_dev_zero, "is a character device, not a file"),
    "a FIFO": (_fifo, "is a FIFO (named pipe), not a file"),
    "a 0-byte file": (_empty, "file is empty"),
    "a glob that matches nothing": (_no_match, "the pattern matches no file"),
    "a newline in the name": (_newline_in_name, "file is empty"),
    "a folder of unreadable files": (_unreadable_folder, "permission denied"),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_bad_paths_are_one_line_and_exit_2(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make, problem = CASES[case]
    path = make(tmp_path)
    assert main(["report", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("gpuprofile: error: "), err
    assert problem in err
    assert str(path).replace("\n", "\\n") in err


def test_max_bytes_refuses_and_raises_the_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path / "t.json", document([kernel("k", 1, 2, corr=1)]))
    size = path.stat().st_size
    assert main(["report", str(path), "--max-bytes", str(size - 1)]) == 2
    err = capsys.readouterr().err
    assert f"more than the limit of {size - 1:,} bytes per file" in err and "--max-bytes" in err
    assert main(["report", str(path), "--max-bytes", "1KiB"]) == 0
    with pytest.raises(SystemExit) as exit_:
        main(["report", str(path), "--max-bytes", "lots"])
    assert exit_.value.code == 2
    assert "not a size" in capsys.readouterr().err


def test_an_internal_error_is_one_line_exit_3_and_a_saved_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def crashes(path: Path) -> str:
        raise KeyError("kaboom")

    monkeypatch.setattr(formats, "detect_format", crashes)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    trace = write(tmp_path / "t.json", document([kernel("k", 1, 2, corr=1)]))
    assert main(["report", str(trace)]) == 3
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"gpuprofile: internal error reading {trace}: KeyError: 'kaboom'; ")
    saved = list(tmp_path.glob("gpuprofile-crash-*.txt"))
    assert len(saved) == 1 and f"traceback saved in {saved[0]}" in err
    text = saved[0].read_text()
    assert "Traceback (most recent call last)" in text and "KeyError: 'kaboom'" in text
    assert f"command: gpuprofile report {trace}" in text


def test_an_interrupt_exits_130(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(path: Path) -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr(formats, "detect_format", interrupted)
    trace = write(tmp_path / "t.json", document([kernel("k", 1, 2, corr=1)]))
    assert main(["report", str(trace)]) == 130
    assert capsys.readouterr().out == ""


def _hostile(tmp: Path, name: str, dur: float = 2) -> Path:
    events = [kernel(HOSTILE, 1, dur, corr=1), kernel("plain", 50, 3, corr=2)]
    return write(tmp / name, document(events, deviceProperties=[{"id": 0, "name": HOSTILE}]))


def test_names_are_printed_escaped_in_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(_hostile(tmp_path, "t.json"))]) == 0
    out = capsys.readouterr().out
    assert not any(char in out for char in RAW)
    # The top kernels and the device line.
    assert out.count(HOSTILE_SHOWN) >= 2, out


def test_names_are_printed_escaped_in_a_diff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _hostile(tmp_path, "a.json"), _hostile(tmp_path, "b.json", dur=20)
    assert main(["diff", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert HOSTILE_SHOWN in out and not any(char in out for char in RAW)


@pytest.mark.parametrize(
    ("text", "shown", "as_lines"),
    [
        ("aten::mm", "aten::mm", "aten::mm"),
        ("a\x1b[2Jb", "a\\x1b[2Jb", "a\\x1b[2Jb"),
        ("x\ry\bz\x07\x7f", "x\\ry\\x08z\\x07\\x7f", "x\\ry\\x08z\\x07\\x7f"),
        ("c1\x9b1m", "c1\\x9b1m", "c1\\x9b1m"),
        ("gnp.\u202eexe", "gnp.\\u202eexe", "gnp.\\u202eexe"),
        ("\u2066iso\u2069\u200f", "\\u2066iso\\u2069\\u200f", "\\u2066iso\\u2069\\u200f"),
        ("one\ntwo\tthree", "one\\ntwo\\tthree", "one\ntwo\tthree"),
        ("lone \udc80", "lone \\udc80", "lone \\udc80"),
        ("µs café 日本 ÿ", "µs café 日本 ÿ", "µs café 日本 ÿ"),
    ],
)
def test_printable_escapes_what_a_terminal_would_act_on(
    text: str, shown: str, as_lines: str
) -> None:
    assert printable(text) == shown
    assert printable(text, lines=True) == as_lines


def test_a_diffs_text_escapes_names_in_python_too(tmp_path: Path) -> None:
    a, b = _hostile(tmp_path, "a.json"), _hostile(tmp_path, "b.json", dur=20)
    text = gpuprofile.diff(a, b).text()
    assert HOSTILE_SHOWN in text and not any(char in text for char in RAW)
