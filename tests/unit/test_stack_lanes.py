"""The --stack thread lanes start at the user's code: library frames (pytest's, torch's,
gpuprofile's, the standard library's) are left out of the timeline, ops and user frames stay.

Truth from the raw exported JSON, with the user's frames known to the test: its own file and
the model file it wrote."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import torch

import gpuprofile
from gpuprofile.widget.requests import Source, handle
from gpuprofile.widget.timeline import timeline_data
from helpers.source_module import import_source

MODEL = "def run(x, w):\n    return (x @ w).relu()\n"
OUR_FILES = ("test_stack_lanes.py", "lanes_model.py")


def is_ours(name: str) -> bool:
    """A frame of this test's own files (the only user code in this capture)."""
    path = name.rsplit("(", 1)[0]
    return "): " in name and path.rsplit("/", 1)[-1] in OUR_FILES


def test_stack_lanes_start_at_the_users_code(tmp_path: Path) -> None:
    model = import_source(tmp_path, "lanes_model.py", MODEL, "lanes_model")
    export = tmp_path / "capture.json"
    with gpuprofile.profile(with_stack=True, export=export, interval=None) as p:
        model.run(torch.randn(8, 8), torch.randn(8, 8))
    events = json.loads(export.read_text())["traceEvents"]
    # The capture's line ranges (cpu_op, named gpuprofile.line N) are read as lines, not ops.
    raw_ops = [
        e
        for e in events
        if e.get("ph") == "X"
        and e.get("cat") == "cpu_op"
        and not e["name"].startswith("gpuprofile.line ")
    ]
    # torch records every thread's stack: another thread of this process (a test's leftover
    # server thread) is user code too, but not this test's. The capture's thread ran the ops.
    (thread,) = {e["tid"] for e in raw_ops if e["name"] == "aten::matmul"}
    raw_frames = [
        e
        for e in events
        if e.get("ph") == "X" and e.get("cat") == "python_function" and e["tid"] == thread
    ]
    # The capture does have library frames around and under the user's (else nothing to test).
    assert any(not is_ours(e["name"]) for e in raw_frames)
    assert any(e["name"].startswith("torch/") or "/torch/" in e["name"] for e in raw_frames)

    data = timeline_data(p.trace)
    ops = p.trace.ops
    shown = data.kind == 0
    rows = data.source[shown]
    category = ops["category"].to_numpy()[rows]
    names = ops["name"].astype(str).to_numpy()[rows]
    depth = data.row[shown]
    on_thread = ops["tid"].to_numpy()[rows] == thread
    kept = Counter(names[(category == "python_function") & on_thread].tolist())
    # Exactly the user's frames stay, each as often as the raw JSON has it.
    assert kept == Counter(e["name"] for e in raw_frames if is_ours(e["name"]))
    # Every op stays.
    assert Counter(names[category == "cpu_op"].tolist()) == Counter(e["name"] for e in raw_ops)
    # The lane starts at the user's code: the outermost user frame (this test) is at row 0,
    # and the model's frame sits right under it.
    frames = category == "python_function"
    test_frame = frames & (np.char.find(names.astype(str), "test_stack_lanes.py(") >= 0)
    assert test_frame.any() and (depth[test_frame] == 0).all()
    model_frame = frames & (np.char.find(names.astype(str), "lanes_model.py(") >= 0)
    assert model_frame.sum() == 1 and (depth[model_frame] == 1).all()
    # The ops under the model's frame are right below it, torch's frames between them gone.
    mm = names == "aten::matmul"
    assert (depth[mm] == 2).all()


def test_event_details_name_the_line(tmp_path: Path) -> None:
    model = import_source(tmp_path, "lanes_model.py", MODEL, "lanes_model_d")
    with gpuprofile.profile(with_stack=True, interval=None) as p:
        model.run(torch.randn(8, 8), torch.randn(8, 8))
    source = Source(data=timeline_data(p.trace), trace=p.trace)
    data = source.data
    (gid,) = np.flatnonzero((data.kind == 0) & (np.array(data.names)[data.name] == "aten::mm"))
    reply, _ = handle(source, {"request": 1, "type": "details", "id": int(gid)})
    fields = dict(map(tuple, reply["details"]["fields"]))
    # The matmul is MODEL's line 2 (``return (x @ w).relu()``), not the def line torch names
    # the frame by: an operator's line comes from the capture's line ranges.
    assert fields["line"] == "lanes_model.py:2"
