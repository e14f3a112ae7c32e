"""Per-step streaming: gpuprofile.step(), optimizer steps, --steps schedules, --max-events."""

from __future__ import annotations

import itertools
import json
import shutil
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
import torch.optim.optimizer as torch_optimizer
from IPython.core.interactiveshell import InteractiveShell

import gpuprofile
import gpuprofile.magic
from gpuprofile.capture import steps as step_state
from gpuprofile.capture.guard import profiler_running
from gpuprofile.capture.options import CaptureOptions, parse_steps
from gpuprofile.errors import OptionError
from gpuprofile.trace.meta import Schedule, Steps

# Chrome-trace categories that are timeline events (ops, runtime calls, GPU activity).
TIMELINE_CATEGORIES = {
    "cpu_op",
    "user_annotation",
    "python_function",
    "cuda_runtime",
    "cuda_driver",
    "kernel",
    "gpu_memcpy",
    "gpu_memset",
}


def recorded(wait: int, active: int, repeat: int, steps: int) -> list[int]:
    """Step indexes torch.profiler.schedule(wait, warmup=1, active, repeat) records."""
    cycle = wait + 1 + active
    return [
        i for i in range(steps) if (repeat == 0 or i < repeat * cycle) and i % cycle >= wait + 1
    ]


def optimizer_hooks() -> int:
    return len(torch_optimizer._global_optimizer_post_hooks)


def window_files(scratch: Path) -> list[Path]:
    """The windows torch has written so far, in order."""
    return sorted(
        scratch.glob("gpuprofile-windows-*/window*.pt.trace.json"),
        key=lambda p: int(p.name.removeprefix("window").split(".")[0]),
    )


def timeline_events_in(path: Path) -> int:
    return sum(
        e.get("ph") == "X" and e.get("cat") in TIMELINE_CATEGORIES
        for e in json.loads(path.read_text())["traceEvents"]
    )


def matmul_steps(steps: int, end: list[int] | None = None) -> None:
    a = torch.ones(8, 8)
    for i in range(steps):
        for _ in range(i + 1):  # step i runs i + 1 matmuls: each step's share is known
            a @ a
        gpuprofile.step()
    if end is not None:
        end.append(time.time_ns())


def test_only_recorded_steps_reach_the_trace_and_windows_come_early(tmp_path: Path) -> None:
    export = tmp_path / "run.json"
    end: list[int] = []
    with gpuprofile.profile(steps=(1, 2, 2), export=export, interval=0) as p:
        matmul_steps(12, end)
    trace = p.trace
    expected_mm = sum(i + 1 for i in recorded(1, 2, 2, 12))
    expected_steps = len(recorded(1, 2, 2, 12))
    assert expected_mm == 3 + 4 + 7 + 8
    assert int((trace.ops["name"] == "aten::mm").sum()) == expected_mm
    assert trace.meta.steps is not None and trace.meta.steps.count == 12
    assert trace.meta.steps.schedule == Schedule(wait=1, warmup=1, active=2, repeat=2)
    windows = trace.meta.windows
    assert len(windows) == 2
    # Each window was handed over (written, shown to the live view) while the block still
    # ran, not after it.
    assert all(w.written_ns is not None and w.written_ns < end[0] for w in windows)
    assert [w.step for w in windows] == [4, 8]
    assert trace.meta.dropped is None
    # The report names the recorded steps, as runs of consecutive step numbers.
    runs = [
        [step for _, step in run]
        for _, run in itertools.groupby(
            enumerate(recorded(1, 2, 2, 12)), key=lambda pair: pair[1] - pair[0]
        )
    ]
    named = ", ".join(f"#{run[0]}-{run[-1]}" for run in runs)
    steps = (
        f"STEPS: recorded {expected_steps} of 12 steps in {len(runs)} windows ({named}; "
        "numbered from 0, as ProfilerStep#N);"
    )
    assert steps in p.text()
    [notice] = p.report()["notices"]
    assert notice["kind"] == "steps" and f"STEPS: {notice['text']}".startswith(steps)


def test_a_cell_ending_between_windows_says_so() -> None:
    with gpuprofile.profile(steps=(0, 3, 0), interval=0) as p:
        matmul_steps(5)  # warmup, 3 recorded, then one step of the next warmup
    assert "STEPS: recorded 3 of 5 steps in 1 window (#1-3; numbered" in p.text()
    assert "and the cell's end after its last step" in p.text()


def test_steps_that_record_nothing_say_why() -> None:
    with gpuprofile.profile(steps=(0, 2, 0), interval=0) as p:
        torch.ones(4).cumsum(0)  # no step marked at all
    assert "STEPS: no step was marked, so no window was recorded: call gpuprofile.step()" in (
        p.text()
    )
    with gpuprofile.profile(steps=(5, 2, 0), interval=0) as p:
        matmul_steps(3)
    assert "STEPS: recorded 0 of 3 steps: a window starts after 6 steps (wait 5, warmup 1)" in (
        p.text()
    )


def test_merged_times_match_the_raw_window_files(tmp_path: Path, scratch: Path) -> None:
    export = tmp_path / "run.json"
    with gpuprofile.profile(steps=(0, 2, 3), export=export, interval=0) as p:
        matmul_steps(9)  # windows handed over at steps 3, 6 and 9
        files = [Path(shutil.copy(f, tmp_path / f.name)) for f in window_files(scratch)]
    assert len(files) == 3
    # --export PATH is one file: the windows' events, as torch wrote them, together.
    assert p.report()["source"]["path"] == str(export)
    assert timeline_events_in(export) == sum(timeline_events_in(f) for f in files)
    per_file: list[list[tuple[int, int]]] = []
    for path in files:
        doc = json.loads(path.read_text())
        base = int(doc.get("baseTimeNanoseconds", 0))
        per_file.append(
            [
                (base + round(e["ts"] * 1000), round(e["dur"] * 1000))
                for e in doc["traceEvents"]
                if e.get("ph") == "X" and e.get("name") == "aten::mm"
            ]
        )
    raw = [op for ops_of_file in per_file for op in ops_of_file]
    ops = p.trace.ops
    mm = ops[ops["name"] == "aten::mm"].sort_values("start_ns", kind="stable")
    origin = p.trace.meta.origin_ns
    merged = [(origin + int(s), int(d)) for s, d in zip(mm["start_ns"], mm["dur_ns"], strict=True)]
    assert len(merged) == len(raw) == sum(i + 1 for i in recorded(0, 2, 3, 9))
    # Rounding of float microseconds may move an edge by a nanosecond.
    for (ms, md), (rs, rd) in zip(merged, sorted(raw), strict=True):
        assert abs(ms - rs) <= 1 and abs(md - rd) <= 1
    # Windows follow each other: every op of a later window starts after the earlier one ends.
    for earlier, later in itertools.pairwise(per_file):
        assert max(s + d for s, d in earlier) <= min(s for s, _ in later)
    assert ops["id"].is_unique
    parents = ops.loc[ops["parent"] >= 0, "parent"]
    assert parents.isin(ops["id"]).all()
    assert (
        ops.loc[parents.index, "start_ns"].to_numpy()
        >= ops.set_index("id").loc[parents.to_numpy(), "start_ns"].to_numpy()
    ).all()


def sgd_loop(steps: int, explicit: str | None = None) -> None:
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(3, 4)
    for _ in range(steps):
        if explicit == "before":
            gpuprofile.step()
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()
        if explicit == "after":
            gpuprofile.step()


def test_optimizer_steps_count_without_explicit_steps() -> None:
    hooks = optimizer_hooks()
    with gpuprofile.profile(interval=0) as p:
        assert optimizer_hooks() == hooks + 1
        sgd_loop(6)
    assert p.trace.meta.steps == Steps(count=6, explicit=False, schedule=None)
    assert optimizer_hooks() == hooks
    assert step_state._active is None


def test_optimizer_steps_drive_the_schedule() -> None:
    with gpuprofile.profile(steps=(0, 1, 0), interval=0) as p:
        sgd_loop(6)
    # Every other step is recorded, each as its own window.
    assert len(p.trace.meta.windows) == len(recorded(0, 1, 0, 6)) == 3
    assert int((p.trace.ops["name"] == "Optimizer.step#SGD.step").sum()) == 3


@pytest.mark.parametrize("where", ["before", "after"])
def test_explicit_steps_and_an_optimizer_count_once(where: str) -> None:
    with gpuprofile.profile(interval=0) as p:
        sgd_loop(6, explicit=where)
    assert p.trace.meta.steps == Steps(count=6, explicit=True, schedule=None)
    assert gpuprofile.step() == 0  # outside a capture: nothing to mark


def test_max_events_drops_later_windows_and_says_how_many(tmp_path: Path, scratch: Path) -> None:
    export = tmp_path / "run.json"
    a = torch.ones(8, 8)
    with gpuprofile.profile(steps=(0, 1, 0), max_events=1, export=export, interval=0) as p:
        for _ in range(8):  # every step alike: every window holds as many events
            for _ in range(3):
                a @ a
            gpuprofile.step()
        written = window_files(scratch)
    # 4 windows recorded; the first already holds more than one event, so the 3 later ones
    # are dropped before they are even written out.
    assert len(recorded(0, 1, 0, 8)) == 4
    assert len(written) == 1
    assert timeline_events_in(export) > 1
    assert len(json.loads(export.read_text())["gpuprofile"]["windows"]) == 1
    assert len(p.trace.meta.windows) == 1
    assert int((p.trace.ops["name"] == "aten::mm").sum()) == 3  # step 1 only
    # How many events were dropped: about three times what the kept window holds (torch's
    # count of a window's events and its file's events differ by its own annotation or so).
    in_kept = sum(e.get("ph") == "X" for e in json.loads(export.read_text())["traceEvents"])
    dropped = p.trace.meta.dropped
    assert dropped is not None and dropped.events is not None
    assert dropped.windows == 3 and dropped.max_events == 1
    assert abs(dropped.events - 3 * in_kept) <= 3 * 2, (dropped, in_kept)
    assert p.report()["dropped"]["windows"] == 3
    assert (
        f"DROPPED: {dropped.events} events in 3 recorded windows dropped, unread, once the "
        "windows kept held more than --max-events 1 events" in p.text()
    )


def test_steps_argument_is_checked() -> None:
    with pytest.raises(ValueError, match="ACTIVE"), gpuprofile.profile(steps=(1, 0)):
        pass
    assert not profiler_running()
    assert CaptureOptions(steps=parse_steps("2,3")).steps == (2, 3, 0)
    for bad in ("2", "a,b", "1,2,3,4", "-1,2"):
        with pytest.raises(OptionError, match="WAIT,ACTIVE"):
            parse_steps(bad)


def test_magic_with_steps_streams_windows_to_the_widget(
    shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A kernel makes the magic show a live widget; record its refills as they happen.
    monkeypatch.setattr(shell, "kernel", object(), raising=False)
    shown: list[Any] = []
    updated: list[Any] = []

    def display(data: Any, **_: Any) -> SimpleNamespace:
        shown.append(data)
        return SimpleNamespace(update=lambda data, **_: updated.append(data))

    monkeypatch.setattr(gpuprofile.magic, "display", display)
    lives: list[Any] = []
    refills: list[tuple[int, int]] = []
    # The cell waits for each window to be shown before going on: refills run on their own
    # thread, so the cell is not blocked by them, and nothing here depends on timing.
    windows_shown = [threading.Event(), threading.Event()]
    shell.user_ns["windows_shown"] = windows_shown

    def refilled(change: dict[str, Any]) -> None:
        refills.append((time.time_ns(), change["new"]))
        if len(refills) <= len(windows_shown):
            windows_shown[len(refills) - 1].set()

    class Watched(gpuprofile.magic._LiveOutput):
        def __init__(self, cell: str | None) -> None:
            super().__init__(cell)
            lives.append(self.feed)
            self.feed.widget.observe(refilled, names="total_events")

    monkeypatch.setattr(gpuprofile.magic, "_LiveOutput", Watched)
    hooks = optimizer_hooks()
    cell = (
        "%%gpuprofile --steps 0,1,2 --interval 0.05\n"
        "import time, torch, gpuprofile\n"
        "a = torch.ones(8, 8)\n"
        "for i in range(6):\n"
        "    a @ a\n"
        "    gpuprofile.step()\n"
        "    if i in (1, 3):\n"
        "        assert windows_shown[i // 2].wait(60), 'window not shown'\n"
        "cell_end_ns = time.time_ns()\n"
    )
    result = shell.run_cell(cell, store_history=True)
    assert result.success, result.error_in_exec
    profile = gpuprofile.last()
    assert profile.trace.meta.steps is not None and profile.trace.meta.steps.count == 6
    assert len(profile.trace.meta.windows) == len(recorded(0, 1, 2, 6)) == 2
    assert int((profile.trace.ops["name"] == "aten::mm").sum()) == 2
    # The widget grew while the cell ran: one refill per window, before the cell's end.
    end = shell.user_ns["cell_end_ns"]
    early = [count for when, count in refills if when < end]
    assert len(early) == 2 and 0 < early[0] < early[1]
    (live,) = lives
    assert live.widget.live["running"] is False
    assert live.widget.live["steps"] == 6
    assert live.widget.total_events == profile.widget().total_events
    # The live widget, shown first, became the profile's widget: filled in place, its output
    # never updated (JupyterLab would draw a new view, losing the user's zoom and selection).
    widget_output, snapshot = shown
    view = widget_output["application/vnd.jupyter.widget-view+json"]
    assert view["model_id"] == live.widget.model_id and profile.widget() is live.widget
    assert updated == []
    assert snapshot["text/plain"] == profile.text()
    assert not profiler_running()
    assert optimizer_hooks() == hooks and step_state._active is None
    # The thread that showed the windows ended with the cell.
    assert not [t for t in threading.enumerate() if t.name.startswith("gpuprofile-")]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("--steps 1", "--steps 1: expected WAIT,ACTIVE[,REPEAT] as whole numbers"),
        ("--steps 0,0", "--steps 0,0: ACTIVE (steps recorded per window) must be at least 1"),
        ("--max-events 5", "--max-events 5: applies to steps"),
        ("--max-events 0", "--max-events 0: applies to steps"),
        ("--steps 0,1 --max-events 0", "--max-events 0: must be positive"),
        ("--steps 0,1 --max-events x", "--max-events x: expected a whole number"),
        ("--interval -1", "--interval -1: must be 0 (off) or positive seconds"),
        ("--interval x", "--interval x: expected a number"),
        ("--hardware nowhere", "--hardware nowhere: there is no variable 'nowhere'"),
        (
            "--export {missing}/run.json",
            "--export {missing}/run.json: there is no folder {missing}",
        ),
    ],
)
def test_magic_refuses_bad_options_before_the_cell_runs(
    shell: InteractiveShell,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    options: str,
    message: str,
) -> None:
    missing = tmp_path / "no-such-folder"
    result = shell.run_cell(
        f"%%gpuprofile {options.format(missing=missing)}\nran_bad_option = True\n"
    )
    assert not result.success
    assert "ran_bad_option" not in shell.user_ns
    out, err = capsys.readouterr()
    printed = out + err
    assert f"UsageError: {message.format(missing=missing)}" in printed
    assert "Traceback" not in printed
    assert not profiler_running()


def test_windows_are_read_once_when_the_capture_ends_and_leave_no_files(
    scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gpuprofile.importers.windows as windows_module

    reads: list[int] = []
    read = windows_module.load_kineto_windows

    def counted(paths: Any) -> Any:
        reads.append(len(paths))
        return read(paths)

    monkeypatch.setattr(windows_module, "load_kineto_windows", counted)
    with gpuprofile.profile(steps=(0, 2, 0), interval=0) as p:
        matmul_steps(9)
        during = list(reads)
        written = window_files(scratch)
    # The cell's thread only wrote the windows out; they were read in one pass at the end.
    assert during == [] and len(written) == 3
    assert reads == [3]
    assert int((p.trace.ops["name"] == "aten::mm").sum()) == sum(
        i + 1 for i in recorded(0, 2, 0, 9)
    )
    assert list(scratch.iterdir()) == []


def test_a_window_that_cannot_be_read_is_listed_and_the_others_kept(scratch: Path) -> None:
    with gpuprofile.profile(steps=(0, 1, 0), interval=0) as p:
        matmul_steps(6)  # windows after steps 2, 4 and 6
        window_files(scratch)[0].write_text('{"traceEvents": [')  # spoilt before it is read
    [error] = p.trace.meta.errors
    assert error.startswith("window 0: TraceFormatError") and "truncated" in error
    assert [w.index for w in p.trace.meta.windows] == [1, 2]
    # Steps 3 and 5 (0-based) ran 4 and 6 matmuls.
    assert int((p.trace.ops["name"] == "aten::mm").sum()) == 4 + 6
    assert "INCOMPLETE: window 0" in p.text()


def test_scratch_windows_go_even_when_the_capture_fails_to_end(
    scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_end = step_state.end

    def broken_end() -> None:  # as torch.cuda.synchronize() raises after a device assert
        real_end()
        raise RuntimeError("device-side assert triggered")

    monkeypatch.setattr(step_state, "end", broken_end)
    with (
        pytest.raises(RuntimeError, match="device-side assert"),
        gpuprofile.profile(steps=(0, 1, 0), interval=0),
    ):
        matmul_steps(6)
        assert window_files(scratch)
    assert list(scratch.iterdir()) == []
    assert not profiler_running()


def test_a_window_with_nothing_in_it_is_not_kept(tmp_path: Path) -> None:
    from gpuprofile.capture.recorder import WindowRecorder

    class EmptyWindow:  # what torch.profiler hands over: here a window where nothing ran
        def export_chrome_trace(self, path: str) -> None:
            Path(path).write_text(json.dumps({"traceEvents": [], "baseTimeNanoseconds": 7}))

    reader = WindowRecorder(None, 1000, on_window=None)
    reader.ready(EmptyWindow())  # type: ignore[arg-type]
    assert reader.kept == [] and reader.errors == []
    trace = reader.result(started_ns=123)
    assert len(trace.ops) == 0 and trace.meta.origin_ns == 123
    reader.discard()


def test_when_no_window_reads_the_profile_is_empty_and_says_why(scratch: Path) -> None:
    with gpuprofile.profile(steps=(0, 1, 0), interval=0) as p:
        matmul_steps(4)  # windows after steps 2 and 4
        for window in window_files(scratch):
            window.write_text("not json")
    assert len(p.trace.ops) == 0 and p.partial is False
    [error] = p.trace.meta.errors
    assert error.startswith("no recorded window could be read: window 0: TraceFormatError")
    assert "INCOMPLETE: no recorded window could be read" in p.text()
