"""Torch's NVTX ranges in an Nsight Systems export, on a small nsys-like SQLite written here:
emit_nvtx op ranges (name, sequence number, sizes), pyprof/DLProf markers (readable op names,
the source line, module calls from funcStack), a marker that does not parse. Every expected
name, line, shape and span comes from the strings and times this file writes; counts are
checked against sqlite3 on the file."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from gpuprofile.importers.nsys import load_nsys
from gpuprofile.importers.nsys_nvtx import FOLDED, UNREADABLE
from gpuprofile.trace.model import NO_ID

PID, TID, BWD_TID = 4242, 4250, 4251
LIB = "/usr/lib/python3.10/site-packages/torch/nn/modules"
NET = "/<module>/Net::_call_impl/Net::forward"


def _global(pid: int, tid: int = 0) -> int:
    return (1 << 48) | (pid << 24) | tid


def _trace_marker(frames: list[str], stack: str) -> str:
    return str({"traceMarker": frames, "funcStack": stack})


def _arg_marker(op: str, shapes: list[tuple[int, ...]]) -> str:
    args = [{"name": "", "type": "tensor", "shape": s, "dtype": "float32"} for s in shapes]
    args.append({"name": "bias", "type": "NoneType", "value": None})
    return str({"mod": "torch.nn.functional", "op": op, "args": args})


# (start, end, tid, text): what the test writes; the expectations below read these.
A_TRACE = _trace_marker(
    ["/home/u/train.py:30", f"{LIB}/module.py:1501", "/home/u/model.py:12",
     f"{LIB}/module.py:1501", f"{LIB}/linear.py:114"],
    f"{NET}/Block::_call_impl/Block::forward/Linear::_call_impl/Linear::forward/linear",
)  # fmt: skip
B_TRACE = _trace_marker(
    ["/home/u/train.py:30", f"{LIB}/module.py:1501", "/home/u/model.py:13"],
    f"{NET}/Block::_call_impl/Block::forward/relu",
)
C_TRACE = _trace_marker(
    ["/home/u/train.py:30", f"{LIB}/module.py:1501", "/home/u/model.py:14",
     f"{LIB}/module.py:1501", f"{LIB}/linear.py:114"],
    f"{NET}/Block::_call_impl(2)/Block::forward/Linear::_call_impl/Linear::forward/linear",
)  # fmt: skip
MALFORMED = "{'traceMarker': ['/home/u/model.py:40', "
RANGES = [
    (50, 1000, TID, "## step ##, op_id = 1"),
    (100, 400, TID, A_TRACE),
    (105, 395, TID, str({"mod": "Linear", "strRepr": "in_features=16, out_features=32"})),
    (110, 390, TID, _arg_marker("linear", [(8, 16), (32, 16)])),
    (120, 380, TID, "aten::linear, seq = 3, op_id = 10, sizes = [[8, 16], [32, 16], []], "
     "input_op_ids = [(0, 0)]"),
    (130, 370, TID, "aten::addmm, seq = 3, op_id = 11, sizes = [[32], [8, 16], [16, 32], [], []]"),
    (500, 600, TID, B_TRACE),
    (510, 590, TID, str({"mod": "torch", "op": "relu", "args": []})),
    (520, 580, TID, "aten::relu, seq = 4, op_id = 12, sizes = [[8, 32]]"),
    (700, 900, TID, C_TRACE),
    (710, 890, TID, _arg_marker("linear", [(8, 32), (32, 32)])),
    (720, 880, TID, "aten::linear, seq = 5, op_id = 13, sizes = [[8, 32], [32, 32], [32]]"),
    (950, 960, TID, MALFORMED),
    (1100, 1300, BWD_TID, "autograd::engine::evaluate_function: AddmmBackward0, seq = 3, "
     "op_id = 20"),
    (1110, 1290, BWD_TID, "AddmmBackward0, seq = 3, op_id = 21, sizes = [[8, 32]]"),
    (1120, 1280, BWD_TID, "aten::mm, seq = 0, op_id = 22, sizes = [[8, 32], [32, 16]]"),
]  # fmt: skip
LAUNCH = (140, 160, 7)  # cudaLaunchKernel inside aten::addmm, correlation id 7
KERNEL = (200, 300, 7)


def build(path: Path) -> Path:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT)")
    db.execute("INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SCHEMA_VERSION', '3.13.2')")
    db.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)")
    db.executemany(
        "INSERT INTO StringIds VALUES (?, ?)",
        [(1, "cudaLaunchKernel_v7000"), (2, "void gemm<float>(float const*, float*, int)")],
    )
    db.execute(
        "CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT "
        "NULL, text TEXT, globalTid INTEGER, textId INTEGER)"
    )
    db.executemany(
        "INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, ?, ?, NULL)",
        [(s, e, text, _global(PID, tid)) for s, e, tid, text in RANGES],
    )
    db.execute(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT "
        "NULL, eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId "
        "INTEGER NOT NULL)"
    )
    db.execute(
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 0, ?, ?, 1)",
        (LAUNCH[0], LAUNCH[1], _global(PID, TID), LAUNCH[2]),
    )
    db.execute(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT "
        "NULL, deviceId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER, "
        "demangledName INTEGER)"
    )
    db.execute(
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 7, ?, ?, 2)",
        (KERNEL[0], KERNEL[1], KERNEL[2], _global(PID)),
    )
    db.commit()
    db.close()
    return path


@pytest.fixture
def loaded(tmp_path: Path) -> tuple[Path, object]:
    path = build(tmp_path / "torch_nvtx.sqlite")
    return path, load_nsys(path)


def _rows(trace: object) -> list[dict[str, object]]:
    ops = trace.ops  # type: ignore[attr-defined]
    t0 = min(s for s, *_ in RANGES)  # the trace's own start: its earliest event
    out = ops.assign(start=ops["start_ns"] + t0, end=ops["start_ns"] + ops["dur_ns"] + t0)
    return out.to_dict("records")  # type: ignore[no-any-return]


def _one(rows: list[dict[str, object]], name: str, start: int) -> dict[str, object]:
    found = [r for r in rows if r["name"] == name and r["start"] == start]
    assert len(found) == 1, (name, start, [r["name"] for r in rows])
    return found[0]


def test_emit_nvtx_ranges_are_ops_with_sequence_and_sizes(loaded: tuple[Path, object]) -> None:
    _, trace = loaded
    rows = _rows(trace)
    for start, end, _tid, text in RANGES:
        if not text.startswith(("aten::", "AddmmBackward0", "autograd::")):
            continue
        name = text.split(", ")[0]
        seq = re.search(r"seq = (\d+)", text)
        sizes = re.search(r"sizes = (\[.*?\])(?:, input_op_ids|$)", text)
        row = _one(rows, name, start)
        assert row["end"] == end
        assert row["category"] == "cpu_op"
        assert row["sequence"] == (int(seq[1]) if seq else NO_ID)
        if sizes:
            assert json.loads(str(row["input_dims"])) == json.loads(sizes[1])
        else:
            assert row["input_dims"] is None


def test_a_record_function_range_keeps_its_name_without_the_op_id(
    loaded: tuple[Path, object],
) -> None:
    row = _one(_rows(loaded[1]), "## step ##", 50)
    assert row["category"] == "user_annotation"


def test_pyprof_markers_read_as_frames_and_readable_ops(loaded: tuple[Path, object]) -> None:
    path, trace = loaded
    rows = _rows(trace)
    assert not [r for r in rows if str(r["name"]).startswith("{") and r["start"] != 950]
    # The innermost frame outside site-packages, as the test wrote the stacks; the function is
    # known where that frame is the caller (B: relu called from Block.forward).
    assert _one(rows, "/home/u/model.py(12): ", 100)["category"] == "python_function"
    assert _one(rows, "/home/u/model.py(13): forward", 500)["category"] == "python_function"
    assert _one(rows, "/home/u/model.py(14): ", 700)["end"] == 900
    linear = _one(rows, "torch.nn.functional.linear", 110)
    assert json.loads(str(linear["input_dims"])) == [[8, 16], [32, 16], []]
    assert _one(rows, "torch.relu", 510)["input_dims"] == "[]"
    # The frame encloses the op (nesting by time on the thread).
    frame = _one(rows, "/home/u/model.py(12): ", 100)
    assert linear["parent"] == frame["id"]
    with sqlite3.connect(path) as db:
        (folded,) = db.execute(
            "SELECT count(*) FROM NVTX_EVENTS WHERE text LIKE '{''mod''%''strRepr''%'"
        ).fetchone()
    skipped = trace.meta.ranks[0].skipped  # type: ignore[attr-defined]
    assert folded == 1 and skipped[FOLDED] == folded
    assert not [r for r in rows if r["start"] == 105]


def test_a_malformed_marker_keeps_its_text_and_is_counted(loaded: tuple[Path, object]) -> None:
    _, trace = loaded
    row = _one(_rows(trace), MALFORMED, 950)
    assert row["category"] == "user_annotation"
    assert trace.meta.ranks[0].skipped[UNREADABLE] == 1  # type: ignore[attr-defined]


def test_func_stacks_give_nested_module_calls(loaded: tuple[Path, object]) -> None:
    path, trace = loaded
    rows = _rows(trace)
    calls = {
        (r["name"], r["start"], r["end"]) for r in rows if str(r["name"]).startswith("nn.Module: ")
    }
    # From the funcStacks written above: A and B run in the first Block (call site 1), C in
    # the second (DLProf's "(2)"); each Linear call spans its one frame.
    assert calls == {
        ("nn.Module: Net (Net)", 100, 900),
        ("nn.Module: Net.Block (Block)", 100, 600),
        ("nn.Module: Net.Block.Linear (Linear)", 100, 400),
        ("nn.Module: Net.Block_2 (Block)", 700, 900),
        ("nn.Module: Net.Block_2.Linear (Linear)", 700, 900),
    }
    by_id = {r["id"]: r for r in rows}

    def chain(row: dict[str, object]) -> list[str]:
        out = []
        while row["parent"] != NO_ID:
            row = by_id[row["parent"]]
            out.append(str(row["name"]))
        return out

    addmm = _one(rows, "aten::addmm", 130)
    assert [n for n in chain(addmm) if n.startswith("nn.Module")] == [
        "nn.Module: Net.Block.Linear (Linear)",
        "nn.Module: Net.Block (Block)",
        "nn.Module: Net (Net)",
    ]
    # Equal spans: the module call is the parent of its one call's frame.
    frame = _one(rows, "/home/u/model.py(14): ", 700)
    assert by_id[frame["parent"]]["name"] == "nn.Module: Net.Block_2.Linear (Linear)"
    with sqlite3.connect(path) as db:
        (ranges,) = db.execute("SELECT count(*) FROM NVTX_EVENTS").fetchone()
    assert len(rows) == ranges - 1 + len(calls)  # one module marker folded


def test_a_kernel_is_launched_by_the_emit_nvtx_op_around_its_launch(
    loaded: tuple[Path, object],
) -> None:
    _, trace = loaded
    rows = _rows(trace)
    addmm = _one(rows, "aten::addmm", 130)
    kernels = trace.kernels  # type: ignore[attr-defined]
    assert kernels["op_id"].tolist() == [addmm["id"]]


def test_plain_nvtx_text_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "plain.sqlite"
    build(path)
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM NVTX_EVENTS")
        db.executemany(
            "INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, ?, ?, NULL)",
            [
                (10, 90, "epoch 1, batch 2", _global(PID, TID)),
                (20, 80, "{not a marker}", _global(PID, TID)),
                (30, 70, "MPI_Send", _global(PID, TID)),
            ],
        )
    trace = load_nsys(path)
    assert trace.ops["name"].tolist() == ["epoch 1, batch 2", "{not a marker}", "MPI_Send"]
    assert set(trace.ops["category"]) == {"user_annotation"}
    assert (trace.ops["sequence"] == NO_ID).all()
    assert UNREADABLE not in trace.meta.ranks[0].skipped
    assert (trace.kernels["op_id"] == NO_ID).all()


def test_autonvtx_module_ranges_are_module_calls(tmp_path: Path) -> None:
    path = tmp_path / "autonvtx.sqlite"
    build(path)
    # autonvtx's names: the root's class, then "{attribute}: {Class}" per child called.
    written = [
        (10, 900, "Transformer"),
        (20, 400, "0: Layer"),
        (30, 200, "attn: Attention"),
        (210, 390, "mlp: MLP"),
        (410, 880, "1: Layer"),
        (420, 870, "mlp: MLP"),
        (950, 990, "Epoch: Train"),  # no class-named range around it: the user's text
    ]
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM NVTX_EVENTS")
        db.executemany(
            "INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, ?, ?, NULL)",
            [(s, e, text, _global(PID, TID)) for s, e, text in written],
        )
    trace = load_nsys(path)
    t0 = written[0][0]
    got = {
        (name, start + t0)
        for name, start in zip(trace.ops["name"], trace.ops["start_ns"], strict=True)
    }
    assert got == {
        ("nn.Module: Transformer (Transformer)", 10),
        ("nn.Module: Transformer.0 (Layer)", 20),
        ("nn.Module: Transformer.0.attn (Attention)", 30),
        ("nn.Module: Transformer.0.mlp (MLP)", 210),
        ("nn.Module: Transformer.1 (Layer)", 410),
        ("nn.Module: Transformer.1.mlp (MLP)", 420),
        ("Epoch: Train", 950),
    }


def test_backward_and_kernels_find_their_module_through_the_sequence_number(
    loaded: tuple[Path, object],
) -> None:
    from gpuprofile.analyses.context import Analysis
    from gpuprofile.analyses.modules import PHASES

    _, trace = loaded
    modules = Analysis(trace).modules  # type: ignore[arg-type]
    rows = _rows(trace)
    position = {r["id"]: i for i, r in enumerate(rows)}
    # The engine op carries seq = 3, as aten::linear at 120 does, inside Net.Block.Linear's call.
    for name, start in (("autograd::engine::evaluate_function: AddmmBackward0", 1100),
                        ("aten::mm", 1120)):  # fmt: skip
        at = position[_one(rows, name, start)["id"]]
        assert modules.paths[modules.op_module[at]] == "Net.Block.Linear"
        assert PHASES[modules.op_phase[at]] == "backward"
    (kernel_module,) = modules.kernel_module
    assert modules.paths[kernel_module] == "Net.Block.Linear"


def test_a_stats_csv_reads_torch_ranges_as_the_sqlite_does(tmp_path: Path) -> None:
    path = tmp_path / "nvtx_pushpop_trace.csv"
    rows = [r for r in RANGES if r[2] == TID]
    lines = ["Start (ns),End (ns),Name,PID,TID"]
    lines += [
        f'{s},{e},"{text.replace(chr(34), chr(34) * 2)}",{PID},{TID}' for s, e, _, text in rows
    ]
    path.write_text("\n".join(lines) + "\n")
    trace = load_nsys(path)
    names = set(trace.ops["name"].astype(str))
    assert {"aten::addmm", "torch.nn.functional.linear", "/home/u/model.py(13): forward"} <= names
    assert "nn.Module: Net.Block_2.Linear (Linear)" in names
    addmm = trace.ops[trace.ops["name"] == "aten::addmm"].iloc[0]
    assert (addmm["category"], addmm["sequence"]) == ("cpu_op", 3)
