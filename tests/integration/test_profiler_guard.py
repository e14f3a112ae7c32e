"""torch's profiler kept consistent while gpuprofile records: a second profiler started inside
the block, and a kernel interrupt that lands inside one of the schedule's transitions."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.profiler import profiler as torch_profiler_module

import gpuprofile
from gpuprofile.capture.guard import profiler_running
from gpuprofile.capture.kineto_chatter import KinetoChatter
from gpuprofile.capture.options import CaptureOptions
from gpuprofile.capture.session import capture


def run_python(script: str) -> subprocess.CompletedProcess[str]:
    """The script in a child Python: what is tested here can end or maim a process."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )


def test_a_torch_profiler_inside_the_block_is_refused_and_the_profile_kept() -> None:
    # In a child process: before the guard, the profile's export crashed the process.
    script = """
        import json, torch, gpuprofile
        with gpuprofile.profile(interval=0) as p:
            torch.ones(4).cumsum(0)
            try:
                with torch.profiler.profile():
                    torch.ones(2).sum()
            except gpuprofile.ProfilerBusyError as error:
                print("refused:", error)
            torch.arange(3.0).cumprod(0)
        names = sorted(set(p.trace.ops["name"].astype(str)))
        print(json.dumps({"partial": p.partial, "names": names}))
        """
    done = run_python(script)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert any(line.startswith("refused: gpuprofile is recording this block") for line in lines)
    result = json.loads(lines[-1])
    assert result["partial"] is False
    # Recorded on both sides of the refused profiler; the refused one's sum never started.
    assert {"aten::cumsum", "aten::cumprod"} <= set(result["names"])


def test_a_profiler_started_between_windows_is_refused_at_the_next_window() -> None:
    # During --steps' wait steps nothing records, so theirs starts; gpuprofile's next window
    # is then refused, its stop fails inside torch, and the profile is still made and marked.
    theirs = torch.profiler.profile()
    try:
        with (
            pytest.raises(gpuprofile.ProfilerBusyError),
            gpuprofile.profile(steps=(2, 2, 0), interval=0) as p,
        ):
            theirs.start()
            for _ in range(4):
                torch.ones(3).cumsum(0)
                gpuprofile.step()
    finally:
        theirs.stop()
    assert p.partial is True
    [error] = p.trace.meta.errors
    assert error.startswith("torch's profiler failed to stop")
    assert "INCOMPLETE" in p.text()
    assert not profiler_running()


def test_an_interrupt_inside_a_step_waits_until_the_step_is_done(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    original = torch_profiler_module._KinetoProfile.prepare_trace
    interrupted: list[int] = []

    def prepare_interrupted(self: Any) -> None:
        if not interrupted:
            interrupted.append(1)
            signal.raise_signal(signal.SIGINT)  # a kernel interrupt, mid-transition
        original(self)

    monkeypatch.setattr(torch_profiler_module._KinetoProfile, "prepare_trace", prepare_interrupted)
    counted: list[int] = []  # what a live panel is told
    options = CaptureOptions(steps=(1, 2, 0), interval=0)
    with pytest.raises(KeyboardInterrupt), capture(options, on_step=counted.append) as p:
        for _ in range(20):
            torch.ones(3).cumsum(0)
            gpuprofile.step()
    assert interrupted == [1]
    # Raised right after the step whose transition it hit (wait 1: the first window's warmup
    # is prepared at step 1), not as torch's AssertionError at the profiler's stop; the live
    # count was told of that step too.
    assert p.trace.meta.steps is not None and p.trace.meta.steps.count == 1
    assert counted == [1]
    assert p.trace.meta.partial is True and p.trace.meta.errors == ()
    assert not profiler_running()


def test_kinetos_start_and_stop_chatter_stays_out_of_stderr(
    capfd: pytest.CaptureFixture[str],
) -> None:
    with gpuprofile.profile(interval=0):
        torch.ones(3).sum()
    with gpuprofile.profile(steps=(0, 1, 2), interval=0):
        for _ in range(5):
            torch.ones(3).sum()
            gpuprofile.step()
    err = capfd.readouterr().err
    assert "USDT:" not in err and "profiler_start" not in err


def test_other_lines_written_during_a_transition_still_reach_stderr(
    capfd: pytest.CaptureFixture[str],
) -> None:
    chatter = KinetoChatter()
    try:
        with chatter.dropped():
            os.write(2, b"USDT:2026 1:1 X.cpp:52] profiler_start\n[W] a real warning\n")
        with chatter.dropped():
            os.write(2, b"STAGE: Completed Stage: Warm Up\n")
    finally:
        chatter.close()
    assert capfd.readouterr().err == "[W] a real warning\n"


def test_without_a_descriptor_2_profiling_works_and_errors_stay_clean() -> None:
    # A process whose stderr is closed (some daemons): nothing to filter, nothing added.
    script = """
        import os, torch, gpuprofile
        os.close(2)
        with gpuprofile.profile(interval=0) as p:
            torch.ones(4).cumsum(0)
        try:
            with gpuprofile.profile(interval=0):
                raise ValueError("boom")
        except ValueError as error:
            print("context:", repr(error.__context__))
        print("ops:", len(p.trace.ops))
        """
    done = run_python(script)
    assert done.returncode == 0, done.stdout[-2000:]
    assert "context: None" in done.stdout
    assert int(done.stdout.split("ops:")[1]) > 0


def test_after_a_failed_stop_an_older_export_file_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gpuprofile.capture.session as session

    stop = session._stop

    def failing_stop(prof: Any) -> str:
        stop(prof)
        return "torch's profiler failed to stop (a test)"

    monkeypatch.setattr(session, "_stop", failing_stop)
    export = tmp_path / "cell.json"
    export.write_text('{"traceEvents": []}')  # from an earlier run
    with gpuprofile.profile(export=export, interval=0.01) as p:
        time.sleep(0.05)
    assert export.read_text() == '{"traceEvents": []}'  # no samples of this run added to it
    assert p.trace.meta.errors == (
        "torch's profiler failed to stop (a test)",
        f"{export} not written: the profiler failed to stop",
    )
