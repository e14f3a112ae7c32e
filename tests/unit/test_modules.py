"""Module attribution (analyses/modules.py) on small Kineto documents built here, where the
test's own labels say which module and phase each event belongs to."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.modules import PHASES
from gpuprofile.importers.kineto import load_kineto
from helpers.kineto_docs import cpu_op, document, kernel, runtime, write


def annotation(name: str, ts: float, dur: float, *, tid: int = 1) -> dict[str, Any]:
    return {**cpu_op(name, ts, dur, tid=tid), "cat": "user_annotation"}


def python_function(name: str, ts: float, dur: float, *, tid: int = 1) -> dict[str, Any]:
    return {**cpu_op(name, ts, dur, tid=tid), "cat": "python_function"}


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
