"""gpuprofile check / assert_no_regression on Kineto documents built here: 10 steps a side
(host ProfilerStep#N ranges and their GPU markers), a clear 20% regression, no change, a noisy
8% slowdown whose interval straddles the limit, one step a side, and bad input.

The expected step times are the documents' own marker durations; the expected bootstrap
interval is recomputed here with numpy from the documented recipe (seed 0, the run's resample
indices drawn first, 2000 resamples, 2.5% / 97.5% quantiles of the ratio of medians).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import gpuprofile
from gpuprofile.cli import main
from helpers.kineto_docs import cpu_op, document, kernel, runtime, write

US = 1000
GAP_US = 50  # between steps


def step_doc(step_us: list[float]) -> dict[str, Any]:
    """One step per entry: a host ProfilerStep#N range and its GPU marker, both that long,
    holding one op that launches one kernel."""
    events: list[dict[str, Any]] = []
    t0 = 0.0
    for n, dur in enumerate(step_us, start=1):
        name = f"ProfilerStep#{n}"
        events.append({**cpu_op(name, t0, dur), "cat": "user_annotation"})
        events.append(
            {
                "ph": "X",
                "cat": "gpu_user_annotation",
                "name": name,
                "pid": 0,
                "tid": 7,
                "ts": t0,
                "dur": dur,
                "args": {"External id": n},
            }
        )
        events.append(cpu_op("aten::mm", t0 + 1, 5))
        events.append(runtime("cudaLaunchKernel", t0 + 2, 1, corr=n))
        events.append(kernel("gemm", t0 + 10, dur / 2, corr=n))
        t0 += dur + GAP_US
    return document(events)


def jittered(rng: np.random.Generator, base_us: float, spread: float, n: int = 10) -> list[float]:
    # Whole nanoseconds, so the trace's ns times equal these exactly.
    return [round(v, 3) for v in base_us * (1 + spread * rng.standard_normal(n))]


def bootstrap(run_ns: np.ndarray, base_ns: np.ndarray) -> tuple[float, float]:
    rng = np.random.default_rng(0)
    r = rng.integers(0, len(run_ns), size=(2000, len(run_ns)))
    b = rng.integers(0, len(base_ns), size=(2000, len(base_ns)))
    ratios = np.median(run_ns[r], axis=1) / np.median(base_ns[b], axis=1)
    return float(np.quantile(ratios, 0.025)), float(np.quantile(ratios, 0.975))


def run_check(run: Path, base: Path, limit: str, capsys: pytest.CaptureFixture[str]) -> tuple:
    code = main(["check", str(run), "--baseline", str(base), "--max-regression", limit,
                 "--format", "json"])  # fmt: skip
    out = capsys.readouterr()
    return code, json.loads(out.out) if out.out else None, out.err


def pair(tmp_path: Path, base_us: list[float], run_us: list[float]) -> tuple[Path, Path]:
    return (
        write(tmp_path / "run.json.gz", step_doc(run_us), gz=True),
        write(tmp_path / "base.json.gz", step_doc(base_us), gz=True),
    )


def ns(values: list[float]) -> np.ndarray:
    return np.array([round(v * US) for v in values], dtype=float)


def test_a_clear_regression_exits_1_with_its_interval_above_the_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(7)
    base_us = jittered(rng, 1000, 0.01)
    run_us = jittered(rng, 1200, 0.01)
    run, base = pair(tmp_path, base_us, run_us)
    code, verdict, _ = run_check(run, base, "5%", capsys)
    assert code == 1
    lo, hi = bootstrap(ns(run_us), ns(base_us))
    assert verdict["schema"] == "gpuprofile.check/1"
    assert verdict["method"] == "bootstrap" and verdict["metric"] == "step time"
    assert verdict["interval"] == pytest.approx([lo, hi], rel=1e-12)
    assert verdict["ratio"] == pytest.approx(np.median(run_us) / np.median(base_us), rel=1e-9)
    assert 1.05 < lo < 1.2 < hi  # the true ratio inside, the whole interval above the limit
    assert verdict["regressed"] is True and verdict["max_regression"] == 0.05
    assert verdict["text"].startswith("REGRESSION") and "interval" in verdict["text"]
    assert (verdict["baseline"], verdict["run"]) == (str(base), str(run))


def test_one_gpu_marker_for_a_window_of_steps_uses_the_host_steps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As an H200 with torch 2.11 recorded a --steps window: 10 host ProfilerStep ranges but one
    GPU marker over the whole window. The steps are the host's 10, so the check has an interval."""
    rng = np.random.default_rng(11)
    base_us, run_us = jittered(rng, 1000, 0.01), jittered(rng, 1200, 0.01)
    paths = []
    for name, steps in (("run", run_us), ("base", base_us)):
        doc = step_doc(steps)
        markers = [e for e in doc["traceEvents"] if e.get("cat") == "gpu_user_annotation"]
        first, last = markers[0], markers[-1]
        first["dur"] = last["ts"] + last["dur"] - first["ts"]  # one marker spans the window
        doc["traceEvents"] = [e for e in doc["traceEvents"] if e not in markers[1:]]
        paths.append(write(tmp_path / f"{name}.json.gz", doc, gz=True))
    code, verdict, _ = run_check(paths[0], paths[1], "5%", capsys)
    assert code == 1
    assert verdict["method"] == "bootstrap"
    assert verdict["interval"] == pytest.approx(list(bootstrap(ns(run_us), ns(base_us))), rel=1e-12)
    assert "host ProfilerStep ranges" in verdict["text"]


def test_no_change_with_jitter_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(8)
    base_us, run_us = jittered(rng, 1000, 0.01), jittered(rng, 1000, 0.01)
    run, base = pair(tmp_path, base_us, run_us)
    code, verdict, _ = run_check(run, base, "0.05", capsys)
    assert code == 0 and verdict["regressed"] is False
    lo, hi = verdict["interval"]
    assert lo < 1.0 < hi < 1.05  # the true ratio (1) inside
    assert verdict["max_regression"] == 0.05


def test_a_noisy_8_percent_slowdown_inside_noise_exits_0_and_says_the_interval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(9)
    base_us = jittered(rng, 1000, 0.15)
    # The same steps, shuffled and 8% slower: the medians differ by exactly 8%.
    run_us = [round(v * 1.08, 3) for v in rng.permutation(base_us)]
    run, base = pair(tmp_path, base_us, run_us)
    lo, hi = bootstrap(ns(run_us), ns(base_us))
    assert lo < 1.05 < hi  # the case this test is about
    code, verdict, _ = run_check(run, base, "5%", capsys)
    assert code == 0 and verdict["regressed"] is False
    assert verdict["ratio"] == pytest.approx(1.08, rel=1e-5)
    assert verdict["interval"] == pytest.approx([lo, hi], rel=1e-12)
    text = verdict["text"]
    assert text.startswith("ok") and "95% interval" in text
    assert f"{lo:#.3g}x to {hi:#.3g}x" in text


def test_one_step_each_is_a_plain_threshold_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run, base = pair(tmp_path, [1000.0], [1100.0])
    code, verdict, _ = run_check(run, base, "5%", capsys)
    assert code == 1
    assert verdict["method"] == "threshold" and verdict["interval"] is None
    assert verdict["ratio"] == pytest.approx(1.1)
    assert "one step each: plain threshold, no noise estimate" in verdict["text"]
    code, verdict, _ = run_check(run, base, "15%", capsys)
    assert code == 0 and verdict["regressed"] is False


def test_without_steps_the_threshold_is_on_wall_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = write(tmp_path / "run.json", document([cpu_op("aten::mm", 0, 130)]))
    base = write(tmp_path / "base.json", document([cpu_op("aten::mm", 0, 100)]))
    code, verdict, _ = run_check(run, base, "5%", capsys)
    assert code == 1 and verdict["metric"] == "wall time"
    assert verdict["ratio"] == pytest.approx(1.3)
    assert "no noise estimate" in verdict["text"]


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "{missing}", "--baseline", "{base}"],
        ["check", "{base}", "--baseline", "{base}", "--max-regression", "abc"],
        ["check", "{base}", "--baseline", "{base}", "--max-regression", "5"],
    ],
)
def test_bad_input_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    base = write(tmp_path / "base.json", step_doc([1000.0]))
    paths = {"missing": str(tmp_path / "nope.json.gz"), "base": str(base)}
    assert main([a.format(**paths) for a in argv]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err.startswith("gpuprofile: error: ") and out.err.count("\n") == 1


def test_assert_no_regression_raises_with_the_verdict_and_passes(tmp_path: Path) -> None:
    rng = np.random.default_rng(10)
    base_us = jittered(rng, 1000, 0.01)
    slow, base = pair(tmp_path, base_us, jittered(rng, 1200, 0.01))
    with pytest.raises(AssertionError, match=r"^REGRESSION: .*interval"):
        gpuprofile.assert_no_regression(gpuprofile.load(slow), base)
    same = write(tmp_path / "same.json", step_doc(jittered(rng, 1000, 0.01)))
    verdict = gpuprofile.assert_no_regression(same, gpuprofile.load(base), max_regression="5%")
    assert isinstance(verdict, gpuprofile.RegressionCheck) and not verdict.regressed
    # 30% allowed: the slow run passes too.
    assert not gpuprofile.assert_no_regression(slow, base, max_regression=0.3).regressed


def test_a_limit_above_100_percent_is_a_percentage_only() -> None:
    from gpuprofile.errors import OptionError
    from gpuprofile.report.regression import parse_max_regression

    assert parse_max_regression("150%") == 1.5 and parse_max_regression("5%") == 0.05
    with pytest.raises(OptionError, match="write a percentage"):
        parse_max_regression("1.5")  # 1.5% or 150%? refused as ambiguous
