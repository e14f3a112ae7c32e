"""GPU work launched before recording began (carry-over) and each step's GPU span, on small
Kineto documents whose expected figures are known by construction."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuprofile.analyses.carry_over import carry_over
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.gpu_steps import gpu_steps
from gpuprofile.importers.kineto import load_kineto
from gpuprofile.report.build import build_report
from gpuprofile.report.schema import report_json, to_report
from gpuprofile.report.text import render_text
from helpers.kineto_docs import cpu_op, document, kernel, memcpy, runtime, write


def flow_end(corr: int, ts: float) -> dict[str, Any]:
    """The flow end Kineto writes on a GPU event (its start sits on the launch, when recorded)."""
    return {"ph": "f", "id": corr, "pid": 0, "tid": 7, "ts": ts, "cat": "ac2g", "name": "ac2g",
            "bp": "e"}  # fmt: skip


def gpu_step(name: str, ts: float, dur: float) -> dict[str, Any]:
    return {"ph": "X", "cat": "gpu_user_annotation", "name": name, "pid": 0, "tid": 7, "ts": ts,
            "dur": dur, "args": {"External id": 1}}  # fmt: skip


def backlog_doc() -> dict[str, Any]:
    """Two kernels launched before recording (ids 5 and 6, no launch in the trace, 1 us of
    overlap), then a recorded step that launches one kernel (id 10)."""
    return document(
        [
            kernel("backlog_a", 1000.0, 3.0, corr=5),
            flow_end(5, 1000.0),
            kernel("backlog_b", 1002.0, 4.0, corr=6, stream=8),
            flow_end(6, 1002.0),
            cpu_op("aten::mm", 1010.0, 5.0),
            runtime("cudaLaunchKernel", 1011.0, 2.0, corr=10),
            kernel("recorded", 1020.0, 2.0, corr=10),
            flow_end(10, 1020.0),
            gpu_step("ProfilerStep#3", 1020.0, 2.0),
        ]
    )


def test_kernels_with_a_flow_but_no_launch_are_carry_over(tmp_path: Path) -> None:
    trace = load_kineto(write(tmp_path / "t.json", backlog_doc()))
    [found] = carry_over(trace)
    assert found.events == 2
    # [1000, 1003) and [1002, 1006) us: their union is 6 us.
    assert found.busy_ns == 6_000
    assert len(found.event_ids["kernels"]) == 2
    report = report_json(build_report(Analysis(trace)))
    [notice] = [n for n in report["notices"] if n["kind"] == "carry-over"]
    assert notice["text"].startswith("2 GPU events (6.00 µs of GPU busy time) were launched")
    assert "CARRY-OVER: 2 GPU events" in render_text(to_report(report))


def test_a_trace_without_launches_or_flows_stays_silent(tmp_path: Path) -> None:
    # Correlation ids, but no runtime call at all: nothing tells carry-over apart.
    doc = document([kernel("a", 10.0, 1.0, corr=5), kernel("b", 12.0, 1.0, corr=6)])
    trace = load_kineto(write(tmp_path / "t.json", doc))
    assert carry_over(trace) == []
    assert not [
        n
        for n in report_json(build_report(Analysis(trace)))["notices"]
        if n["kind"] == "carry-over"
    ]


def test_graph_replays_lost_launches_and_unknown_ids_are_not_carry_over(tmp_path: Path) -> None:
    doc = document(
        [
            runtime("cudaGraphLaunch", 5.0, 2.0, corr=20),
            # A graph's kernels share its launch's id.
            kernel("graph_k1", 10.0, 1.0, corr=20),
            kernel("graph_k2", 11.0, 1.0, corr=20),
            # A launch lost inside the recorded range (a trimmed trace), and an unknown id.
            kernel("lost", 13.0, 1.0, corr=25),
            memcpy("HtoD", 15.0, 1.0, 64),  # correlation 0: none known
            runtime("cudaLaunchKernel", 16.0, 1.0, corr=30),
            kernel("after", 18.0, 1.0, corr=30),
        ]
    )
    trace = load_kineto(write(tmp_path / "t.json", doc))
    assert carry_over(trace) == []


def test_memcpy_backlog_counts_and_multi_rank_notice_names_the_ranks(tmp_path: Path) -> None:
    def rank_doc(rank: int, backlog: bool) -> dict[str, Any]:
        early = [kernel("early", 1.0, 2.0, corr=3)] if backlog else []
        copy = memcpy("DtoH", 2.0, 2.0, 128)
        copy["args"]["correlation"] = 4  # a copy queued before recording too
        return document(
            [*early, *([copy] if backlog else []), runtime("cudaLaunchKernel", 5.0, 1.0, corr=9),
             kernel("k", 7.0, 1.0, corr=9)],
            distributedInfo={"rank": rank, "world_size": 2},
        )  # fmt: skip

    run = tmp_path / "run"
    run.mkdir()
    write(run / "rank0.json", rank_doc(0, backlog=False))
    write(run / "rank1.json", rank_doc(1, backlog=True))
    trace = load_kineto(run, workers=1)
    [found] = carry_over(trace)
    assert (found.rank, found.events, found.busy_ns) == (1, 2, 3_000)
    assert set(found.event_ids) == {"kernels", "memcpy"}
    report = report_json(build_report(Analysis(trace)))
    [notice] = [n for n in report["notices"] if n["kind"] == "carry-over"]
    assert " on 1 rank of 2 (1) " in notice["text"]


def test_steps_window_busy_and_idle_with_gaps(tmp_path: Path) -> None:
    doc = document(
        [
            runtime("cudaLaunchKernel", 1.0, 1.0, corr=1),
            # Step 1 [100, 120) us: kernels [100, 105), [103, 108) and [112, 125) (clipped).
            kernel("a", 100.0, 5.0, corr=1),
            kernel("b", 103.0, 5.0, corr=1, stream=9),
            kernel("c", 112.0, 13.0, corr=1),
            gpu_step("ProfilerStep#1", 100.0, 20.0),
            # Step 2 [130, 140) us: nothing but a memcpy [138, 139).
            {**memcpy("HtoD", 138.0, 1.0, 64)},
            gpu_step("ProfilerStep#2", 130.0, 10.0),
            # Other GPU annotations are not steps.
            gpu_step("## forward ##", 100.0, 8.0),
        ]
    )
    trace = load_kineto(write(tmp_path / "t.json", doc))
    steps = gpu_steps(Analysis(trace), 0)
    assert [(s.name, s.window_ns, s.busy_ns, s.idle_ns) for s in steps] == [
        ("ProfilerStep#1", 20_000, 8_000 + 8_000, 4_000),
        ("ProfilerStep#2", 10_000, 1_000, 9_000),
    ]
    report = report_json(build_report(Analysis(trace)))
    assert report["ranks"][0]["gpu"]["steps"] == [
        {"name": "ProfilerStep#1", "window_ns": 20_000, "busy_ns": 16_000, "idle_ns": 4_000},
        {"name": "ProfilerStep#2", "window_ns": 10_000, "busy_ns": 1_000, "idle_ns": 9_000},
    ]
    text = render_text(to_report(report))
    assert "ProfilerStep#1: window 20.0 µs, busy 16.0 µs (80.0%), idle 4.00 µs" in text
    # Step markers stay out of the ops table: CPU-side analyses never meet a step twice.
    assert "ProfilerStep#1" not in set(trace.ops["name"].astype(str))


def test_no_gpu_step_markers_gives_an_empty_list(tmp_path: Path) -> None:
    trace = load_kineto(write(tmp_path / "t.json", backlog_doc()["traceEvents"][:4]))
    assert gpu_steps(Analysis(trace), 0) == []
    assert report_json(build_report(Analysis(trace)))["ranks"][0]["gpu"]["steps"] == []


def test_many_steps_are_summed_up_in_the_text(tmp_path: Path) -> None:
    events: list[dict[str, Any]] = [runtime("cudaLaunchKernel", 1.0, 1.0, corr=1)]
    for n in range(9):
        events += [kernel(f"k{n}", 100.0 + 10 * n, 5.0, corr=1),
                   gpu_step(f"ProfilerStep#{n}", 100.0 + 10 * n, 10.0)]  # fmt: skip
    trace = load_kineto(write(tmp_path / "t.json", document(events)))
    text = render_text(build_report(Analysis(trace)))
    assert "GPU steps (9, from the trace's GPU step markers):" in text
    assert "... and 4 more; all 9: window 90.0 µs, busy 45.0 µs (50.0%), idle 45.0 µs" in text
    assert "ProfilerStep#5:" not in text
