"""Module attribution (analyses/modules.py) on small Kineto documents built here, where the
test's own labels say which module and phase each event belongs to."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pandas as pd

from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.lookups import innermost_everywhere
from gpuprofile.analyses.modules import NO_MODULE, PHASES, Modules
from gpuprofile.analyses.owners import owners
from gpuprofile.importers.kineto import load_kineto
from gpuprofile.report.build import build_report
from gpuprofile.report.module_text import module_lines, owner_line, phase_line
from gpuprofile.report.schema import ModuleRow, Phases, SourceRef, report_json
from gpuprofile.report.text import render_text
from helpers.kineto_docs import cpu_op, document, kernel, memory, python_function, runtime, write


def annotation(name: str, ts: float, dur: float, *, tid: int = 1) -> dict[str, Any]:
    return {**cpu_op(name, ts, dur, tid=tid), "cat": "user_annotation"}


def seq(number: int, thread: int = 0) -> dict[str, int]:
    return {"Sequence number": number, "Fwd thread id": thread}


# Each event's expected (module path or None, phase), by name; the kernels' by kernel name.
EXPECTED = {
    "nn.Module: Net (Net)": ("Net", "forward"),
    "nn.Module: Net.fc1 (Linear)": ("Net.fc1", "forward"),
    "aten::linear": ("Net.fc1", "forward"),
    "aten::t": ("Net.fc1", "forward"),
    "aten::addmm": ("Net.fc1", "forward"),
    "nn.Module: Net.act (ReLU)": ("Net.act", "forward"),
    "aten::item": ("Net", "forward"),
    "aten::relu": ("Net.act", "forward"),
    "aten::mse_loss": (None, "other"),
    "autograd::engine::evaluate_function: ReluBackward0": ("Net.act", "backward"),
    "ReluBackward0": ("Net.act", "backward"),
    "autograd::engine::evaluate_function: AddmmBackward0": ("Net.fc1", "backward"),
    "aten::mm": ("Net.fc1", "backward"),
    "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad": (None, "backward"),
    "Optimizer.step#SGD.step": (None, "optimizer"),
    "aten::add_": (None, "optimizer"),
    "gemm": ("Net.fc1", "forward"),
    "gemm_backward": ("Net.fc1", "backward"),
    "sgd_kernel": (None, "optimizer"),
}


def training_step() -> dict[str, Any]:
    return document(
        [
            annotation("nn.Module: Net (Net)", 0, 100),
            annotation("nn.Module: Net.fc1 (Linear)", 1, 50),
            cpu_op("aten::linear", 2, 40, ext=1, **seq(7)),
            cpu_op("aten::t", 3, 5, **seq(7)),
            cpu_op("aten::addmm", 10, 30, ext=2, **seq(7)),
            runtime("cudaLaunchKernel", 12, 4, corr=100),
            # Reads the counter only: the next op that makes a grad_fn (relu) has its number.
            cpu_op("aten::item", 55, 5, **seq(8)),
            annotation("nn.Module: Net.act (ReLU)", 61, 30),
            cpu_op("aten::relu", 62, 20, **seq(8)),
            cpu_op("aten::mse_loss", 110, 10, **seq(9)),
            # Backward on the autograd thread (tid 2).
            cpu_op(
                "autograd::engine::evaluate_function: ReluBackward0", 200, 20, tid=2, **seq(8, 1)
            ),
            cpu_op("ReluBackward0", 201, 10, tid=2, **seq(8, 1)),
            cpu_op(
                "autograd::engine::evaluate_function: AddmmBackward0", 230, 40, tid=2, **seq(7, 1)
            ),
            cpu_op("aten::mm", 231, 30, tid=2, ext=3),
            runtime("cudaLaunchKernel", 232, 4, corr=101, tid=2),
            cpu_op(
                "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad",
                280,
                5,
                tid=2,
            ),
            annotation("Optimizer.step#SGD.step", 300, 50),
            cpu_op("aten::add_", 301, 20),
            runtime("cudaLaunchKernel", 302, 4, corr=102),
            kernel("gemm", 20, 10, corr=100),
            kernel("gemm_backward", 240, 10, corr=101),
            kernel("sgd_kernel", 310, 10, corr=102),
        ]
    )


def test_each_op_and_kernel_has_the_module_and_phase_its_labels_say(tmp_path: Path) -> None:
    analysis = Analysis(load_kineto(write(tmp_path / "t.json", training_step())))
    modules = analysis.modules
    trace = analysis.trace
    for table, module, phase in (
        ("ops", modules.op_module, modules.op_phase),
        ("kernels", modules.kernel_module, modules.kernel_phase),
    ):
        names = trace.table(table)["name"].astype(str).tolist()
        got = {
            name: (modules.paths[m] if m >= 0 else None, PHASES[p])
            for name, m, p in zip(names, module.tolist(), phase.tolist(), strict=True)
        }
        assert got == {name: EXPECTED[name] for name in names}
    assert modules.types == tuple(
        {"Net": "Net", "Net.fc1": "Linear", "Net.act": "ReLU"}[p] for p in modules.paths
    )
    parents = {
        p: modules.paths[u] if u >= 0 else None for p, u in zip(modules.paths, modules.parents)
    }
    assert parents == {"Net": None, "Net.fc1": "Net", "Net.act": "Net"}
    assert sorted(modules.paths[m] for m in modules.calls["module"]) == [
        "Net",
        "Net.act",
        "Net.fc1",
    ]
    assert len(modules.engines) == 3


def test_torch_module_events_are_read_when_no_capture_ranges_exist(tmp_path: Path) -> None:
    doc = document(
        [
            python_function("nn.Module: Net_0", 0, 100),
            python_function("nn.Module: Linear_0", 1, 40),
            cpu_op("aten::addmm", 2, 30),
            python_function("nn.Module: Linear_1", 50, 40),
            python_function("torch/nn/functional.py(1): linear", 51, 30),
            cpu_op("aten::mm", 52, 20),
            # A second model called on its own: its path starts at its own class.
            python_function("nn.Module: Linear_0", 200, 10),
        ]
    )
    analysis = Analysis(load_kineto(write(tmp_path / "t.json", doc)))
    modules = analysis.modules
    ops = analysis.trace.ops
    path = {
        name: modules.paths[m] if m >= 0 else None
        for name, m in zip(ops["name"].astype(str), modules.op_module.tolist(), strict=True)
        if not name.startswith("nn.Module")
    }
    assert path == {
        "aten::addmm": "Net_0.Linear_0",
        "torch/nn/functional.py(1): linear": "Net_0.Linear_1",
        "aten::mm": "Net_0.Linear_1",
    }
    assert set(modules.paths) == {"Net_0", "Net_0.Linear_0", "Net_0.Linear_1", "Linear_0"}
    assert set(modules.types) == {"Net", "Linear"}


def test_capture_ranges_win_over_torch_events_in_one_trace(tmp_path: Path) -> None:
    # A capture with stacks holds both forms of the same calls: they must not count twice.
    doc = document(
        [
            annotation("nn.Module: Net (Net)", 0, 100),
            python_function("nn.Module: Net_0", 1, 98),
            cpu_op("aten::relu", 2, 30),
        ]
    )
    modules = Analysis(load_kineto(write(tmp_path / "t.json", doc))).modules
    assert modules.paths == ("Net",)
    assert len(modules.calls) == 1


def test_a_trace_without_module_calls_has_none(tmp_path: Path) -> None:
    doc = document([cpu_op("aten::relu", 2, 30), kernel("k", 5, 1, corr=1)])
    modules = Analysis(load_kineto(write(tmp_path / "t.json", doc))).modules
    assert modules.paths == ()
    assert (modules.op_module == -1).all() and (modules.kernel_module == -1).all()
    assert np.array_equal(modules.op_phase, [0])


# --- a real CPU capture ------------------------------------------------------------------


def captured_training_step(tmp_path: Path) -> tuple[Path, set[str]]:
    """One training step of a small net under torch.profiler, its module calls marked by the
    test's own record_function ranges (named as the capture names them); the modules whose
    backward ran, as the test's own full backward hooks saw them."""
    import torch
    from torch import nn
    from torch.profiler import ProfilerActivity, profile, record_function

    torch.manual_seed(0)

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Linear(32, 64)
            self.act = nn.ReLU()
            self.fc2 = nn.Linear(64, 8)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for name in ("fc1", "act", "fc2"):
                layer = getattr(self, name)
                with record_function(f"nn.Module: Net.{name} ({type(layer).__name__})"):
                    x = layer(x)
            return x

    net = Net()
    seen: set[str] = set()
    for name, module in [("Net", net), *((f"Net.{n}", m) for n, m in net.named_children())]:
        module.register_full_backward_hook(lambda *_, name=name: seen.add(name))
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    x = torch.randn(16, 32, requires_grad=True)
    target = torch.randn(16, 8)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        with record_function("nn.Module: Net (Net)"):
            out = net(x)
        loss = nn.functional.mse_loss(out, target)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    path = tmp_path / "step.json"
    prof.export_chrome_trace(str(path))
    return path, seen


def test_a_cpu_capture_puts_backward_in_the_modules_whose_hooks_ran(tmp_path: Path) -> None:
    path, hooked = captured_training_step(tmp_path)
    analysis = Analysis(load_kineto(path))
    report = build_report(analysis)
    (rank,) = report.ranks
    rows = {row.path: row for row in rank.modules}
    assert {p for p, r in rows.items() if r.backward_ns > 0 and p != NO_MODULE} == hooked
    text = render_text(report).splitlines()
    tree = text[text.index("  time by module (inclusive: a module's time holds its children's):") :]
    assert tree[2].endswith("  Net (Net)")
    children = {line.split("    ")[-1] for line in tree[3:6]}
    assert children == {"fc1 (Linear)", "act (ReLU)", "fc2 (Linear)"}
    assert any(line.startswith("  phases: forward ") for line in text)
    assert {p for p in rows if p != NO_MODULE} == {"Net", "Net.fc1", "Net.act", "Net.fc2"}
    assert rank.modules[0].path == "Net"  # the root first
    assert all(rows[p].calls == 1 for p in hooked)
    # The forward ranges as the exported JSON holds them, read by hand.
    events = json.loads(path.read_text())["traceEvents"]
    ranges = {
        e["name"]: e for e in events if e.get("ph") == "X" and e["name"].startswith("nn.Module: ")
    }
    for p, row in rows.items():
        if p != NO_MODULE:
            (event,) = (e for name, e in ranges.items() if name.startswith(f"nn.Module: {p} ("))
            assert abs(row.forward_ns - event["dur"] * 1000) <= 1, p
    assert rows["Net"].self_ns <= rows["Net"].forward_ns
    phases = rank.phases
    assert phases is not None
    assert phases.forward_ns + phases.backward_ns + phases.optimizer_ns + phases.other_ns == (
        rank.wall_ns
    )
    steps = [
        e["dur"] * 1000
        for e in events
        if e.get("ph") == "X" and e["name"].startswith("Optimizer.step#")
    ]
    assert steps and phases.optimizer_ns >= sum(steps) - len(steps)
    assert phases.backward_ns > 0 and phases.forward_ns > 0
    # Both Linear layers ran aten::addmm (forward); its top-op row and roofline points name
    # them, the one with more of its time first.
    addmm = [e for e in events if e.get("ph") == "X" and e["name"] == "aten::addmm"]
    time_in = {
        p: sum(
            e["dur"]
            for e in addmm
            for r in ranges.values()
            if r["name"].startswith(f"nn.Module: {p} (")
            and r["ts"] <= e["ts"]
            and e["ts"] + e["dur"] <= r["ts"] + r["dur"]
        )
        for p in ("Net.fc1", "Net.fc2")
    }
    (top,) = (o for o in rank.top_ops if o.name == "aten::addmm")
    assert top.modules == sorted(time_in, key=lambda p: -time_in[p])
    points = [p for p in report.roofline.points if p.name == "aten::addmm"]
    assert points and all(set(p.modules) <= {"Net.fc1", "Net.fc2"} for p in points)


def test_without_module_calls_the_report_is_what_it_was(tmp_path: Path) -> None:
    # "What it was": the report built on the contract's empty module attribution.
    doc = document(
        [
            cpu_op("aten::addmm", 10, 30, ext=2),
            runtime("cudaLaunchKernel", 12, 4, corr=100),
            kernel("gemm", 20, 10, corr=100),
            cpu_op("aten::relu", 50, 5),
        ]
    )
    trace = load_kineto(write(tmp_path / "t.json", doc))
    report = report_json(build_report(Analysis(trace)))
    before = Analysis(trace)
    before.__dict__["modules"] = _stub(trace)
    expected = report_json(build_report(before))
    assert report == expected
    (rank,) = report["ranks"]
    assert rank["modules"] == []
    assert rank["phases"]["other_ns"] == rank["wall_ns"]
    assert all(h["modules"] == [] for h in report["hints"])
    assert all(p["modules"] == [] for p in report["roofline"]["points"])
    assert all(o["modules"] == [] for o in rank["top_ops"])


def _stub(trace: Any) -> Modules:
    empty = pd.DataFrame(
        {
            c: pd.Series(dtype="int64")
            for c in ("op", "module", "rank", "start_ns", "end_ns", "outer")
        }
    )
    return Modules(
        paths=(),
        types=(),
        op_module=np.full(len(trace.ops), -1, np.int32),
        op_phase=np.zeros(len(trace.ops), np.int8),
        kernel_module=np.full(len(trace.kernels), -1, np.int32),
        kernel_phase=np.zeros(len(trace.kernels), np.int8),
        calls=empty,
        engines=empty.drop(columns="outer"),
    )


def test_innermost_everywhere_answers_as_climbing_from_each_row_does() -> None:
    # A random forest: each row's parent is an earlier row or none; depth follows from it.
    rng = np.random.default_rng(5)
    n = 2000
    parent = np.array([rng.integers(-1, i) if i else -1 for i in range(n)], np.int64)
    depth = np.zeros(n, np.int32)
    for i in range(n):
        depth[i] = depth[parent[i]] + 1 if parent[i] >= 0 else 0
    flag = rng.random(n) < 0.1
    # Climb by hand: the innermost flagged row on the path from each row to its root.
    expected = []
    for i in range(n):
        at = i
        while at >= 0 and not flag[at]:
            at = parent[at]
        expected.append(at)
    assert innermost_everywhere(flag, parent, depth).tolist() == expected
    assert innermost_everywhere(flag, parent, np.full(n, -1, np.int32)).tolist() == expected


# --- the text report -----------------------------------------------------------------------


def row(path: str, depth: int, forward: int, backward: int = 0, kind: str = "") -> ModuleRow:
    return ModuleRow(
        path=path, type=kind, depth=depth, calls=1, forward_ns=forward, backward_ns=backward,
        self_ns=0, gpu_ns=0, flops=None, achieved_flops_per_s=None, pct_of_roof=None,
        alloc_bytes=None, peak_bytes=None, evidence=[],
    )  # fmt: skip


def test_module_text_is_an_indented_tree_cut_to_the_heaviest_with_their_parents() -> None:
    rows = [
        row("Net", 0, 1000, 500, "Net"),
        row("Net.big", 1, 600, 300, "Block"),
        row("Net.big.inner", 2, 590, 0, "Linear"),
        row("Net.small", 1, 10, 0, "Block"),
        row("Net.small.tiny", 2, 5, 0, "Linear"),
        row("Other", 0, 400, 0, "Other"),
        row("Other.leaf", 1, 390, 0, "ReLU"),
    ]
    lines = module_lines(rows, rank=0, limit=5)
    printed = lines[2:]
    expected = [
        "  Net (Net)", "    big (Block)", "      inner (Linear)", "  Other (Other)",
        "    leaf (ReLU)",
    ]  # fmt: skip
    assert len(printed) == 6
    for line, end in zip(printed, expected, strict=False):
        assert line.endswith(end), (line, end)
    assert (
        printed[-1].strip() == "… 2 more modules (report()['ranks'][0]['modules'], --format json)"
    )
    # A child is never printed without its parent, even when it alone would fit.
    lines = module_lines(rows, rank=0, limit=2)
    assert len(lines) == 2 + 2 + 1  # the heads, two rows, the "more" line
    assert lines[2].endswith("  Net (Net)") and lines[3].endswith("    big (Block)")
    # An inference run (no backward anywhere): no backward column of zeros, no zero phases.
    forward_only = [msgspec.structs.replace(r, backward_ns=0) for r in rows]
    assert "backward" not in module_lines(forward_only, rank=0)[1]
    assert phase_line(Phases(forward_ns=30, backward_ns=0, optimizer_ns=0, other_ns=10), 40) == [
        "  phases: forward 30 ns (75%), other 10 ns (25%)"
    ]
    # Nothing in any phase (a TensorRT engine's layers): no line that says "other 100%".
    assert phase_line(Phases(forward_ns=0, backward_ns=0, optimizer_ns=0, other_ns=10), 10) == []
    # No kernels anywhere: no GPU column of zeros; one module with GPU time brings it back.
    assert "GPU" not in lines[1]
    gpu_rows = [msgspec.structs.replace(rows[0], gpu_ns=7_000), *rows[1:]]
    assert "GPU" in module_lines(gpu_rows, rank=0)[1]
    assert module_lines(gpu_rows, rank=0)[2].split()[4:6] == ["7.00", "µs"]


def test_a_hint_names_its_module_and_line() -> None:
    line = owner_line(
        ["Transformer.layers.0.attn", "Transformer.layers.1.attn"],
        [SourceRef(file="cell [5]", line=12, function="<module>")],
    )
    assert line == ["     module: Transformer.layers.0.attn · line: cell [5] line 12"]
    assert owner_line([], [SourceRef(file="/x/model.py", line=42, function="f")]) == [
        "     line: model.py:42"
    ]
    assert owner_line([], []) == []


def test_an_exported_trace_read_back_keeps_backward_in_its_modules(tmp_path: Path) -> None:
    import gpuprofile

    first = gpuprofile.load(write(tmp_path / "t.json", training_step()))
    first.export_trace(tmp_path / "out.json")
    again = gpuprofile.load(tmp_path / "out.json")
    for profile in (first, again):
        assert profile.trace.ops["sequence"].max() == 9  # the highest the test wrote

    def engines(profile: Any) -> list[tuple[int, str]]:
        modules = Analysis(profile.trace).modules
        rows = modules.engines.sort_values("start_ns")
        return [
            (int(s), modules.paths[m] if m >= 0 else "")
            for s, m in zip(rows["start_ns"], rows["module"], strict=True)
        ]

    assert engines(again) == engines(first)
    assert [p for _, p in engines(first)] == ["Net.act", "Net.fc1", ""]


def test_module_memory_is_what_its_calls_allocated_and_the_rise_of_the_total(
    tmp_path: Path,
) -> None:
    doc = training_step()
    # (ts, bytes) of allocations and frees; the totals follow, starting at 1000 bytes.
    changes = [
        (0.5, 1000),
        (5, 400),
        (12, 600),
        (20, -400),
        (63, 100),
        (70, -100),
        (205, 50),
        (400, 7),
    ]
    total = 0
    for ts, nbytes in changes:
        total += nbytes
        doc["traceEvents"].append(memory(ts, allocated=total, reserved=4096, nbytes=nbytes))
    (rank,) = build_report(Analysis(load_kineto(write(tmp_path / "t.json", doc)))).ranks
    rows = {row.path: row for row in rank.modules}

    def within(lo: float, hi: float) -> list[tuple[float, int]]:
        return [(ts, b) for ts, b in changes if lo <= ts <= hi]

    def allocated(*spans: tuple[float, float]) -> int:
        seen = {c for lo, hi in spans for c in within(lo, hi)}
        return sum(b for _, b in seen if b > 0)

    def rise(lo: float, hi: float) -> int:
        totals = [sum(b for t, b in changes if t <= ts) for ts, _ in within(lo, hi)]
        start = sum(b for t, b in changes if t < lo)
        return max([0, *(t - start for t in totals)])

    # Spans from training_step: Net [0, 100], fc1 [1, 51], act [61, 91]; backward engine ops
    # ReluBackward0 [200, 220] (act) and AddmmBackward0 [230, 270] (fc1).
    assert rows["Net.fc1"].alloc_bytes == allocated((1, 51), (230, 270)) == 1000
    assert rows["Net.act"].alloc_bytes == allocated((61, 91), (200, 220)) == 150
    assert rows["Net"].alloc_bytes == allocated((0, 100), (200, 220), (230, 270)) == 2150
    assert rows["Net.fc1"].peak_bytes == max(rise(1, 51), rise(230, 270)) == 1000
    assert rows["Net.act"].peak_bytes == max(rise(61, 91), rise(200, 220)) == 100
    assert rows["Net"].peak_bytes == rise(0, 100) == 2000


def test_owners_are_the_modules_with_most_of_the_events_time(tmp_path: Path) -> None:
    analysis = Analysis(load_kineto(write(tmp_path / "t.json", training_step())))
    trace = analysis.trace

    def ids(table: str, *names: str) -> np.ndarray:
        frame = trace.table(table)
        return frame["id"].to_numpy()[frame["name"].astype(str).isin(names).to_numpy()]

    # aten::addmm runs 30 us in fc1, aten::relu 20 us in act; aten::mse_loss in none.
    paths, lines = owners(
        analysis, [("ops", ids("ops", "aten::relu", "aten::addmm", "aten::mse_loss"), None)]
    )
    assert paths == ["Net.fc1", "Net.act"]
    assert lines == []  # no stacks recorded
    # Weights given: act's op now outweighs fc1's.
    relu_addmm = np.r_[ids("ops", "aten::relu"), ids("ops", "aten::addmm")]
    paths, _ = owners(analysis, [("ops", relu_addmm, np.array([50.0, 1.0]))])
    assert paths == ["Net.act", "Net.fc1"]
    # Runtime calls own what their kernels do: all three launches, fc1's two and the SGD one.
    paths, _ = owners(analysis, [("runtime", ids("runtime", "cudaLaunchKernel"), None)])
    assert paths == ["Net.fc1"]
    assert owners(analysis, [("memcpy", np.array([0]), None)]) == ([], [])


def test_the_next_profiler_step_opened_inside_the_optimizers_range_is_not_optimizer(
    tmp_path: Path,
) -> None:
    # With --steps the profiler's step hook runs inside Optimizer.step: ProfilerStep#2 opens
    # before the optimizer's range closes, so the trace's nesting puts the whole next step
    # under it. Only what the optimizer's range holds in time is its phase.
    doc = document(
        [
            annotation("ProfilerStep#1", 0, 195),
            annotation("Optimizer.step#SGD.step", 100, 100),
            cpu_op("aten::add_", 110, 20),
            annotation("ProfilerStep#2", 190, 300),
            annotation("nn.Module: Net (Net)", 250, 100),
            cpu_op("aten::mm", 260, 50),
            annotation("Optimizer.step#SGD.step", 400, 50),
            cpu_op("aten::mul_", 410, 20),
        ]
    )
    analysis = Analysis(load_kineto(write(tmp_path / "t.json", doc)))
    ops = analysis.trace.ops
    phase = {
        name: PHASES[p]
        for name, p in zip(ops["name"].astype(str), analysis.modules.op_phase.tolist(), strict=True)
    }
    assert phase["aten::add_"] == phase["aten::mul_"] == "optimizer"
    assert phase["aten::mm"] == "forward"
    assert phase["ProfilerStep#2"] == "other"
    [rank] = build_report(analysis).ranks
    assert rank.phases is not None
    # The two optimizer ranges, by hand: the first cut where its step ends (100 to 195 us: the
    # rest is the profiler's step work), the second whole (50 us, inside ProfilerStep#2).
    assert rank.phases.optimizer_ns == 95_000 + 50_000
