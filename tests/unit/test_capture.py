"""Real torch.profiler captures on the CPU, read back through the one Trace path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import gpuprofile
from gpuprofile.analyses.summary import top_ops
from gpuprofile.capture.guard import profiler_running


def mlp_steps(steps: int = 2) -> torch.Tensor:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    x = torch.randn(16, 32)
    loss = torch.zeros(())
    for _ in range(steps):
        with torch.profiler.record_function("step"):
            loss = model(x).square().mean()
            loss.backward()
    return loss


def test_capture_matches_the_exported_chrome_trace(tmp_path: Path) -> None:
    export = tmp_path / "capture.json"
    with gpuprofile.profile(export=export) as p:
        mlp_steps()
    events = json.loads(export.read_text())["traceEvents"]
    cpu = [
        e
        for e in events
        if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation", "python_function")
    ]
    report = p.report()
    assert report["source"]["format"] == "capture"
    assert report["partial"] is False
    (rank,) = report["ranks"]
    assert rank["counts"]["ops"] == len(cpu) > 0
    assert rank["gpu"] is None
    names = {e["name"] for e in cpu}
    assert {"aten::addmm", "step"} <= names
    # Shapes are recorded by default.
    addmm = p.trace.ops[p.trace.ops["name"] == "aten::addmm"]
    assert json.loads(addmm["input_dims"].iloc[0])[1] == [16, 32]
    every_op = {row.name: row.count for row in top_ops(p.trace, 0, limit=10_000)}
    assert every_op["aten::addmm"] == sum(e["name"] == "aten::addmm" for e in cpu)
    expected_total = sum(round(e["dur"] * 1000) for e in cpu if e["name"] == "aten::addmm")
    assert (
        abs(
            next(r.total_ns for r in top_ops(p.trace, 0, 10_000) if r.name == "aten::addmm")
            - expected_total
        )
        <= every_op["aten::addmm"]
    )


def test_record_shapes_false_leaves_input_dims_empty() -> None:
    # modules=False: the one annotation is the block's own "step" range.
    with gpuprofile.profile(record_shapes=False, modules=False) as p:
        mlp_steps(1)
    ops = p.trace.ops
    assert ops["input_dims"].isna().all()
    assert (ops["category"] == "user_annotation").sum() == 1


def test_a_raising_block_gives_a_partial_profile() -> None:
    with pytest.raises(ZeroDivisionError), gpuprofile.profile() as p:
        mlp_steps(1)
        raise ZeroDivisionError("boom")
    assert p.partial
    assert not profiler_running()
    assert p.report()["partial"] is True
    assert "PARTIAL" in p.text()
    assert p.report()["ranks"][0]["counts"]["ops"] > 0


def test_nested_profile_is_refused_and_leaves_the_outer_intact() -> None:
    with gpuprofile.profile() as outer:
        with pytest.raises(gpuprofile.ProfilerBusyError, match="already recording"):  # noqa: SIM117
            with gpuprofile.profile():
                pass
        mlp_steps(1)
    assert outer.report()["ranks"][0]["counts"]["ops"] > 0
    assert not profiler_running()


def test_a_users_own_torch_profiler_is_refused() -> None:
    with torch.profiler.profile(), pytest.raises(gpuprofile.ProfilerBusyError):  # noqa: SIM117
        with gpuprofile.profile():
            pass


def test_profile_memory_records_allocator_events() -> None:
    with gpuprofile.profile(profile_memory=True) as p:
        mlp_steps(1)
    memory = p.trace.memory
    assert len(memory) > 0
    assert (memory["device"] == -1).all()  # CPU allocations


def test_using_a_profile_while_recording_is_an_error() -> None:
    with gpuprofile.profile() as p, pytest.raises(gpuprofile.GpuprofileError, match="recording"):
        p.report()


def test_repr_is_one_line_made_without_the_analysis(monkeypatch: pytest.MonkeyPatch) -> None:
    import gpuprofile.report.build as build

    monkeypatch.setenv("GPUPROFILE_HISTORY", "off")  # recording the run would build its report
    with gpuprofile.profile(interval=0) as p:
        assert repr(p) == "<gpuprofile.Profile (recording)>"
        torch.ones(4).cumsum(0)

    def no_report(*args: object, **kwargs: object) -> None:
        raise AssertionError("repr must not build the report")

    monkeypatch.setattr(build, "build_report", no_report)
    events = sum(len(p.trace.table(t)) for t in ("ops", "runtime", "kernels", "memcpy", "memset"))
    assert repr(p) == f"<gpuprofile.Profile capture: 1 rank, {events:,} events>"
    assert p._analysis is None  # nothing analysed to write it
    monkeypatch.undo()
    # print() and str() give the text report.
    assert str(p) == p.text() and p.text().startswith("gpuprofile report (capture)")


def test_export_opens_in_hta(tmp_path: Path) -> None:
    from hta.trace_analysis import TraceAnalysis

    export = tmp_path / "cell.pt.trace.json"
    with gpuprofile.profile(export=export) as p:
        mlp_steps(1)
    analysis = TraceAnalysis(trace_dir=str(tmp_path))
    hta_events = analysis.t.get_trace(0)
    symbols = analysis.t.symbol_table.get_sym_table()
    hta_names = [symbols[i] for i in hta_events["name"]]
    ours = p.trace.ops["name"].astype(str).tolist()
    assert sorted(n for n in hta_names if n.startswith("aten::")) == sorted(
        n for n in ours if n.startswith("aten::")
    )
