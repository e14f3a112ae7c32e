"""dynamo's tallies over a capture (capture/compiled.py) on a stand-in for
``torch._dynamo.utils``: the capture's share is what grew between the snapshot and the end, and
nothing is read (or imported) when the program never imported dynamo."""

from __future__ import annotations

import sys
import traceback
from collections import Counter
from types import SimpleNamespace

import pytest

from gpuprofile.capture import compiled
from gpuprofile.trace.meta import GraphBreak

NAME = "torch._dynamo.utils"
PRINT = "Failed to trace builtin operator\n  Explanation: Dynamo does not know print\n  Hint: x"
ITEM = "Unsupported Tensor.item() call\n  Explanation: scalar outputs off"


def reason(text: str, line: int, graph_break: bool = True) -> SimpleNamespace:
    frame = traceback.FrameSummary("/home/me/model.py", line, "forward")
    return SimpleNamespace(reason=text, user_stack=[frame], graph_break=graph_break)


def fake_utils() -> SimpleNamespace:
    return SimpleNamespace(
        counters={
            "frames": Counter({"ok": 1, "total": 1}),
            "stats": Counter({"unique_graphs": 1}),
            "graph_break": Counter({PRINT: 1}),
        },
        graph_break_reasons=[reason(PRINT, 12)],
        compilation_time_metrics={"_compile.compile_inner": [1.5]},
    )


def test_nothing_without_dynamo_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, NAME, raising=False)
    assert compiled.snapshot() == compiled.Snapshot()
    assert compiled.since(compiled.snapshot()) is None
    assert NAME not in sys.modules  # not imported by asking


def test_the_captures_share_is_what_grew(monkeypatch: pytest.MonkeyPatch) -> None:
    utils = fake_utils()
    monkeypatch.setitem(sys.modules, NAME, utils)
    before = compiled.snapshot()
    # During the capture: two frames compiled in 0.25 s and 0.5 s, the .item() break met
    # twice at one line, the print once more, and a graph ended by a return (no break).
    utils.counters["frames"]["ok"] += 2
    utils.counters["stats"]["unique_graphs"] += 3
    utils.counters["graph_break"].update({ITEM: 2, PRINT: 1})
    utils.graph_break_reasons += [
        reason(ITEM, 30),
        reason(ITEM, 30),
        reason(PRINT, 12),
        reason("return_value", 40, graph_break=False),
    ]
    utils.compilation_time_metrics["_compile.compile_inner"] += [0.25, 0.5]
    got = compiled.since(before)
    assert got is not None
    assert (got.frames, got.graphs, got.compile_ns) == (2, 3, 750_000_000)
    assert got.graph_breaks == (
        GraphBreak(
            reason="Unsupported Tensor.item() call",
            explanation="scalar outputs off",
            file="/home/me/model.py",
            line=30,
            function="forward",
            count=2,
        ),
        GraphBreak(
            reason="Failed to trace builtin operator",
            explanation="Dynamo does not know print",
            file="/home/me/model.py",
            line=12,
            function="forward",
            count=1,
        ),
    )


def test_a_reset_during_the_capture_counts_all_after_it(monkeypatch: pytest.MonkeyPatch) -> None:
    utils = fake_utils()
    utils.counters["frames"]["ok"] = 2
    utils.graph_break_reasons.append(reason(PRINT, 12))
    monkeypatch.setitem(sys.modules, NAME, utils)
    before = compiled.snapshot()
    # torch._dynamo.reset() empties the tallies; then one frame compiles, breaking at .item().
    utils.counters = {
        "frames": Counter({"ok": 1}),
        "stats": Counter({"unique_graphs": 1}),
        "graph_break": Counter({ITEM: 1}),
    }
    utils.graph_break_reasons = [reason(ITEM, 30)]
    utils.compilation_time_metrics = {"_compile.compile_inner": [0.25]}
    got = compiled.since(before)
    assert got is not None
    assert (got.frames, got.graphs, got.compile_ns) == (1, 1, 250_000_000)
    assert [(b.reason, b.line, b.count) for b in got.graph_breaks] == [
        ("Unsupported Tensor.item() call", 30, 1)
    ]


def test_no_growth_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, NAME, fake_utils())
    assert compiled.since(compiled.snapshot()) is None
