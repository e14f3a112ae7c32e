"""The step-time verdict's sentence, worded once in Python: the widget shows it as given."""

from __future__ import annotations

from pathlib import Path

from gpuprofile.report.diff_schema import DiffCounts, DiffPair, DiffStepChange, Verdict
from gpuprofile.report.diff_text import MORE_SAMPLES, SINGLE_SAMPLE, step_noise_view
from helpers.html_page import div_markup


def _step(a: int, b: int, interval: list[float] | None, verdict: Verdict | None) -> DiffStepChange:
    """A diff's summary.step_ns: only its counts, interval and verdict are worded."""
    return DiffStepChange(
        a=1.0,
        b=1.0,
        delta=0.0,
        ratio=1.0,
        source=DiffPair("gpu step markers", "gpu step markers"),
        count=DiffCounts(a, b),
        interval=interval,
        confidence=0.95,
        verdict=verdict,
    )


def test_the_widget_gets_the_verdict_and_the_sentence() -> None:
    assert step_noise_view(_step(20, 20, [0.55, 0.65], "faster")) == {
        "verdict": "faster",
        "text": "95% interval of b/a 0.550x to 0.650x over 20 steps vs 20: faster",
    }


def test_too_few_steps_say_so_without_a_verdict() -> None:
    assert step_noise_view(_step(2, 1, None, None)) == {
        "verdict": "",
        "text": "2 steps vs 1: too few for a noise interval; " + MORE_SAMPLES,
    }
    assert "--steps W,N" in MORE_SAMPLES and "repeat each run" in MORE_SAMPLES


def test_one_sample_a_side_is_no_verdict_and_says_how_to_get_one() -> None:
    view = step_noise_view(None)
    assert view["verdict"] == ""
    assert view["text"].startswith("one sample a side: a single run cannot tell a change")
    assert view["text"].endswith(MORE_SAMPLES)


def test_a_diff_of_two_plain_runs_says_it_holds_one_sample_a_side(tmp_path: Path) -> None:
    """Two captures of the same plain cell (no steps): the text and the HTML diff say the
    ratios are no verdict, however far apart the walls fell."""
    import torch

    import gpuprofile

    runs = []
    for _ in range(2):
        with gpuprofile.profile(interval=None) as p:
            torch.ones(64, 64) @ torch.ones(64, 64)
        runs.append(p)
    diff = gpuprofile.diff(runs[0], runs[1])
    assert "one sample a side" in diff.text()
    with_baseline = runs[1].with_baseline(runs[0])
    assert with_baseline.widget().summary["step_noise"]["text"] == SINGLE_SAMPLE
    assert runs[1].widget().summary["step_noise"] is None  # no baseline: no comparison
    page = tmp_path / "page.html"
    with_baseline.save_html(page)
    assert "one sample a side" in div_markup(page.read_text())
