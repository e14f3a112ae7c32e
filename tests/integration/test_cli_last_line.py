"""`gpuprofile` run as a real process: a crash inside is one line, exit 3, and a saved
traceback; bad input stays exit 2; an interrupt is 130; a FIFO is refused, not waited on
(issue 16)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers.kineto_docs import document, kernel, write

# Patches the format detector to fail the way a bug would, then runs the command line as the
# installed script does.
_CRASHING = """
import sys
import gpuprofile.importers.formats as formats

def crashes(path):
    raise {error}

formats.detect_format = crashes
from gpuprofile.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _run(args: list[str], tmp: Path, code: str | None = None) -> subprocess.CompletedProcess[str]:
    start = ["-c", code] if code else ["-m", "gpuprofile"]
    # Crash files go to the test's folder (tempfile honours TMPDIR).
    env = {**os.environ, "TMPDIR": str(tmp)}
    return subprocess.run(
        [sys.executable, *start, *args], capture_output=True, text=True, timeout=120, env=env
    )


def test_a_crash_is_one_line_exit_3_with_the_traceback_saved(tmp_path: Path) -> None:
    trace = write(tmp_path / "t.json", document([kernel("k", 1, 2, corr=1)]))
    code = _CRASHING.format(error="TypeError(\"unhashable type: 'list'\")")
    done = _run(["report", str(trace)], tmp_path, code)
    assert done.returncode == 3, done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert lines[0].startswith(f"gpuprofile: internal error reading {trace}: TypeError: ")
    saved = list(tmp_path.glob("gpuprofile-crash-*.txt"))
    assert len(saved) == 1 and str(saved[0]) in lines[0]
    assert "TypeError: unhashable type: 'list'" in saved[0].read_text()


def test_an_interrupt_exits_130_without_a_traceback(tmp_path: Path) -> None:
    trace = write(tmp_path / "t.json", document([kernel("k", 1, 2, corr=1)]))
    done = _run(["report", str(trace)], tmp_path, _CRASHING.format(error="KeyboardInterrupt"))
    assert done.returncode == 130 and "Traceback" not in done.stderr


def test_bad_input_stays_exit_2(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    (tmp_path / "empty.json").write_bytes(b"")
    for path, problem in ((fifo, "is a FIFO"), (tmp_path / "empty.json", "file is empty")):
        done = _run(["report", str(path)], tmp_path)  # a FIFO opened to read would block
        assert done.returncode == 2, done.stderr
        lines = done.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"gpuprofile: error: {path}: {problem}")
    assert not list(tmp_path.glob("gpuprofile-crash-*"))
