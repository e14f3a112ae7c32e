"""gpuprofile.diff: two runs, given as Profiles or trace paths, compared (docs/diff.md)."""

from __future__ import annotations

import os
from pathlib import Path

from gpuprofile.errors import GpuprofileError, TraceFormatError
from gpuprofile.importers.formats import read_trace
from gpuprofile.profiles import Profile
from gpuprofile.report.diff import Diff, diff_runs

RunRef = Profile | str | os.PathLike[str]


def resolve_run(ref: RunRef) -> Profile:
    """The Profile a run reference names: a Profile itself, or the path of a trace (any format
    ``gpuprofile.load`` reads; a job: its folder).

    Parameters:
        ref: a Profile, or a path.

    Returns:
        The Profile.

    Raises:
        TraceFormatError: a path that is not there, or not a trace.
        GpuprofileError: anything else (run ids, labels and ``last`` need the history store,
            not built yet).
    """
    if isinstance(ref, Profile):
        return ref
    if isinstance(ref, str | os.PathLike):
        path = Path(ref)
        if path.exists():
            return Profile(read_trace(path))
        if isinstance(ref, str) and not _looks_like_a_path(ref):
            raise GpuprofileError(
                f"{ref!r} is no trace file: run ids and labels need the history store "
                "(not built yet); give a trace path or a Profile"
            )
        raise TraceFormatError(ref, "no such file or directory")
    raise GpuprofileError(
        f"cannot compare a {type(ref).__name__}: give a Profile or a trace path "
        "(run ids and labels need the history store, not built yet)"
    )


def _looks_like_a_path(text: str) -> bool:
    """A path the user meant (a folder or an extension in it), rather than a run id or label."""
    return os.sep in text or "/" in text or Path(text).suffix != ""


def diff(a: RunRef, b: RunRef) -> Diff:
    """Compare run b with run a (the baseline): wall, step time, GPU busy and idle by cause,
    each kernel's and op's time and count (matched by normalized name, else by place in the
    op tree), hints fixed / new / kept, roofline points that moved.

    Parameters:
        a: the baseline: a Profile or a trace path.
        b: the run to compare with it: a Profile or a trace path.

    Returns:
        A Diff: ``to_dict()`` (schema gpuprofile.diff/1, docs/diff.md), ``text()``.

    Raises:
        TraceFormatError: a path that is missing or not a trace.
        GpuprofileError: a reference that is neither (run ids and labels need the history
            store, not built yet).
    """
    first, second = resolve_run(a), resolve_run(b)
    return diff_runs(first.trace, first.report(), second.trace, second.report())
