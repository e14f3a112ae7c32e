"""A sweep's report (``gpuprofile.sweep/1``, report/sweep_schema.py) from its points: a power
law fitted per subject (the whole call, each module) and metric over every repeat, a
projection at a value the user names, its text and its plot's series.

Which modules are fitted: those present at two values or more. Time is a module's forward plus
backward (inclusive of the modules it calls, as its row says); the total's time is the step.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from gpuprofile.analyses.scaling import PowerFit, describe_exponent, fit_power, project
from gpuprofile.report.sweep_layout import Series
from gpuprofile.report.sweep_schema import (
    METRICS,
    SWEEP_SCHEMA,
    TOTAL,
    Fit,
    Projected,
    Projection,
    SweepModule,
    SweepPoint,
    SweepReport,
    SweepStop,
)
from gpuprofile.units import format_bytes, format_flops, format_fraction, format_time

# Module rows a sweep's text and plot name: the heaviest at the largest value.
SHOWN_MODULES = 6
METRIC_WORDS = {"time": "time", "flops": "FLOPs", "peak_bytes": "peak memory"}


def samples(
    point: SweepPoint, rows: dict[str, SweepModule], subject: str, metric: str
) -> list[float]:
    """The subject's figures at one point, one per repeat where the repeats differ (time), else
    the point's one figure; ``rows``: the point's modules by path (``module_rows``)."""
    if subject == TOTAL:
        if metric == "time":
            return [float(v) for v in point.step_samples_ns]
        figure = point.flops if metric == "flops" else point.peak_bytes
        return [] if figure is None else [float(figure)]
    module = rows.get(subject)
    if module is None:
        return []
    if metric == "time" and module.time_samples_ns:
        return [float(v) for v in module.time_samples_ns]
    figure = _module_figure(module, metric)
    return [] if figure is None else [figure]


def module_rows(points: Sequence[SweepPoint]) -> list[dict[str, SweepModule]]:
    """Each point's modules by path, looked up once per point rather than scanned per subject."""
    return [{m.path: m for m in point.modules} for point in points]


def _module_figure(module: SweepModule, metric: str) -> float | None:
    if metric == "time":
        return float(module.forward_ns + module.backward_ns)
    if metric == "flops":
        return module.flops
    return None if module.peak_bytes is None else float(module.peak_bytes)


def subjects(points: Sequence[SweepPoint]) -> list[str]:
    """ "total" then the modules seen at two values or more, heaviest at the largest value."""
    seen: dict[str, int] = {}
    for point in points:
        for module in point.modules:
            seen[module.path] = seen.get(module.path, 0) + 1
    last = max(points, key=lambda p: p.value).modules if points else []
    weight = {m.path: m.forward_ns + m.backward_ns for m in last}
    modules = sorted((p for p, n in seen.items() if n >= 2), key=lambda p: -weight.get(p, 0))
    return [TOTAL, *modules]


def build_sweep_report(
    parameter: str,
    points: Sequence[SweepPoint],
    at: float | None = None,
    stopped: SweepStop | None = None,
) -> SweepReport:
    """The report of a sweep's points (in value order); ``at``: the value to project to;
    ``stopped``: the value that ran out of memory, when one did."""
    points = sorted(points, key=lambda p: p.value)
    rows = module_rows(points)
    fits: list[Fit] = []
    fitted: dict[tuple[str, str], PowerFit] = {}
    notes: list[str] = []
    for subject in subjects(points):
        for metric in METRICS:
            xs: list[float] = []
            ys: list[float] = []
            for point, by_path in zip(points, rows, strict=True):
                got = samples(point, by_path, subject, metric)
                xs += [point.value] * len(got)
                ys += got
            if not ys:
                continue
            fit = fit_power(xs, ys)
            if fit is None:
                if len({x for x, y in zip(xs, ys, strict=True) if y > 0}) < 2:
                    continue  # a zero or unknown figure everywhere but one value: nothing to say
                notes.append(f"{subject} {METRIC_WORDS[metric]}: no fit")
                continue
            fitted[(subject, metric)] = fit
            fits.append(
                Fit(
                    subject, metric, fit.exponent, fit.coefficient, fit.interval, fit.r2,
                    fit.samples,
                )
            )  # fmt: skip
    return SweepReport(
        schema=SWEEP_SCHEMA,
        parameter=parameter,
        values=[p.value for p in points],
        points=list(points),
        fits=fits,
        projection=_projection(fitted, at) if at is not None else None,
        notes=notes,
        stopped=stopped,
    )


def _projection(fitted: dict[tuple[str, str], PowerFit], at: float) -> Projection:
    step = fitted.get((TOTAL, "time"))
    step_value = project(step, at)[0] if step is not None else None
    figures = []
    for (subject, metric), fit in fitted.items():
        value, lo, hi = project(fit, at)
        share = value / step_value if metric == "time" and subject != TOTAL and step_value else None
        if share is not None and share > 1:  # two noisy fits that disagree: no share
            share = None
        interval = (lo, hi) if lo is not None and hi is not None else None
        figures.append(Projected(subject, metric, value, interval, share))
    return Projection(value=at, figures=figures)


def _fit_of(report: SweepReport, subject: str, metric: str) -> Fit | None:
    return next((f for f in report.fits if f.subject == subject and f.metric == metric), None)


def _fit_text(fit: Fit, symbol: str) -> str:
    return describe_exponent(fit.exponent, fit.interval, fit.r2, symbol)


def render_sweep_text(report: SweepReport) -> str:
    """ "Net.attn grows as L^2.0 in FLOPs, L^1.9 [1.7, 2.1] in time; at L=2048 it is 71% of
    the step", one line per subject, then the points."""
    symbol = report.parameter
    values = ", ".join(_value_text(v) for v in report.values)
    lines = [f"gpuprofile sweep over {symbol} = {values}"]
    shown = subjects(report.points)[: SHOWN_MODULES + 1]
    projected = {
        (f.subject, f.metric): f for f in (report.projection.figures if report.projection else [])
    }
    for subject in shown:
        parts = [
            f"{_fit_text(fit, symbol)} in {METRIC_WORDS[metric]}"
            for metric in METRICS
            if (fit := _fit_of(report, subject, metric)) is not None
        ]
        if not parts:
            continue
        name = "the step" if subject == TOTAL else subject
        line = f"  {name} grows as " + ", ".join(parts)
        at = report.projection
        if at is not None and (guess := projected.get((subject, "time"))) is not None:
            where = f"{symbol}={_value_text(at.value)}"
            what = "the step" if subject == TOTAL else "it"
            line += f"; at {where} {what} would take {format_time(guess.value)}"
            if guess.interval is not None:
                lo, hi = guess.interval
                line += f" [{format_time(lo)}, {format_time(hi)}]"
            if guess.share_of_step is not None:
                line += f", {format_fraction(guess.share_of_step, 0)} of the step"
        lines.append(line)
    lines.append("  points (medians over repeats):")
    for point in report.points:
        extra = []
        if point.flops is not None:
            extra.append(format_flops(point.flops))
        if point.peak_bytes is not None:
            extra.append(f"peak {format_bytes(point.peak_bytes)}")
        tail = f" ({', '.join(extra)})" if extra else ""
        lines.append(
            f"    {symbol}={_value_text(point.value):<8} step {format_time(point.step_ns)}, "
            f"wall {format_time(point.wall_ns)} x{point.repeats}{tail}"
        )
    lines += [f"  {note}" for note in report.notes]
    if report.stopped is not None:
        stop = report.stopped
        where = f'; its partial profile: gpuprofile.show("{stop.run}")' if stop.run else ""
        lines.append(
            f"  stopped at {symbol}={_value_text(stop.value)}, larger values not run: "
            f"{stop.error}{where}"
        )
    if len(report.points) < 2:
        lines.append("  fewer than two values ran: nothing to fit")
    return "\n".join(lines)


def _value_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def plot_series(report: SweepReport, metric: str) -> list[Series]:
    """The plot's series for one metric: each shown subject's per-value medians and its fit."""
    out = []
    rows = module_rows(report.points)
    for subject in subjects(report.points)[: SHOWN_MODULES + 1]:
        fit = _fit_of(report, subject, metric)
        xs, ys = [], []
        for point, by_path in zip(report.points, rows, strict=True):
            got = samples(point, by_path, subject, metric)
            if got:
                xs.append(point.value)
                ys.append(statistics.median(got))
        if len(xs) < 1:
            continue
        name = "step" if subject == TOTAL else subject
        out.append(
            Series(
                subject=name,
                metric=metric,
                xs=xs,
                ys=ys,
                exponent=fit.exponent if fit else None,
                coefficient=fit.coefficient if fit else None,
            )
        )
    return out
