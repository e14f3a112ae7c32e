"""The cyclic garbage collector is off while gpuprofile reads a trace, builds a report or fills
a widget, and as it was afterwards: built condition, a collection due at every allocation."""

from __future__ import annotations

import gc
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import gpuprofile
from gpuprofile.collector import collector_paused
from helpers.synthetic import synthetic_trace


@pytest.fixture
def eager_collector() -> Iterator[list[int]]:
    """A young collection due at every allocation; the generations of those that ran."""
    ran: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            ran.append(info["generation"])

    threshold = gc.get_threshold()
    was_enabled = gc.isenabled()
    gc.enable()
    gc.set_threshold(1, 1, 1)
    gc.callbacks.append(seen)
    try:
        yield ran
    finally:
        gc.callbacks.remove(seen)
        gc.set_threshold(*threshold)
        if not was_enabled:
            gc.disable()


def test_the_collector_is_off_inside_and_as_it_was_after() -> None:
    was = gc.isenabled()
    gc.enable()
    try:
        with collector_paused():
            assert not gc.isenabled()
            with collector_paused():  # nested: still off, and left off
                assert not gc.isenabled()
            assert not gc.isenabled()
        assert gc.isenabled()
        with pytest.raises(ZeroDivisionError), collector_paused():
            1 / 0  # noqa: B018
        assert gc.isenabled()
        gc.disable()
        with collector_paused():
            pass
        assert not gc.isenabled()  # the user's choice stands
    finally:
        if was:
            gc.enable()
        else:
            gc.disable()


def test_no_collection_runs_while_a_trace_is_read_and_reported(
    tmp_path: Path, eager_collector: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    events = [
        {"ph": "X", "cat": "cpu_op", "name": f"aten::op{i % 7}", "pid": 1, "tid": 1,
         "ts": 10 * i, "dur": 5, "args": {"External id": i}}
        for i in range(2000)
    ]  # fmt: skip
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events}))

    def collections(work: Callable[[], object]) -> int:
        work()  # the modules it imports on first use are imported (not counted)
        eager_collector.clear()
        work()
        return len(eager_collector)

    # A few as the pause begins and ends (each allocation is one due), none inside.
    assert collections(lambda: gpuprofile.load(path).typed_report()) < 20
    assert gc.isenabled()
    with monkeypatch.context() as patch:  # the same work with the collector left on
        patch.setattr(gc, "disable", lambda: None)
        assert collections(lambda: gpuprofile.load(path).typed_report()) > 500


def test_no_collection_runs_while_a_widget_is_filled(
    eager_collector: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    from gpuprofile.widget.widget import ProfileWidget, show_result

    trace = synthetic_trace(200)
    widget = ProfileWidget()
    show_result(widget, None, "", trace)  # the modules it imports on first use (not counted)
    eager_collector.clear()
    show_result(widget, None, "", trace)
    assert len(eager_collector) < 20  # as the pause begins and ends, none inside
    assert gc.isenabled()
    monkeypatch.setattr(gc, "disable", lambda: None)
    eager_collector.clear()
    show_result(widget, None, "", trace)
    assert len(eager_collector) > 500, len(eager_collector)
