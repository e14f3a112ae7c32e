"""Compiled regions, breaks and recompiles in a small Kineto document written event by event, as
torch 2.13 nests them: after a graph break the resumed frame's region runs inside the region
that broke; a recompiled frame's region is numbered frame/recompile. No dynamo counts (a
shared trace): the hint counts breaks from the regions and says it cannot say why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.detectors import run_detectors
from gpuprofile.importers.kineto import load_kineto
from gpuprofile.report.build import plain_report
from helpers.kineto_docs import cpu_op, document, kernel, runtime, write

CALL = "nn.Module: Net (Net)"


def annotation(name: str, ts: float, dur: float) -> dict[str, Any]:
    return {**cpu_op(name, ts, dur), "cat": "user_annotation"}


def one_call(t: float, first: str, resumed: str, corr: int) -> list[dict[str, Any]]:
    """A call of the compiled Net at t (us): its first graph (with an Inductor kernel), 100 us
    of eager code (the break), and the frame resumed after it, nested in the first region."""
    return [
        annotation(CALL, t, 1000),
        cpu_op(f"Torch-Compiled Region: {first}", t + 10, 980),
        cpu_op("CompiledFunction", t + 20, 180),
        cpu_op("triton_poi_fused_add_mul_0", t + 30, 10),
        runtime("cudaLaunchKernel", t + 32, 5, corr),
        kernel("triton_poi_fused_add_mul_0", t + 50, 40, corr),
        cpu_op("aten::add", t + 220, 40),  # eager, between the regions
        cpu_op(f"Torch-Compiled Region: {resumed}", t + 300, 680),
        cpu_op("CompiledFunction", t + 310, 190),
    ]


def test_breaks_recompiles_and_kernels_from_the_regions(tmp_path: Path) -> None:
    # Call 2 runs frame 0 recompiled (a new shape): graph 0/1.
    doc = document([*one_call(0, "0/0", "1/0", 1), *one_call(2000, "0/1", "1/0", 2)])
    analysis = Analysis(load_kineto(write(tmp_path / "t.json", doc)))
    compiled = analysis.compiled
    assert list(compiled.regions["graph"]) == ["0/0", "1/0", "0/1", "1/0"]
    assert list(compiled.regions["outer"]) == [-1, 0, -1, 2]
    # Graph calls: 180 + 190 us per call.
    assert compiled.run_ns(0) == 2 * (180 + 190) * 1000
    # Each break: from the first graph call's end (t + 200) to the resumed region (t + 300).
    assert list(compiled.breaks["end_ns"] - compiled.breaks["start_ns"]) == [100_000, 100_000]
    kernels = compiled.kernels.assign(fused=compiled.fused)
    gpu = kernels[kernels["table"] == "kernels"]
    assert list(gpu["region"]) == [0, 2]
    assert set(gpu["module"]) == {"Net"}
    assert set(gpu["fused"]) == {("add", "mul")}

    [hint] = [h for h in run_detectors(analysis) if h.kind == "graph-break"]
    assert hint.numbers["graph_breaks"] == 1  # one place in the code (frame 0 to frame 1)
    assert hint.numbers["times_met"] == 2
    assert hint.gain_ns == 200_000
    assert "does not say why" in hint.explanation
    [notice] = [n for n in plain_report(analysis)["notices"] if n["kind"] == "compile"]
    assert "0/1" in notice["text"] and "mark_dynamic" in notice["text"]
    assert "no compiling in this trace" in notice["text"]
    # Host time of the graphs' calls; apart, their two 40 us Triton kernels' GPU time.
    assert "740 µs on the host in 4 compiled region calls" in notice["text"]
    assert "their kernels 80.0 µs on the GPU" in notice["text"]


def test_a_trace_without_compiled_code_has_none(tmp_path: Path) -> None:
    doc = document([annotation(CALL, 0, 100), cpu_op("aten::add", 10, 50)])
    analysis = Analysis(load_kineto(write(tmp_path / "t.json", doc)))
    assert not analysis.compiled.present
    assert not [h for h in run_detectors(analysis) if h.kind == "graph-break"]
    assert not [n for n in plain_report(analysis)["notices"] if n["kind"] == "compile"]
