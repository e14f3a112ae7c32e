"""One-time costs (analyses/one_off.py) and the notice that names them first, on a Kineto
document written here: a long first CUDA call inside aten::to (the context), a first launch
far longer than the launches after it (lazy loading), a long wait (not one-time work)."""

from __future__ import annotations

from pathlib import Path

import gpuprofile
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.one_off import one_off_ns
from gpuprofile.importers.kineto import load_kineto
from helpers.kineto_docs import cpu_op, document, kernel, runtime, write

MS = 1000.0  # document times are microseconds


def _events(context_ms: float) -> list[dict]:
    events = [
        cpu_op("aten::to", 0, context_ms * MS + 10),
        runtime("cudaDeviceGetStreamPriorityRange", 5, context_ms * MS, 1),
        runtime("cudaLaunchKernel", context_ms * MS + 20, 20 * MS, 2),  # first launch: 20 ms
        kernel("k", context_ms * MS + 20 * MS + 30, 100, 2),
        runtime("cudaDeviceSynchronize", context_ms * MS + 20 * MS + 40, 30 * MS, 9),
    ]
    start = context_ms * MS + 50 * MS + 100
    for i in range(5):  # the launches after the first: 8 us each
        events.append(runtime("cudaLaunchKernel", start + i * 100, 8, 10 + i))
        events.append(kernel("k", start + i * 100 + 10, 50, 10 + i))
    return events


def test_context_creation_and_a_first_launch_are_one_off_work(tmp_path: Path) -> None:
    trace = load_kineto(write(tmp_path / "t.json", document(_events(context_ms=40))))
    found = Analysis(trace).one_off_costs
    assert [(o.what, o.call, o.dur_ns) for o in found] == [
        ("CUDA context creation", "cudaDeviceGetStreamPriorityRange", 40_000_000),
        ("lazy module loading (first launch)", "cudaLaunchKernel", 20_000_000),
    ]
    assert found[0].op == "aten::to"
    assert one_off_ns(found, 0) == 60_000_000  # the sync's 30 ms wait is not one-time work


def test_the_report_names_dominant_one_off_work_first(tmp_path: Path) -> None:
    path = write(tmp_path / "t.json", document(_events(context_ms=40)))
    report = gpuprofile.load(path).report()
    first = report["notices"][0]
    assert first["kind"] == "one-off"
    assert first["text"].startswith("60.0 ms (")
    assert (
        "CUDA context creation, cudaDeviceGetStreamPriorityRange 40.0 ms in aten::to"
        in (first["text"])
    )
    assert "--steps W,N" in first["text"] and "CUDA_MODULE_LOADING=EAGER" in first["text"]


def test_short_one_off_work_is_no_notice(tmp_path: Path) -> None:
    events = [e for e in _events(context_ms=1) if e["name"] != "cudaLaunchKernel" or e["dur"] < 100]
    report = gpuprofile.load(write(tmp_path / "t.json", document(events))).report()
    assert all(n["kind"] != "one-off" for n in report["notices"])


def test_slow_launches_are_module_loading_and_no_finding_gives_their_time_back(
    tmp_path: Path,
) -> None:
    """A cold start: after the context, three first launches of other kernels at 100 ms each
    (the GPU idle meanwhile), among 30 launches of 5 us. Each slow launch is one-time work;
    the idle they leave is the one-off notice's, not a launch or idle finding's gain."""
    events = [runtime("hipDeviceGetAttribute", 0, 20 * MS, 1)]  # the context: 20 ms
    t = 20 * MS + 10
    corr = 2
    for i in range(30):
        slow = i in (3, 12, 21)
        dur = 100 * MS if slow else 5
        events.append(runtime("hipLaunchKernel", t, dur, corr))
        events.append(kernel(f"k{i % 4}", t + dur + 2, 40, corr))
        t += dur + 50
        corr += 1
    found = Analysis(load_kineto(write(tmp_path / "t.json", document(events)))).one_off_costs
    loading = [o for o in found if o.what == "lazy module loading (first launch)"]
    assert [o.dur_ns for o in loading] == [100_000_000] * 3
    report = gpuprofile.load(tmp_path / "t.json").report()
    assert report["notices"][0]["kind"] == "one-off"
    # The idle the slow launches left (3 x 100 ms of about 302 ms) is given back by no finding.
    claimed = sum(
        h["gain_ns"] for h in report["hints"] if h["kind"] in ("gpu-idle", "launch-overhead")
    )
    assert claimed < 10 * MS * 1000


def test_a_slow_first_launch_that_is_the_first_call_is_module_loading(tmp_path: Path) -> None:
    """HTA's legacy inference trace in small: the trace's first runtime call is a 1.4 ms
    launch (too short for a context) and three more take 8-14 us: lazy module loading, the
    first call or not."""
    events = [runtime("cudaLaunchKernel", 0, 1414, 1), kernel("k0", 1420, 4, 1)]
    for i, (at, dur) in enumerate([(1430, 8), (1450, 14), (1480, 10)], start=2):
        events += [runtime("cudaLaunchKernel", at, dur, i), kernel(f"k{i}", at + dur + 2, 5, i)]
    found = Analysis(load_kineto(write(tmp_path / "t.json", document(events)))).one_off_costs
    assert [(o.what, o.dur_ns) for o in found] == [
        ("lazy module loading (first launch)", 1_414_000)
    ]
