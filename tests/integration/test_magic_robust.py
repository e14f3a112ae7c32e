"""%%gpuprofile in the situations real notebooks put it in: errors, interrupts, nesting, re-runs,
DataLoader workers, a terminal, and two kernels profiling at once. Profiling must never break
the user's kernel, and must leave nothing running behind it."""

from __future__ import annotations

import json
import math
import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import torch
from IPython.core.interactiveshell import InteractiveShell
from jupyter_client.manager import start_new_kernel

import gpuprofile

PROFILER_BUSY = "already recording"
WIDGET_NOISE = ("ProfileWidget(", "Error displaying widget")


def run(shell: InteractiveShell, cell: str) -> Any:
    return shell.run_cell(cell, store_history=True)


def profiler_on() -> bool:
    # Both the Python-side flag (what torch.profiler checks) and the C++ one (what records).
    return (
        bool(torch.autograd.profiler._is_profiler_enabled) or torch._C._autograd._profiler_enabled()
    )


def op_names(profile: gpuprofile.Profile) -> list[str]:
    return [str(n) for n in profile.trace.ops["name"]]


def test_exception_stops_the_profiler_and_keeps_a_partial_profile(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    cell = (
        "%%gpuprofile\nimport torch\nbefore = torch.arange(6.).cumsum(0)\n"
        "raise ValueError('boom 17')\n"
    )
    result = run(shell, cell)
    assert isinstance(result.error_in_exec, ValueError)
    assert str(result.error_in_exec) == "boom 17"
    assert not profiler_on()
    assert shell.user_ns["before"].tolist() == [0.0, 1.0, 3.0, 6.0, 10.0, 15.0]  # it still ran
    out = capsys.readouterr().out
    # The user's own traceback, pointing at their line, after the partial report.
    assert "ValueError" in out and "raise ValueError('boom 17')" in out
    assert out.index("PARTIAL") < out.index("ValueError")
    profile = gpuprofile.last()
    assert profile.partial is True
    assert "aten::cumsum" in op_names(profile)  # what ran before the error was recorded


def test_keyboard_interrupt_in_the_cell(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run(
        shell, "%%gpuprofile\nimport torch\nt = torch.ones(5).cumsum(0)\nraise KeyboardInterrupt\n"
    )
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    assert not profiler_on()
    out = capsys.readouterr().out
    assert "KeyboardInterrupt" in out and "raise KeyboardInterrupt" in out
    profile = gpuprofile.last()
    assert profile.partial is True
    assert "PARTIAL" in profile.text()
    assert "aten::cumsum" in op_names(profile)
    # The kernel still works, and profiles again.
    assert run(shell, "%%gpuprofile\nimport torch\ntorch.ones(2).sum()\n").success
    assert gpuprofile.last().partial is False


def test_nested_magic_is_one_line_and_the_outer_profile_is_intact(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    cell = (
        "%%gpuprofile\nimport torch\nouter_a = torch.ones(3).cumsum(0)\n"
        "get_ipython().run_cell('%%gpuprofile\\nx_nested = 1')\n"
        "outer_b = torch.arange(4.).cumprod(0)\n"
    )
    result = run(shell, cell)
    assert result.success, result.error_in_exec
    out, err = capsys.readouterr()
    printed = out + err
    assert "x_nested" not in shell.user_ns
    error_lines = [line for line in printed.splitlines() if PROFILER_BUSY in line]
    assert len(error_lines) == 1, printed
    assert "Traceback" not in printed and "---------" not in printed
    profile = gpuprofile.last()  # the outer cell's, recorded on both sides of the nested one
    assert profile.partial is False
    names = op_names(profile)
    assert "aten::cumsum" in names and "aten::cumprod" in names


def test_a_magic_nested_as_the_cells_body_shows_only_the_error(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # In a notebook (a kernel: the live widget shows at once), a cell whose body is another
    # %%gpuprofile: the inner one is refused, and the outer has recorded nothing of the cell.
    # Its output is the one line of error, not an empty PARTIAL profile above it.
    monkeypatch.setattr(shell, "kernel", object(), raising=False)
    shown: list[Any] = []
    updates: list[Any] = []

    class Handle:
        def update(self, *args: Any, **kwargs: Any) -> None:
            updates.append((args, kwargs))

    def display(*objects: Any, **kwargs: Any) -> Handle:
        shown.extend(objects)
        return Handle()

    monkeypatch.setattr(gpuprofile.magic, "display", display)
    lives: list[Any] = []

    class Watched(gpuprofile.magic._LiveOutput):
        def __init__(self, cell: str | None) -> None:
            super().__init__(cell)
            lives.append((self.feed.widget, self.feed.widget.model_id))

    monkeypatch.setattr(gpuprofile.magic, "_LiveOutput", Watched)
    last_before = gpuprofile.profiles.block._last
    result = run(shell, "%%gpuprofile\n%%gpuprofile\nx_inner = 1\n")
    assert not result.success and "x_inner" not in shell.user_ns
    out, err = capsys.readouterr()
    printed = out + err
    assert len([line for line in printed.splitlines() if PROFILER_BUSY in line]) == 1, printed
    assert "Traceback" not in printed
    (output,) = shown  # the live widget, shown while the cell ran
    ((widget, model_id),) = lives
    assert output["application/vnd.jupyter.widget-view+json"]["model_id"] == model_id
    assert widget.comm is None  # closed
    assert updates == [(({"text/plain": ""},), {"raw": True})]  # the output emptied
    assert gpuprofile.profiles.block._last is last_before  # no profile of nothing to come back to


def test_cell_under_a_running_torch_profiler_is_refused_and_theirs_keeps_recording(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(shell, "import torch\ntheirs = torch.profiler.profile()\ntheirs.start()\n").success
    try:
        capsys.readouterr()
        result = run(shell, "%%gpuprofile\nran_under_theirs = 1\n")
        out, err = capsys.readouterr()
        assert not result.success
        assert "ran_under_theirs" not in shell.user_ns
        printed = (out + err).strip()
        assert PROFILER_BUSY in printed and len(printed.splitlines()) == 1, printed
        assert run(shell, "after_refusal = torch.arange(3.).cumprod(0)\n").success
    finally:
        run(shell, "theirs.stop()\n")
    assert not profiler_on()
    theirs = {e.name for e in shell.user_ns["theirs"].events()}
    assert "aten::cumprod" in theirs  # recorded after our refusal: we did not stop their session


def test_rerunning_a_cell_makes_new_profiles_and_leaks_no_threads(shell: InteractiveShell) -> None:
    cell = (
        "%%gpuprofile\nimport threading, torch\n"
        "threads_during = {t.ident: t.name for t in threading.enumerate()}\n"
        "torch.ones(16, 16).matmul(torch.ones(16, 16))\n"
    )
    before = {t.ident: t.name for t in threading.enumerate()}
    profiles = []
    for _ in range(5):
        assert run(shell, cell).success
        profiles.append(gpuprofile.last())
        assert not profiler_on()
    assert len({id(p) for p in profiles}) == 5
    assert all(p.partial is False and "aten::mm" in op_names(p) for p in profiles)
    widgets = [p.widget() for p in profiles]
    assert len({w.model_id for w in widgets}) == 5
    # Threads the capture started (a sampler, say) are gone once the cell has ended.
    deadline = time.monotonic() + 2.0
    while True:
        leaked = {t.name for t in threading.enumerate() if t.ident not in before}
        if not leaked or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    during = shell.user_ns["threads_during"]
    started_in_cell = sorted(name for ident, name in during.items() if ident not in before)
    assert not leaked, (
        f"threads left running after 5 profiled cells: {sorted(leaked)} "
        f"(started while the cell ran: {started_in_cell})"
    )


def test_dataloader_workers_finish_and_are_profiled(shell: InteractiveShell) -> None:
    batches = math.ceil(30 / 4)
    cell = textwrap.dedent(
        """\
        %%gpuprofile
        import torch
        from torch.utils.data import DataLoader, TensorDataset
        dataset = TensorDataset(torch.arange(60.).reshape(30, 2), torch.arange(30))
        seen = [len(x) for x, _ in DataLoader(dataset, batch_size=4, num_workers=2)]
        """
    )
    started = time.monotonic()
    result = run(shell, cell)
    assert result.success, result.error_in_exec
    assert time.monotonic() - started < 30
    assert sum(shell.user_ns["seen"]) == 30
    assert not profiler_on()
    fetches = [n for n in op_names(gpuprofile.last()) if n.startswith("enumerate(DataLoader)")]
    assert len(fetches) >= batches  # one per batch (and the last, which ends the loop)
    assert all("MultiProcessing" in n for n in fetches)


# -- real processes -----------------------------------------------------------------------------


def child_env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}


def ipython_command() -> list[str]:
    return [sys.executable, "-m", "IPython", "--simple-prompt", "--no-banner", "--colors=NoColor"]


# With --simple-prompt, a cell magic ends at a blank line that follows a blank line.
CELL_END = "\n\n\n"


def test_terminal_ipython_prints_the_text_report(tmp_path: Path) -> None:
    script = (
        "%load_ext gpuprofile\n"
        "%%gpuprofile\nimport torch\nw = torch.ones(8, 8) @ torch.ones(8, 8)"
        + CELL_END
        + "print('AFTER', float(w[0, 0]))\n"
        + "import sys\nprint('WIDGET BUILT', 'gpuprofile.widget.widget' in sys.modules)\nexit\n"
    )
    done = subprocess.run(
        ipython_command(),
        input=script,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=child_env(),
    )
    printed = done.stdout + done.stderr
    assert done.returncode == 0, printed
    assert "gpuprofile report (capture)" in done.stdout
    assert "aten::mm" in done.stdout
    assert "AFTER 8.0" in done.stdout
    # Text only: the widget's code never ran in a terminal.
    assert "WIDGET BUILT False" in done.stdout
    for noise in WIDGET_NOISE:
        assert noise not in printed
    assert "Traceback" not in printed


def interrupted_ipython(cwd: Path, script: str, marker: str, delay_s: float) -> tuple[int, str]:
    """Run script in terminal IPython; SIGINT it delay_s after it prints marker. (rc, output)"""
    child = subprocess.Popen(
        ipython_command(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=cwd,
        env=child_env(),
    )
    lines: queue.Queue[str] = queue.Queue()

    def read_lines() -> None:
        assert child.stdout is not None
        for line in child.stdout:
            lines.put(line)

    reader = threading.Thread(target=read_lines, daemon=True)
    reader.start()
    seen: list[str] = []
    try:
        assert child.stdin is not None
        child.stdin.write(script)
        child.stdin.close()
        deadline = time.monotonic() + 60
        while not any(marker in x for x in seen):
            seen.append(lines.get(timeout=max(0.1, deadline - time.monotonic())))
        time.sleep(delay_s)
        child.send_signal(signal.SIGINT)
        rc = child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    reader.join(timeout=5)
    while not lines.empty():
        seen.append(lines.get())
    return rc, "".join(seen)


STATE_AFTER = (
    "import json, gpuprofile, torch\n"
    "p = gpuprofile.last()\n"
    "on = [bool(torch.autograd.profiler._is_profiler_enabled), "
    "torch._C._autograd._profiler_enabled()]\n"
    "names = list(p.trace.ops['name'])\n"
    "state = {'on': on, 'partial': p.partial, 'cumsum': names.count('aten::cumsum')}\n"
    "print('STATE ' + json.dumps(state))\n"
)


def read_state(printed: str) -> dict[str, Any]:
    line = next(x for x in printed.splitlines() if "STATE " in x)
    state: dict[str, Any] = json.loads(line.split("STATE ", 1)[1])
    return state


def test_sigint_during_a_long_cell(tmp_path: Path) -> None:
    script = (
        "%load_ext gpuprofile\n"
        "%%gpuprofile\nimport time, torch\nprint('CELL_STARTED', flush=True)\n"
        "while True:\n    torch.ones(32).cumsum(0)\n    time.sleep(0.001)"
        + CELL_END
        + STATE_AFTER
        + "exit\n"
    )
    rc, printed = interrupted_ipython(tmp_path, script, "CELL_STARTED", delay_s=0.5)
    assert rc == 0, printed
    assert "KeyboardInterrupt" in printed
    assert "PARTIAL" in printed
    state = read_state(printed)
    assert state["on"] == [False, False]
    assert state["partial"] is True
    assert state["cumsum"] > 10  # 0.5 s of a loop of ~1 ms iterations


def test_sigint_while_the_profile_is_being_made(tmp_path: Path) -> None:
    """Ctrl-C pressed as the cell ends, while the profiler stops and the trace is read back
    (seconds, for a big capture): the profiler must not be left half-stopped, the profile is
    shown, and the next %%gpuprofile cell runs."""
    script = (
        "%load_ext gpuprofile\n"
        "%%gpuprofile\nimport torch\nx = torch.ones(4)\n"
        "for _ in range(50_000):\n    x.add(1)\n"
        "print('CELL_END', flush=True)" + CELL_END + "%%gpuprofile\nimport torch\n"
        "torch.ones(3).cumsum(0)" + CELL_END + STATE_AFTER + "exit\n"
    )
    rc, printed = interrupted_ipython(tmp_path, script, "CELL_END", delay_s=0.2)
    assert rc == 0, printed
    assert "KeyboardInterrupt" in printed
    assert printed.count("gpuprofile report (capture)") == 2, printed  # both cells' profiles
    assert "already recording" not in printed
    state = read_state(printed)  # of the cell after the interrupted one
    assert state == {"on": [False, False], "partial": False, "cumsum": 1}


def execute(client: Any, code: str, sink: list[str]) -> dict[str, Any]:
    """Run code in a kernel; what it prints (and any traceback) goes to sink."""

    def keep(msg: dict[str, Any]) -> None:
        if msg["msg_type"] == "stream":
            sink.append(msg["content"]["text"])
        elif msg["msg_type"] == "error":
            sink.append("\n".join(msg["content"]["traceback"]))

    reply: dict[str, Any] = client.execute_interactive(code, timeout=90, output_hook=keep)
    return reply


def test_two_kernels_profile_at_the_same_time(tmp_path: Path) -> None:
    """Profiler state is per process: each kernel's profile holds its own ops and no others'.
    A file barrier makes sure both cells are inside their captures at once."""

    def cell(me: str, other: str, op: str, times: int) -> str:
        return textwrap.dedent(
            f"""\
            %%gpuprofile
            import pathlib, time, torch
            here = pathlib.Path({str(tmp_path)!r})
            def wait_for(name):
                deadline = time.monotonic() + 60
                while not (here / name).exists():
                    assert time.monotonic() < deadline, name
                    time.sleep(0.01)
            (here / "{me}.started").touch()
            wait_for("{other}.started")
            x = torch.arange(1., 9.)
            for _ in range({times}):
                x = torch.{op}(x, 0)
            (here / "{me}.done").touch()
            wait_for("{other}.done")
            """
        )

    report = (
        "import json, gpuprofile\np = gpuprofile.last()\nnames = list(p.trace.ops['name'])\n"
        "print('COUNTS ' + json.dumps({'partial': p.partial, 'cumsum': names.count('aten::cumsum'),"
        " 'cumprod': names.count('aten::cumprod')}))\n"
    )
    kernels = []
    jobs = [("a", "b", "cumsum", 7), ("b", "a", "cumprod", 5)]
    outputs: dict[str, list[str]] = {me: [] for me, *_ in jobs}
    errors: list[BaseException] = []

    def run_in(client: Any, me: str, code: str) -> None:
        try:
            reply = execute(client, code, outputs[me])
            assert reply["content"]["status"] == "ok", outputs[me]
        except BaseException as exc:  # reported on the main thread
            errors.append(exc)

    try:
        for _ in jobs:
            manager, client = start_new_kernel(
                kernel_name="python3", cwd=str(tmp_path), env=child_env(), startup_timeout=60
            )
            kernels.append((manager, client))
            execute(client, "%load_ext gpuprofile", [])
        threads = [
            threading.Thread(target=run_in, args=(client, me, cell(me, other, op, n)))
            for (_, client), (me, other, op, n) in zip(kernels, jobs)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not errors, errors
        for (_, client), (me, *_) in zip(kernels, jobs):
            outputs[me].clear()
            execute(client, report, outputs[me])
    finally:
        for manager, client in kernels:
            client.stop_channels()
            manager.shutdown_kernel(now=True)
    counts = {}
    for me in outputs:
        line = next(x for x in "".join(outputs[me]).splitlines() if x.startswith("COUNTS "))
        counts[me] = json.loads(line.removeprefix("COUNTS "))
    assert counts["a"] == {"partial": False, "cumsum": 7, "cumprod": 0}
    assert counts["b"] == {"partial": False, "cumsum": 0, "cumprod": 5}
