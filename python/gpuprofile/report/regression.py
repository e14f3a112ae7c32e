"""Did a run get slower than its baseline, beyond noise? (schema ``gpuprofile.check/1``,
docs/ci.md)

With at least MIN_STEPS steps on each side the step-time distributions are compared: a
percentile bootstrap of the ratio of medians (run / baseline) gives a confidence interval, and
the run regressed only when the whole interval lies above 1 + max_regression. With fewer steps
there is no noise estimate: a plain threshold on the median step (or on wall time).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from gpuprofile.errors import GpuprofileError, OptionError
from gpuprofile.report.diff_side import DiffSide
from gpuprofile.report.schema import Report
from gpuprofile.units import format_count, format_fraction, format_si, format_time

SCHEMA = "gpuprofile.check/1"
MIN_STEPS = 3  # fewer steps than this on either side: no noise estimate
CONFIDENCE = 0.95
RESAMPLES = 2000
SEED = 0  # fixed, so a CI gate gives the same verdict on the same files

_PERCENT = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*%\s*$")


@dataclass(frozen=True)
class RegressionCheck:
    """The verdict of ``gpuprofile check`` / ``assert_no_regression``.

    Parameters:
        baseline, run: what each side was (a trace path, or "profile").
        metric: "step time" or "wall time".
        method: "bootstrap" (an interval from the step-time distributions) or "threshold".
        ratio: run / baseline of the metric (of the medians for step time).
        interval: the bootstrap's confidence interval of the ratio; None for a threshold.
        max_regression: the slowdown allowed, a fraction (0.05: 5%).
        regressed: whether the run is slower than allowed (beyond noise, with an interval).
        summary: the verdict in one or two sentences (what ``text()`` returns).
    """

    baseline: str
    run: str
    metric: str
    method: Literal["bootstrap", "threshold"]
    ratio: float
    interval: tuple[float, float] | None
    max_regression: float
    regressed: bool
    summary: str

    def to_dict(self) -> dict[str, Any]:
        """The verdict as plain JSON types (schema gpuprofile.check/1, docs/ci.md)."""
        return {
            "schema": SCHEMA,
            "baseline": self.baseline,
            "run": self.run,
            "metric": self.metric,
            "method": self.method,
            "ratio": self.ratio,
            "interval": list(self.interval) if self.interval else None,
            "max_regression": self.max_regression,
            "regressed": self.regressed,
            "text": self.summary,
        }

    def text(self) -> str:
        """The verdict as text."""
        return self.summary

    def __str__(self) -> str:
        return self.summary


def parse_max_regression(value: float | str) -> float:
    """The slowdown allowed as a fraction: "5%" and 0.05 and "0.05" all give 0.05.

    Parameters:
        value: a fraction (0 to 1) or a percentage written with "%" (any, 150% included:
            "fail only past 2.5x").

    Returns:
        The fraction.

    Raises:
        OptionError: anything else (a bare number above 1 is ambiguous: write "5%" or 0.05).
    """
    text = str(value)
    percent = _PERCENT.match(text)
    try:
        fraction = float(percent.group(1)) / 100 if percent else float(text)
    except ValueError:
        raise OptionError(
            "max_regression", value, "give a fraction (0.05) or a percentage (5%)"
        ) from None
    if percent and fraction != float("inf"):
        return fraction
    if not 0 <= fraction <= 1 or fraction != fraction:
        raise OptionError(
            "max_regression",
            value,
            "a bare number must lie between 0 and 1 (0.05); above that, write a percentage (150%)",
        )
    return fraction


def bootstrap_ratio_interval(
    run: np.ndarray,
    baseline: np.ndarray,
    *,
    confidence: float = CONFIDENCE,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> tuple[float, float]:
    """Percentile bootstrap interval of median(run) / median(baseline).

    Parameters:
        run, baseline: each side's step times (positive).
        confidence: the interval's coverage (0.95).
        resamples: bootstrap resamples (2000).
        seed: of ``numpy.random.default_rng``; the run's resample indices are drawn first
            (resamples x len(run)), then the baseline's.

    Returns:
        (lo, hi): the (1 - confidence) / 2 and (1 + confidence) / 2 quantiles of the
        resampled ratios.
    """
    rng = np.random.default_rng(seed)
    run_picks = rng.integers(0, len(run), size=(resamples, len(run)))
    base_picks = rng.integers(0, len(baseline), size=(resamples, len(baseline)))
    ratios = np.median(run[run_picks], axis=1) / np.median(baseline[base_picks], axis=1)
    tail = (1 - confidence) / 2
    lo, hi = np.quantile(ratios, [tail, 1 - tail])
    return float(lo), float(hi)


def check_runs(run: DiffSide, base: DiffSide, max_regression: float) -> RegressionCheck:
    """Whether the run is slower than its baseline by more than max_regression, beyond noise.

    Parameters:
        run: the run checked.
        base: the baseline.
        max_regression: the slowdown allowed, a fraction (0.05: 5%).

    Returns:
        The RegressionCheck.

    Raises:
        GpuprofileError: the baseline took no time to compare with.
    """
    run_report, base_report = run.report, base.report
    run_steps, run_from = run.positive_steps, run.steps_from
    base_steps, base_from = base.positive_steps, base.steps_from
    limit = 1 + max_regression
    names = {"run": _name(run_report), "baseline": _name(base_report)}
    if len(run_steps) >= MIN_STEPS and len(base_steps) >= MIN_STEPS:
        run_median, base_median = float(np.median(run_steps)), float(np.median(base_steps))
        ratio = run_median / base_median
        lo, hi = bootstrap_ratio_interval(run_steps, base_steps)
        regressed = lo > limit
        where = (
            "lies above"
            if regressed
            else "lies below"
            if hi <= limit
            else "straddles (within noise)"
        )
        summary = (
            f"{_verdict(regressed)}: median step time {format_time(run_median)} vs "
            f"{format_time(base_median)}, {format_si(ratio)}x the baseline; "
            f"{format_fraction(CONFIDENCE, 0)} interval {format_si(lo)}x to {format_si(hi)}x "
            f"{where} the {format_si(limit)}x limit "
            f"(bootstrap of the ratio of medians: {format_count(len(run_steps), 'step')} vs "
            f"{format_count(len(base_steps), 'step')}, {format_count(RESAMPLES)} resamples; "
            f"steps from {_sources(run_from, base_from)})"
        )
        return RegressionCheck(
            **names,
            metric="step time",
            method="bootstrap",
            ratio=ratio,
            interval=(lo, hi),
            max_regression=max_regression,
            regressed=regressed,
            summary=summary,
        )
    return _threshold(run_steps, base_steps, run_report, base_report, max_regression, names)


def _threshold(
    run_steps: np.ndarray,
    base_steps: np.ndarray,
    run_report: Report,
    base_report: Report,
    max_regression: float,
    names: dict[str, str],
) -> RegressionCheck:
    """Too few steps for a noise estimate: the median step when both sides have one, else
    the wall time, against 1 + max_regression."""
    if len(run_steps) and len(base_steps):
        metric = "step time"
        run_ns, base_ns = float(np.median(run_steps)), float(np.median(base_steps))
    else:
        metric = "wall time"
        run_ns = float(sum(r.wall_ns for r in run_report.ranks))
        base_ns = float(sum(r.wall_ns for r in base_report.ranks))
    if base_ns <= 0:
        raise GpuprofileError(f"the baseline's {metric} is 0: nothing to compare with")
    if len(run_steps) == 1 and len(base_steps) == 1:
        why = "one step each: plain threshold, no noise estimate"
    else:
        why = (
            f"{format_count(len(run_steps), 'step')} vs {format_count(len(base_steps), 'step')} "
            f"(fewer than {MIN_STEPS} on a side): plain threshold on {metric}, no noise estimate"
        )
    ratio = run_ns / base_ns
    limit = 1 + max_regression
    regressed = ratio > limit
    summary = (
        f"{_verdict(regressed)}: {metric} {format_time(run_ns)} vs {format_time(base_ns)}, "
        f"{format_si(ratio)}x the baseline, {'above' if regressed else 'within'} the "
        f"{format_si(limit)}x limit ({why})"
    )
    return RegressionCheck(
        **names,
        metric=metric,
        method="threshold",
        ratio=ratio,
        interval=None,
        max_regression=max_regression,
        regressed=regressed,
        summary=summary,
    )


def _sources(run_from: str | None, base_from: str | None) -> str:
    return str(run_from) if run_from == base_from else f"{run_from} (run), {base_from} (baseline)"


def _verdict(regressed: bool) -> str:
    return "REGRESSION" if regressed else "ok"


def _name(report: Report) -> str:
    path = report.source.path
    return str(path) if path else "profile"
