"""The user's lines: frames classified by their path text, ops and kernels attributed to the
innermost user frame, notebook cells named by their execution count.

Truth comes from the tests' own sources: the line of each ``def`` they wrote, the shapes each
function multiplies, the execution count a cell ran as.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest
import torch

import gpuprofile
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.frames import (
    SourceLine,
    attribute_sources,
    cell_numbers,
    frame_title,
    is_library_path,
    is_user_frame,
)
from gpuprofile.widget.timeline import timeline_data
from helpers.source_module import import_source

MODEL = """\
import torch


def project(x, w):
    y = x @ w
    return y


def score(q, k):
    s = q @ k
    return s.softmax(-1)
"""


def load_model(folder: Path) -> ModuleType:
    return import_source(folder, "model.py", MODEL, "gp_frames_model")


def def_line(source: str, function: str) -> int:
    return next(
        i for i, text in enumerate(source.splitlines(), 1) if text.startswith(f"def {function}(")
    )


def line_of(source: str, text: str) -> int:
    (line,) = [i for i, row in enumerate(source.splitlines(), 1) if text in row]
    return line


def test_ops_and_kernels_attribute_to_the_users_function(tmp_path: Path) -> None:
    model = load_model(tmp_path)
    x, w, k = torch.randn(8, 16), torch.randn(16, 24), torch.randn(24, 8)
    export = tmp_path / "capture.json"
    with gpuprofile.profile(with_stack=True, export=export, interval=None) as p:
        for _ in range(2):
            model.score(model.project(x, w), k)
    ops = p.trace.ops
    sources = Analysis(p.trace).sources
    # Which line multiplied what: the test's own shapes and source text.
    expected = {
        "[[8, 16], [16, 24]]": SourceLine("model.py", line_of(MODEL, "x @ w"), "project"),
        "[[8, 24], [24, 8]]": SourceLine("model.py", line_of(MODEL, "q @ k"), "score"),
    }
    mm = ops.index[(ops["name"] == "aten::mm").to_numpy()]
    assert len(mm) == 4
    for row in mm:
        dims = json.dumps(json.loads(ops["input_dims"].iloc[row])[:2])
        line = sources.lines[sources.op_source[row]]
        want = expected[dims]
        # torch shortens the path to its sys.path entry (or keeps it whole): the file is ours.
        assert line.file.endswith("model.py") and line.file.rsplit("/", 1)[-1] == "model.py"
        assert (line.line, line.function, line.label) == (
            want.line,
            want.function,
            f"model.py:{want.line}",
        )
    # The raw JSON agrees: each mm's innermost enclosing user frame by time on its thread is
    # the function (named by its def line), and the innermost line range the line.
    events = json.loads(export.read_text())["traceEvents"]
    frames = [e for e in events if e.get("cat") == "python_function" and "model.py(" in e["name"]]
    ranges = [e for e in events if e.get("name", "").startswith("gpuprofile.line ")]

    def around(e: dict, among: list[dict]) -> list[dict]:
        inside = [
            f for f in among if f["ts"] <= e["ts"] and e["ts"] + e["dur"] <= f["ts"] + f["dur"]
        ]
        return sorted(inside, key=lambda f: f["ts"])

    for e in (e for e in events if e.get("name") == "aten::mm"):
        dims = json.dumps(e["args"]["Input Dims"][:2])
        (frame,) = around(e, frames)
        function = expected[dims].function
        assert frame["name"].endswith(f"({def_line(MODEL, function)}): {function}")
        assert around(e, ranges)[-1]["name"] == f"gpuprofile.line {expected[dims].line}"


def test_no_stacks_no_sources(tmp_path: Path) -> None:
    model = load_model(tmp_path)
    with gpuprofile.profile(interval=None) as p:
        model.project(torch.randn(4, 4), torch.randn(4, 4))
    sources = attribute_sources(Analysis(p.trace))
    assert sources.lines == ()
    assert (sources.op_source == -1).all() and len(sources.op_source) == len(p.trace.ops)


@pytest.mark.parametrize(
    ("name", "user"),
    [
        ("/home/me/proj/model.py(42): forward", True),
        ("model.py(42): forward", True),
        ("train/loop.py(7): step", True),
        ("/tmp/ipykernel_10077/3555353563.py(62): forward", True),
        ("ipykernel_10077/3555353563.py(62): forward", True),
        ("<ipython-input-5-1a2b3c4d5e6f>(3): f", True),
        ("torch/nn/modules/module.py(1751): _call_impl", False),
        ("/opt/conda/lib/python3.11/site-packages/torch/nn/functional.py(12): linear", False),
        ("/usr/lib/python3/dist-packages/numpy/core/numeric.py(1): f", False),
        ("/usr/lib/python3.11/asyncio/events.py(84): _run", False),
        ("asyncio/base_events.py(1922): _run_once", False),
        ("ipykernel/kernelbase.py(409): dispatch_shell", False),
        ("IPython/core/interactiveshell.py(3579): run_code", False),
        ("tornado/gen.py(786): run", False),
        ("traitlets/traitlets.py(1): f", False),
        ("zmq/sugar/socket.py(1): send", False),
        ("runpy.py(198): _run_module_as_main", False),
        ("threading.py(1045): _bootstrap_inner", False),
        ("contextlib.py(137): __enter__", False),
        ("<frozen runpy>(88): _run_code", False),
        ("<built-in method relu of Tensor object at 0x7f2bbed611d0>", False),
        ("nn.Module: Linear_0", False),
        ("/home/me/src/pytorch/torch/autograd/graph.py(1): f", False),
    ],
)
def test_frames_classified_by_path_text(name: str, user: bool) -> None:
    assert is_user_frame(name) is user


def test_library_paths() -> None:
    assert is_library_path("/x/lib/python3.12/json/decoder.py")
    assert not is_library_path("/srv/json_tools/decoder.py")


def test_cells_named_through_ipykernels_compiler(
    shell: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ipykernel import compiler as compiler_module

    compiler = compiler_module.XCachingCompiler()
    monkeypatch.setattr(shell, "compile", compiler)
    run_cell = shell.run_cell  # type: ignore[attr-defined]
    count = shell.execution_count  # type: ignore[attr-defined]
    assert run_cell(
        "import torch\n\ndef mul(a, b):\n    return a @ b\n", store_history=True
    ).success
    outcome = run_cell(
        "import gpuprofile\n"
        "with gpuprofile.profile(with_stack=True, interval=None) as _frames_p:\n"
        "    mul(torch.randn(4, 4), torch.randn(4, 4))\n",
        store_history=True,
    )
    assert outcome.success, outcome.error_in_exec
    p = shell.user_ns["_frames_p"]  # type: ignore[attr-defined]
    # ipykernel's file for the first cell: the compiler's name for its code.
    cell_file = compiler.get_code_name("import torch\n\ndef mul(a, b):\n    return a @ b\n", "", 0)
    assert p.trace.meta.cells.get(cell_file) == count
    sources = Analysis(p.trace).sources
    ops = p.trace.ops
    (mm,) = ops.index[(ops["name"] == "aten::mm").to_numpy()]
    line = sources.lines[sources.op_source[mm]]
    # The op's own line (`return a @ b`); its frame is named by the def line.
    assert line == SourceLine(f"cell [{count}]", 4, "mul")
    assert line.label == f"cell [{count}] line 4"
    frame = next(n for n in ops["name"].astype(str) if n.endswith("): mul"))
    assert frame_title(frame, cell_numbers({cell_file: count})) == f"cell [{count}] line 3: mul"
    assert frame_title(frame, {}) == "cell line 3: mul"
    # The timeline's lanes keep only the user's frames, cells named by number; IPython's go.
    assert any(n.startswith("IPython/") for n in ops["name"].astype(str))
    data = timeline_data(p.trace)
    rows = data.source[data.kind == 0]
    # The capture's own thread (the one that ran the matmul): torch records every thread's
    # stack, and another thread of this process (a test's leftover server) is user code too.
    thread = ops["tid"].to_numpy()[mm]
    is_frame = ((ops["category"] == "python_function") & (ops["tid"] == thread)).to_numpy()[rows]
    titles = [data.names[i] for i in data.name[data.kind == 0][is_frame].tolist()]
    assert f"cell [{count}] line 3: mul" in titles
    # (This test's own frame encloses the shell: it is user code too.)
    assert all(t.startswith("cell [") or "test_frames.py(" in t for t in titles), titles
