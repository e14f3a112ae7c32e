"""``gpuprofile.sweep``: the same work profiled at each value of a parameter, and how each
module's time, FLOPs and memory grow with it (report/sweep.py fits them)."""

from __future__ import annotations

import html
import math
import os
import statistics
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from gpuprofile.analyses.memory_failure import is_out_of_memory
from gpuprofile.capture.options import CaptureOptions
from gpuprofile.errors import OptionError, failure_text
from gpuprofile.profiles.block import profile
from gpuprofile.profiles.profile import Profile
from gpuprofile.report.schema import RankReport, Report
from gpuprofile.report.sweep import build_sweep_report, plot_series, render_sweep_text
from gpuprofile.report.sweep_layout import SweepPlot, sweep_layout
from gpuprofile.report.sweep_schema import (
    METRICS,
    SweepModule,
    SweepPoint,
    SweepReport,
    SweepStop,
)
from gpuprofile.report.sweep_svg import sweep_svg

STATIC_CLASS = "gpuprofile-sweep-static"
# While the widget shows, the static copy beside it is hidden; without a kernel the widget's
# empty output is.
_ARRANGE = (
    ".jp-OutputArea:has(.gpuprofile-sweep-live) > .jp-OutputArea-child:has(."
    + STATIC_CLASS
    + "){display:none}"
)
# The profile() options a sweep passes on; the history's label is the sweep's own.
_PROFILE_OPTIONS = frozenset(
    {"profile_memory", "with_stack", "record_shapes", "modules", "hardware", "interval",
     "max_events", "keep_trace"}
)  # fmt: skip


class Sweep:
    """A sweep's points and their fits: ``report(at=...)`` (schema gpuprofile.sweep/1),
    ``text()``, ``svg(metric)``, ``save_html(path)``; in a notebook, the plot and the text.

    Parameters:
        parameter: the swept parameter's name ("L").
        points: one SweepPoint per value (``gpuprofile.sweep`` makes them).
        at: the value the fits are projected to, or None.
        stopped: the value whose run ran out of memory, which ended the sweep, or None.
    """

    def __init__(
        self,
        parameter: str,
        points: Sequence[SweepPoint],
        at: float | None = None,
        stopped: SweepStop | None = None,
    ):
        self.parameter = parameter
        self.points = list(points)
        self.at = at
        self.stopped = stopped
        self._report: SweepReport | None = None

    def report(self, at: float | None = None) -> dict[str, Any]:
        """The sweep's report as plain JSON types; ``at``: project the fits to this value."""
        return msgspec.to_builtins(self.typed_report(at))  # type: ignore[no-any-return]

    def typed_report(self, at: float | None = None) -> SweepReport:
        if at is not None and at != self.at:
            return build_sweep_report(self.parameter, self.points, _checked_at(at), self.stopped)
        if self._report is None:
            self._report = build_sweep_report(self.parameter, self.points, self.at, self.stopped)
        return self._report

    def text(self) -> str:
        return render_sweep_text(self.typed_report())

    def plots(self) -> list[SweepPlot]:
        """Each measured metric's log-log plot, laid out (report/sweep_layout.py)."""
        report = self.typed_report()
        return [
            sweep_layout(self.parameter, plot_series(report, metric))
            for metric in METRICS
            if any(f.metric == metric for f in report.fits)
        ]

    def svg(self, metric: str = "time") -> str:
        """The log-log plot of one metric (time, flops, peak_bytes), per module, fitted lines."""
        if metric not in METRICS:
            raise OptionError("metric", metric, f"one of {', '.join(METRICS)}")
        return sweep_svg(sweep_layout(self.parameter, plot_series(self.typed_report(), metric)))

    def html(self) -> str:
        """The plots of every metric measured, and the text: the page ``save_html`` writes,
        and what a notebook keeps once the widget's kernel is gone (hidden while the widget
        shows)."""
        plots = "".join(f"<div>{sweep_svg(plot)}</div>" for plot in self.plots())
        return (
            f'<div class="{STATIC_CLASS}"><style>{_ARRANGE}</style>{plots}'
            f"<pre>{html.escape(self.text())}</pre></div>"
        )

    def save_html(self, path: str | os.PathLike[str]) -> int:
        """A standalone page of the sweep (opens offline); returns the bytes written."""
        page = (
            "<!doctype html><html><head><meta charset='utf-8'>"
            f"<title>gpuprofile sweep over {html.escape(self.parameter)}</title></head>"
            f"<body>{self.html()}</body></html>"
        )
        data = page.encode()
        Path(path).write_bytes(data)
        return len(data)

    def __repr__(self) -> str:
        values = ", ".join(f"{p.value:g}" for p in self.points)
        return f"<gpuprofile Sweep {self.parameter} = {values}>"

    def __str__(self) -> str:
        return self.text()

    def widget(self) -> Any:
        """The notebook widget: the plots drawn as laid out, and the text."""
        from gpuprofile.widget.sweep_widget import sweep_widget

        return sweep_widget(self.plots(), self.text())

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, str]:
        return {"text/plain": self.text(), "text/html": self.html()}

    def _ipython_display_(self) -> None:
        """In a kernel: the widget, then the static page a saved notebook keeps; else text."""
        from IPython.display import display

        from gpuprofile.profiles.profile import in_kernel

        if in_kernel():
            display(self.widget())
        display(self._repr_mimebundle_(), raw=True)


def sweep(
    fn: Callable[[Any], Any],
    values: Iterable[float],
    *,
    name: str = "x",
    repeat: int = 3,
    warmup: int = 1,
    at: float | None = None,
    label: str | None = None,
    **options: Any,
) -> Sweep:
    """Profile ``fn(v)`` for each value and fit how its cost grows with ``v``.

    Parameters:
        fn: called with each value; the warm-up calls are not profiled.
        values: the parameter's values, numbers above 0 (a power law needs them), two or more.
        name: the parameter's name in the texts and plots ("L").
        repeat: profiled calls per value; their medians are the point, and every repeat is a
            sample of the fits (3 or more give each exponent an interval).
        warmup: unprofiled calls per value before its repeats (compilation, caches, the
            allocator's first segments).
        at: project the fits to this value (``report(at=...)`` can name another).
        label: the history's label of each run is "{label or 'sweep'} {name}={v}".
        options: ``gpuprofile.profile()``'s options (``profile_memory=True`` for memory).

    Returns:
        A Sweep; each profiled call is recorded in the history as ``profile()`` records it.
        A value whose call runs out of memory ends the sweep there (larger values would too):
        the Sweep holds the values before it, and ``stopped`` names it and its failed run,
        whose partial profile has the post-mortem (with ``profile_memory=True``).

    Raises:
        OptionError: bad values or options, before anything runs.
        Any other exception ``fn`` raises, with the finished points as its
        ``gpuprofile_sweep`` (a Sweep).
    """
    if not callable(fn):
        raise OptionError("fn", fn, "a function, called with each value")
    values = _checked_values(values)
    for option, given, least in (("repeat", repeat, 1), ("warmup", warmup, 0)):
        if isinstance(given, bool) or not isinstance(given, int) or given < least:
            raise OptionError(option, given, f"a whole number, {least} or more")
    for option in sorted(set(options) - _PROFILE_OPTIONS):
        if option in _WHOLE_RUN:
            raise OptionError(option, options[option], _WHOLE_RUN_PROBLEM)
        raise OptionError(option, options[option], f"profile() takes {sorted(_PROFILE_OPTIONS)}")
    if at is not None:
        at = _checked_at(at)
    points: list[SweepPoint] = []
    for value in values:
        current: Profile | None = None  # the run under way, for its id when it fails
        try:
            for _ in range(warmup):
                fn(value)
            profiles = []
            for _ in range(repeat):
                current = None
                with profile(label=f"{label or 'sweep'} {name}={value:g}", **options) as made:
                    current = made
                    fn(value)
                profiles.append(made)
        except Exception as error:
            text = failure_text(error)
            if not is_out_of_memory(text):
                # The finished points are not lost: the error carries them.
                error.gpuprofile_sweep = Sweep(name, points, at)  # type: ignore[attr-defined]
                if hasattr(error, "add_note"):
                    error.add_note(
                        f"gpuprofile.sweep: {len(points)} values finished before {name}="
                        f"{value:g}; the partial sweep is this error's gpuprofile_sweep"
                    )
                raise
            # Running out of memory is where a sweep of sizes ends: larger values would too.
            run = current.run.id if current is not None and current.run is not None else None
            return Sweep(name, points, at, SweepStop(float(value), text, run))
        points.append(sweep_point(value, profiles))
    return Sweep(name, points, at)


_WHOLE_RUN = ("steps", "distributed", "export")
_WHOLE_RUN_PROBLEM = "a sweep profiles each run whole, on one process, into the history"


def sweep_options(options: CaptureOptions) -> dict[str, Any]:
    """``%%gpuprofile``'s parsed options as a sweep's profile() keywords; those a sweep cannot
    take (steps windows, a job, one export file) refused."""
    for name in _WHOLE_RUN:
        if given := getattr(options, name):
            raise OptionError(name, given, _WHOLE_RUN_PROBLEM)
    # profile()'s keywords are CaptureOptions' field names.
    return {name: getattr(options, name) for name in _PROFILE_OPTIONS if name != "keep_trace"}


def sweep_point(value: float, profiles: Sequence[Profile]) -> SweepPoint:
    """A point from its repeats' profiles: medians of the walls, steps and module rows."""
    reports = [p.typed_report() for p in profiles]
    walls = [_wall(r) for r in reports]
    steps = [_step(p, r) for p, r in zip(profiles, reports, strict=True)]
    rows: dict[str, list[Any]] = {}
    for report in reports:
        for row in _rank(report).modules:
            rows.setdefault(row.path, []).append(row)
    modules = [
        SweepModule(
            path=path,
            type=found[0].type,
            forward_ns=int(statistics.median(r.forward_ns for r in found)),
            backward_ns=int(statistics.median(r.backward_ns for r in found)),
            gpu_ns=int(statistics.median(r.gpu_ns for r in found)),
            flops=_median([r.flops for r in found]),
            alloc_bytes=_int(_median([r.alloc_bytes for r in found])),
            peak_bytes=_int(_median([r.peak_bytes for r in found])),
            time_samples_ns=[r.forward_ns + r.backward_ns for r in found],
        )
        for path, found in rows.items()
    ]
    runs = [p.run.id for p in profiles if p.run is not None]
    return SweepPoint(
        value=float(value),
        wall_ns=int(statistics.median(walls)),
        step_ns=int(statistics.median(steps)),
        repeats=len(profiles),
        wall_samples_ns=walls,
        step_samples_ns=steps,
        runs=runs,
        modules=modules,
        flops=_median([_flops(r) for r in reports]),
        peak_bytes=_int(_median([_peak(r) for r in reports])),
    )


def _rank(report: Report) -> RankReport:
    return report.ranks[0]


def _wall(report: Report) -> int:
    return _rank(report).wall_ns


def _step(profile: Profile, report: Report) -> int:
    """The wall per step the capture counted (optimizer steps, gpuprofile.step()), else the wall."""
    steps = profile.trace.meta.steps
    count = steps.count if steps is not None else 0
    return _wall(report) // count if count > 0 else _wall(report)


def _flops(report: Report) -> float | None:
    """The call's counted FLOPs: its root modules' (they hold every module's), else none."""
    roots = [r.flops for r in _rank(report).modules if r.depth == 0 and r.flops is not None]
    return float(sum(roots)) if roots else None


def _peak(report: Report) -> int | None:
    memory = _rank(report).memory
    return memory.peak.total_bytes if memory is not None else None


def _median(values: Sequence[float | int | None]) -> float | None:
    known = [float(v) for v in values if v is not None]
    return statistics.median(known) if known else None


def _int(value: float | None) -> int | None:
    return None if value is None else int(value)


def _checked_values(values: Iterable[float]) -> list[float]:
    listed = list(values)
    for value in listed:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise OptionError("values", value, "a sweep's values are numbers")
        if not (math.isfinite(value) and value > 0):
            raise OptionError("values", value, "a power law needs values above 0")
    if len(set(listed)) < 2:
        raise OptionError("values", listed, "two different values or more")
    return listed


def _checked_at(at: float) -> float:
    if (
        isinstance(at, bool)
        or not isinstance(at, int | float)
        or not (math.isfinite(at) and at > 0)
    ):
        raise OptionError("at", at, "a number above 0")
    return float(at)
