"""The step-time verdict's sentence, worded once in Python: the widget shows it as given."""

from __future__ import annotations

from gpuprofile.report.diff_text import step_noise_view


def _diff(step: dict[str, object] | None) -> dict[str, object]:
    return {"summary": {"step_ns": step}}


def test_the_widget_gets_the_verdict_and_the_sentence() -> None:
    step = {
        "count": {"a": 20, "b": 20},
        "interval": [0.55, 0.65],
        "confidence": 0.95,
        "verdict": "faster",
    }
    assert step_noise_view(_diff(step)) == {
        "verdict": "faster",
        "text": "95% interval of b/a 0.550x to 0.650x over 20 steps vs 20: faster",
    }


def test_too_few_steps_say_so_without_a_verdict() -> None:
    step = {"count": {"a": 2, "b": 1}, "interval": None, "confidence": 0.95, "verdict": None}
    assert step_noise_view(_diff(step)) == {
        "verdict": "",
        "text": "2 steps vs 1: too few for a noise interval",
    }


def test_no_steps_or_no_baseline_say_nothing() -> None:
    assert step_noise_view(_diff(None)) is None
    assert step_noise_view(None) is None
