"""An op's line is the line of the user's code it ran from, not the ``def`` line torch's frame
names carry: the capture records a range per line of the user's code (capture/line_ranges.py),
the importer gives the ops and calls directly inside one its line, and the sources read the
call (or the op) just below the user's frame.

Truth comes from the tests' own source text (the line each call is written on), the frame's own
line number, and the raw JSON of the file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch

import gpuprofile
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.frames import SourceLine
from gpuprofile.importers.kineto import load_kineto
from gpuprofile.report.chrome_trace import write_chrome_trace
from gpuprofile.trace.model import Trace
from helpers.kineto_docs import cpu_op, document, python_function, write
from helpers.source_module import import_source

BLOCK = """\
import torch


def block(x, w):
    y = torch.mm(x, w)
    z = y + 1
    return z.relu()
"""


def line_of(source: str, text: str) -> int:
    (line,) = [i for i, row in enumerate(source.splitlines(), 1) if text in row]
    return line


def load_block(folder: Path) -> ModuleType:
    return import_source(folder, "block_model.py", BLOCK, "gp_call_lines_block")


def op_line(trace: Trace, name: str) -> SourceLine:
    ops = trace.ops
    (row,) = ops.index[(ops["name"] == name).to_numpy()]
    sources = Analysis(trace).sources
    return sources.lines[sources.op_source[row]]


def test_ops_read_the_line_they_ran_from(tmp_path: Path) -> None:
    block = load_block(tmp_path)
    export = tmp_path / "capture.json"
    with gpuprofile.profile(with_stack=True, export=export, interval=None) as p:
        block.block(torch.randn(4, 8), torch.randn(8, 4))
    mm, relu = line_of(BLOCK, "torch.mm("), line_of(BLOCK, ".relu()")
    add = line_of(BLOCK, "y + 1")
    with gpuprofile.profile(with_stack=True, interval=None) as unsaved:
        block.block(torch.randn(4, 8), torch.randn(8, 4))
    loaded = gpuprofile.load(export)
    rewritten = tmp_path / "rewritten.json"
    write_chrome_trace(p.trace, rewritten)
    # As captured with --export (the lines written into the file), read back from that file,
    # captured without (the lines put in the trace, no file kept), and written out as a
    # Chrome trace by gpuprofile then read again.
    traces = (p.trace, loaded.trace, unsaved.trace, gpuprofile.load(rewritten).trace)
    for trace in traces:
        # torch writes the path whole or relative to its sys.path entry: the file is ours.
        found = {op: op_line(trace, op) for op in ("aten::mm", "aten::relu", "aten::add")}
        assert {op: (Path(s.file).name, s.line, s.function) for op, s in found.items()} == {
            "aten::mm": ("block_model.py", mm, "block"),
            "aten::relu": ("block_model.py", relu, "block"),
            # `y + 1` makes no Python call torch records: the capture's line ranges.
            "aten::add": ("block_model.py", add, "block"),
        }
        assert found["aten::relu"].label == f"block_model.py:{relu}"
    # The raw file keeps the capture's line ranges (a reader of the file sees each line's
    # span): the built-in calls and the operator torch recorded lie in their line's range.
    events = json.loads(export.read_text())["traceEvents"]
    ranges = [e for e in events if e.get("name", "").startswith("gpuprofile.line ")]

    def range_around(e: dict) -> str:
        inside = [
            r
            for r in ranges
            if r["tid"] == e["tid"]
            and r["ts"] <= e["ts"]
            and e["ts"] + e["dur"] <= r["ts"] + r["dur"]
        ]
        return max(inside, key=lambda r: r["ts"])["name"]

    placed = {
        e["name"].split(" of ")[0]: range_around(e)
        for e in events
        if e.get("name", "").startswith(
            ("<built-in method mm", "<built-in method relu", "aten::add")
        )
    }
    assert placed == {
        "<built-in method mm": f"gpuprofile.line {mm}",
        "<built-in method relu": f"gpuprofile.line {relu}",
        "aten::add": f"gpuprofile.line {add}",
    }
    # The trace read from it holds none: they became the ops' lines.
    for trace in traces:
        assert not trace.ops["name"].astype(str).str.startswith("gpuprofile.line ").any()


INLINE = """\
import torch


def chain(x, w, mask):
    for _ in range(2):
        y = x @ w
        y = y * 2 + 1
        z = y[mask]
    return z
"""


def test_inline_operators_read_their_own_line(tmp_path: Path) -> None:
    """Operators (``@``, ``*``, ``+``, indexing) make no Python call: their lines come from the
    capture's line ranges, in a called function and in the ``with`` block's own frame, which
    was running before the capture began."""
    chain = import_source(tmp_path, "inline_model.py", INLINE, "gp_call_lines_inline").chain
    x, w = torch.randn(4, 4), torch.randn(4, 4)
    mask = torch.tensor([True, False, True, True])
    with gpuprofile.profile(with_stack=True, interval=None) as p:
        chain(x, w, mask)
        here, block_line = x.sin(), sys._getframe().f_lineno  # the block's own line
    del here
    # Nothing of the capture's tracing is left on this thread or this (still running) frame.
    assert sys.gettrace() is None and sys._getframe().f_trace is None
    trace = p.trace
    sources = Analysis(trace).sources
    ops = trace.ops

    def lines_of(name: str) -> set[tuple[str, int]]:
        rows = ops.index[(ops["name"] == name).to_numpy()]
        found = [sources.lines[sources.op_source[r]] for r in rows]
        return {(Path(s.file).name, s.line) for s in found}

    assert lines_of("aten::matmul") == {("inline_model.py", line_of(INLINE, "x @ w"))}
    scaled = line_of(INLINE, "y * 2 + 1")
    assert lines_of("aten::mul") == lines_of("aten::add") == {("inline_model.py", scaled)}
    assert lines_of("aten::index") == {("inline_model.py", line_of(INLINE, "y[mask]"))}
    assert lines_of("aten::sin") == {("test_call_lines.py", block_line)}
    # Four iterations of three lines: the matmuls are two calls, each on its own line.
    assert len(ops.index[(ops["name"] == "aten::matmul").to_numpy()]) == 2


def test_a_debuggers_trace_function_is_left_in_place(tmp_path: Path) -> None:
    """A debugger traces with sys.settrace: the capture keeps it and records no line ranges."""
    block = load_block(tmp_path)
    seen: list[str] = []

    def debugger(frame: object, event: str, arg: object) -> None:
        seen.append(event)

    sys.settrace(debugger)
    try:
        with gpuprofile.profile(with_stack=True, interval=None) as p:
            block.block(torch.randn(4, 8), torch.randn(8, 4))
        still = sys.gettrace()
    finally:
        sys.settrace(None)
    assert still is debugger and "call" in seen
    add = op_line(p.trace, "aten::add")
    assert add.line == line_of(BLOCK, "def block(")  # no line ranges: the def line, as before


def test_a_torch_without_fast_ranges_keeps_def_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``_RecordFunctionFast`` is torch's private API: where it is missing the capture goes on,
    and ops stand on their frames' def lines, as a trace from another profiler does."""
    from gpuprofile.capture import line_ranges

    monkeypatch.setattr(line_ranges, "_Range", None)
    block = load_block(tmp_path)
    with gpuprofile.profile(with_stack=True, interval=None) as p:
        block.block(torch.randn(4, 8), torch.randn(8, 4))
    def_line = line_of(BLOCK, "def block(")
    assert {op_line(p.trace, op).line for op in ("aten::mm", "aten::add")} == {def_line}
    assert sys.gettrace() is None


def test_each_steps_window_keeps_its_lines(tmp_path: Path, scratch: Path) -> None:
    block = load_block(tmp_path)
    export = tmp_path / "steps.json"
    with gpuprofile.profile(with_stack=True, steps=(0, 1, 2), export=export, interval=None) as p:
        for _ in range(4):  # warmup, recorded, warmup, recorded (WARMUP is 1)
            block.block(torch.randn(4, 8), torch.randn(8, 4))
            gpuprofile.step()
    mm = line_of(BLOCK, "torch.mm(")
    for trace in (p.trace, gpuprofile.load(export).trace):  # the windows joined, and the file
        sources = Analysis(trace).sources
        rows = trace.ops.index[(trace.ops["name"] == "aten::mm").to_numpy()]
        assert len(rows) == 2  # one a window
        assert {sources.lines[sources.op_source[row]].line for row in rows} == {mm}


def test_a_cells_ops_read_their_line_in_the_cell(
    shell: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ipykernel import compiler as compiler_module

    monkeypatch.setattr(shell, "compile", compiler_module.XCachingCompiler())
    run_cell = shell.run_cell  # type: ignore[attr-defined]
    cell = "import torch\n\ndef mul(a, b):\n    c = torch.mm(a, b)\n    return c.relu()\n"
    count = shell.execution_count  # type: ignore[attr-defined]
    assert run_cell(cell, store_history=True).success
    outcome = run_cell(
        "import gpuprofile\n"
        "with gpuprofile.profile(with_stack=True, interval=None) as _lines_p:\n"
        "    mul(torch.randn(4, 4), torch.randn(4, 4))\n",
        store_history=True,
    )
    assert outcome.success, outcome.error_in_exec
    trace = shell.user_ns["_lines_p"].trace  # type: ignore[attr-defined]
    mm, relu = line_of(cell, "torch.mm("), line_of(cell, ".relu()")
    assert op_line(trace, "aten::mm").label == f"cell [{count}] line {mm}"
    assert op_line(trace, "aten::relu") == SourceLine(f"cell [{count}]", relu, "mul")


def test_line_ranges_become_the_lines_of_the_ops_inside(tmp_path: Path) -> None:
    """A hand-written file: a frame, two line ranges in it, ops in them; one op carries its own
    "Caller line" (as gpuprofile's Chrome export writes it), which it keeps."""
    events = [
        python_function("model.py(3): f", 10, 100),
        cpu_op("gpuprofile.line 4", 11, 40),
        cpu_op("aten::mm", 12, 10),
        cpu_op("aten::add", 30, 5),
        cpu_op("gpuprofile.line 6", 60, 40),
        python_function("<built-in method relu>", 61, 20),
        cpu_op("aten::relu", 62, 10),
        cpu_op("aten::mul", 85, 5, **{"Caller line": 9}),
    ]
    trace = load_kineto(write(tmp_path / "t.json", document(events)))
    ops = trace.ops
    lines = dict(zip(ops["name"].astype(str), ops["caller_line"].tolist(), strict=True))
    assert lines == {
        "model.py(3): f": -1,
        "aten::mm": 4,
        "aten::add": 4,
        "<built-in method relu>": 6,  # a call made on line 6
        "aten::relu": -1,  # inside the call, not directly in the range
        "aten::mul": 9,
    }
    # Without the ranges, the ops nest under the frame (and relu under its call) again.
    parent = dict(zip(ops["id"].tolist(), ops["name"].astype(str), strict=True))
    parents = {
        n: parent.get(p)
        for n, p in zip(ops["name"].astype(str), ops["parent"].tolist(), strict=True)
    }
    assert parents["aten::mm"] == parents["aten::mul"] == "model.py(3): f"
    assert parents["aten::relu"] == "<built-in method relu>"
    assert ops["depth"].tolist() == [0, 1, 1, 1, 2, 1]
