"""gpuprofile.diff and the CI gate: two runs, given as Profiles, trace paths or runs of the
history, compared (docs/diff.md, docs/ci.md)."""

from __future__ import annotations

from gpuprofile.profiles import RunRef, resolve_side
from gpuprofile.report.diff import Diff, diff_runs
from gpuprofile.report.regression import RegressionCheck, check_runs, parse_max_regression


def diff(a: RunRef, b: RunRef) -> Diff:
    """Compare run b with run a (the baseline): wall, step time, GPU busy and idle by cause,
    each kernel's and op's time and count (matched by normalized name, else by place in the
    op tree), hints fixed / new / kept, roofline points that moved.

    Parameters:
        a: the baseline: a Profile, a trace path, or a run
            of the history (id, label, ``last``).
        b: the run to compare with it: a Profile, a trace path, or a run
            of the history (id, label, ``last``).

    Returns:
        A Diff: ``to_dict()`` (schema gpuprofile.diff/1, docs/diff.md), ``text()``.

    Raises:
        TraceFormatError: a path that is missing or not a trace.
        HistoryError: a name the history does not hold, or a damaged history.
    """
    return diff_runs(resolve_side(a), resolve_side(b))


def check(run: RunRef, baseline: RunRef, max_regression: float | str = 0.05) -> RegressionCheck:
    """Whether run is slower than baseline by more than max_regression, beyond noise: with 3
    or more steps on each side, a bootstrap interval of the ratio of median step times must
    lie wholly above 1 + max_regression; with fewer, a plain threshold (docs/ci.md).

    Parameters:
        run: the run checked: a Profile, a trace path, or a run
            of the history (id, label, ``last``).
        baseline: what it is held to: a Profile, a trace path, or a run
            of the history (id, label, ``last``).
        max_regression: the slowdown allowed: a fraction (0.05) or a percentage ("5%").

    Returns:
        A RegressionCheck: ``regressed``, ``text()``, ``to_dict()`` (gpuprofile.check/1).

    Raises:
        OptionError: a max_regression that is not a fraction or a percentage.
        TraceFormatError: a path that is missing or not a trace.
        HistoryError: a name the history does not hold, or a damaged history.
    """
    allowed = parse_max_regression(max_regression)
    return check_runs(resolve_side(run), resolve_side(baseline), allowed)


def assert_no_regression(
    profile: RunRef, baseline: RunRef, max_regression: float | str = 0.05
) -> RegressionCheck:
    """For pytest: fail when profile is slower than baseline beyond noise (``check``).

    Parameters:
        profile: the run checked: a Profile, a trace path, or a run
            of the history (id, label, ``last``).
        baseline: what it is held to: a Profile, a trace path, or a run
            of the history (id, label, ``last``).
        max_regression: the slowdown allowed: a fraction (0.05) or a percentage ("5%").

    Returns:
        The RegressionCheck, when the run did not regress.

    Raises:
        AssertionError: the run regressed; its message is the verdict's text.
    """
    verdict = check(profile, baseline, max_regression)
    if verdict.regressed:
        raise AssertionError(verdict.text())
    return verdict
