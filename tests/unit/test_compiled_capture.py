"""torch.compile (Inductor, CPU) under a real capture: dynamo's counts and break reasons in the
trace's meta, the graph-break hint, compile time against run time, and the kernels of the
compiled regions in the module that called them. One compile for the whole module: it takes
seconds on two cores."""

from __future__ import annotations

import inspect
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import gpuprofile
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.detectors import run_detectors
from gpuprofile.report.build import plain_report

CALL = "nn.Module: Net (Net)"  # the capture contract's name for the root module's call


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(32, 32)
        self.b = torch.nn.Linear(32, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.a(x)) * 2 + 1
        print("a deliberate graph break")
        return torch.tanh(self.b(y)).sum()


def break_line() -> int:
    """The line of the print in Net.forward, read from this file's source."""
    lines, first = inspect.getsourcelines(Net.forward)
    return first + next(i for i, text in enumerate(lines) if "print(" in text)


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    import torch._dynamo
    import torch._dynamo.utils
    import torch._inductor.config

    # Inductor's code cache in the test's own folder, not the user's /tmp/torchinductor_<user>.
    cache = pytest.MonkeyPatch()
    cache.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path_factory.mktemp("inductor")))
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = torch.compile(Net())
    x = torch.randn(8, 32)
    counters = torch._dynamo.utils.counters
    breaks_before = Counter(counters["graph_break"])
    frames_before = counters["frames"]["ok"]
    export = tmp_path_factory.mktemp("compiled") / "capture.json"
    # Inductor's CPU kernels are profiler events only when generated with this flag.
    with (
        torch._inductor.config.patch({"cpp.enable_kernel_profile": True}),
        gpuprofile.profile(export=export) as p,
    ):
        for _ in range(3):  # the first call compiles, the others run
            with torch.profiler.record_function(CALL):
                model(x)
    yield {
        "profile": p,
        "events": json.loads(Path(export).read_text())["traceEvents"],
        "breaks": Counter(counters["graph_break"]) - breaks_before,
        "frames": counters["frames"]["ok"] - frames_before,
    }
    torch._dynamo.reset()
    cache.undo()


def test_meta_holds_dynamos_breaks_with_the_users_line(captured: dict[str, Any]) -> None:
    compiled = captured["profile"].trace.meta.compiled
    assert compiled is not None
    expected = captured["breaks"]
    assert len(expected) == 1  # the one print
    [(text, times)] = expected.items()
    [one] = compiled.graph_breaks
    assert one.reason == text.strip().splitlines()[0].strip()
    assert one.count == times
    assert Path(one.file) == Path(__file__)
    assert one.line == break_line()
    assert one.function == "forward"
    # forward and the frame resumed after the print at least (dynamo counts others it enters)
    assert compiled.frames == captured["frames"] >= 2
    assert compiled.compile_ns > 0


def test_graph_break_hint_says_the_count_reason_and_line(captured: dict[str, Any]) -> None:
    analysis = Analysis(captured["profile"].trace)
    [hint] = [h for h in run_detectors(analysis) if h.kind == "graph-break"]
    [text] = captured["breaks"]
    assert hint.numbers["graph_breaks"] == len(captured["breaks"])
    assert text.strip().splitlines()[0].strip() in hint.explanation
    assert f"test_compiled_capture.py:{break_line()}" in hint.explanation
    assert [(s.line, s.function) for s in hint.sources] == [(break_line(), "forward")]
    # Met once per call: three calls, three regions resumed after the print.
    regions = [e for e in captured["events"] if e["name"] == "Torch-Compiled Region: 1/0"]
    assert hint.numbers["times_met"] == len(regions) == 3
    report = plain_report(analysis)
    [said] = [h for h in report["hints"] if h["kind"] == "graph-break"]
    assert said["sources"] == [{"file": __file__, "line": break_line(), "function": "forward"}]


def test_compile_time_and_run_time_from_the_raw_trace(captured: dict[str, Any]) -> None:
    events = [e for e in captured["events"] if e.get("ph") == "X"]
    analysis = Analysis(captured["profile"].trace)
    compiled = analysis.compiled
    # Compiling: the union of dynamo's timed ranges, by hand.
    spans = sorted(
        (round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000))
        for e in events
        if e["name"].endswith(" (dynamo_timed)") or e["name"] == "entire_frame_compile"
    )
    union, reach = 0, None
    for start, end in spans:
        if reach is None or start > reach:
            union += end - start
            reach = end
        elif end > reach:
            union += end - reach
            reach = end
    assert abs(compiled.compile_ns[0] - union) <= 2 * len(spans)
    # Every region call of the raw trace is a region. With the capture's module hooks dynamo
    # also compiles Module._call_impl's hook path: regions with no graph of their own.
    raw_regions = [e for e in events if e["name"].startswith("Torch-Compiled Region: ")]
    assert len(compiled.regions) == len(raw_regions)
    # Running: the compiled graphs' calls, two graphs (either side of the print) per call.
    graph_calls = [e for e in events if e["name"] == "CompiledFunction"]
    assert len(graph_calls) == 6
    ran = sum(round(e["dur"] * 1000) for e in graph_calls)
    assert abs(compiled.run_ns(0) - ran) <= len(graph_calls)
    # The ops run while compiling: those within an entire_frame_compile range, by hand.
    frames = [(e["ts"], e["ts"] + e["dur"]) for e in events if e["name"] == "entire_frame_compile"]
    inside = sum(
        1
        for e in events
        if e.get("cat") in ("cpu_op", "user_annotation")
        and any(a <= e["ts"] and e["ts"] + e["dur"] <= b for a, b in frames)
    )
    assert int(compiled.compiling.sum()) == inside > 0
    notices = [n for n in plain_report(analysis)["notices"] if n["kind"] == "compile"]
    assert len(notices) == 1 and "compiling took" in notices[0]["text"]


def test_compiled_kernels_belong_to_the_calling_module(captured: dict[str, Any]) -> None:
    events = [e for e in captured["events"] if e.get("ph") == "X"]
    calls = [(e["ts"], e["ts"] + e["dur"]) for e in events if e["name"] == CALL]
    inductor = [e for e in events if "cpp_fused_" in e["name"]]
    # Each of the 3 calls runs one Inductor kernel per graph, inside its module call.
    assert len(inductor) == 6
    assert all(any(a <= e["ts"] <= b for a, b in calls) for e in inductor)
    compiled = Analysis(captured["profile"].trace).compiled
    kernels = compiled.kernels.assign(kind=compiled.kinds, fused=compiled.fused)
    mine = kernels[kernels["kind"] == "cpp"]
    assert sorted(mine["name"]) == sorted(e["name"] for e in inductor)
    assert set(mine["module"]) == {"Net"}
    assert (mine["region"] >= 0).all()
    # What the test's forward does, graph by graph: relu, *2, +1; then tanh and sum.
    graph0 = {
        op for ops, name in zip(mine["fused"], mine["name"]) if "graph_0" in name for op in ops
    }
    graph1 = {
        op for ops, name in zip(mine["fused"], mine["name"]) if "graph_1" in name for op in ops
    }
    assert {"relu", "mul", "add"} <= graph0
    assert {"tanh", "sum"} <= graph1
    # The linear layers are ATen calls of the graphs (extern kernels): two per call.
    extern = kernels[kernels["kind"] == "extern"]
    assert sorted(set(extern["name"])) == ["aten::addmm"]
    assert len(extern) == 6 and set(extern["module"]) == {"Net"}


def test_ops_run_while_compiling_count_no_work(captured: dict[str, Any]) -> None:
    """dynamo and AOTAutograd run ATen ops on fake tensors while compiling, with the program's
    shapes: none of them may carry FLOPs or bytes into the roofline or the findings."""
    events = [e for e in captured["events"] if e.get("ph") == "X"]
    spans = [
        (round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000))
        for e in events
        if e["name"].endswith(" (dynamo_timed)") or e["name"] == "entire_frame_compile"
    ]
    inside = [
        e
        for e in events
        if e["name"].startswith("aten::") and any(a <= round(e["ts"] * 1000) < b for a, b in spans)
    ]
    assert inside, "the first call compiles: ATen ops ran inside the compile ranges"
    analysis = Analysis(captured["profile"].trace)
    costs = analysis.op_costs
    ops = analysis.trace.ops
    # The raw file's clock against the trace's: the first region call, in both.
    names = ops["name"].astype(str).to_numpy()
    raw_first = min(round(e["ts"] * 1000) for e in events if e["name"].startswith("Torch-Com"))
    ours_first = (
        ops["start_ns"].to_numpy()[np.char.startswith(names.astype(str), "Torch-Com")].min()
    )
    start = ops["start_ns"].to_numpy() + (raw_first - ours_first)
    costed = np.isfinite(costs["flops"].to_numpy()) | np.isfinite(costs["bytes"].to_numpy())
    compiling = np.zeros(len(ops), bool)
    for a, b in spans:
        compiling |= (start >= a) & (start < b)
    assert compiling.sum() >= len(inside)
    assert not (costed & compiling).any()
    assert costed.any()  # the compiled graphs' own ATen calls still count
