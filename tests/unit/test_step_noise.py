"""The step-time verdict's sentence, worded once in Python: the widget shows it as given."""

from __future__ import annotations

from gpuprofile.report.diff_schema import DiffCounts, DiffPair, DiffStepChange, Verdict
from gpuprofile.report.diff_text import step_noise_view


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
        "text": "2 steps vs 1: too few for a noise interval",
    }


def test_no_steps_or_no_baseline_say_nothing() -> None:
    assert step_noise_view(None) is None
