"""Runs named by reference: a Profile, a trace path, or a run of the history (id, label,
``last``), as a diff reads them or as a Profile."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from gpuprofile.errors import GpuprofileError, HistoryError, TraceFormatError
from gpuprofile.hardware.model import Hardware
from gpuprofile.importers.formats import read_trace
from gpuprofile.profiles.profile import Profile
from gpuprofile.report.schema import HardwareRoofs
from gpuprofile.store.history import StoredRun, open_history

if TYPE_CHECKING:
    from gpuprofile.report.diff_side import DiffSide


RunRef = Profile | str | os.PathLike[str]


def resolve_side(ref: RunRef | StoredRun | DiffSide) -> DiffSide:
    """What a diff or the CI gate reads of the run a reference names.

    Parameters:
        ref: a Profile; a StoredRun; the path of a trace (any format ``gpuprofile.load``
            reads; a job: its folder); or, in the history, a run id (or a unique prefix of
            4+ digits), a label (its newest run) or ``last``.

    Returns:
        The DiffSide; a stored run is read from its digest, without its trace.

    Raises:
        TraceFormatError: a path that is not there, or not a trace.
        HistoryError: a name the history does not hold, or a damaged history.
        GpuprofileError: anything else.
    """
    from gpuprofile.report.diff_side import DiffSide, side_of_digest

    if isinstance(ref, DiffSide):
        return ref
    run = find_run(ref)
    if isinstance(run, Profile):
        return run.diff_side()
    return side_of_digest(run.typed_report(), run.digest(), run.name())


def resolve_run(ref: RunRef | StoredRun) -> Profile:
    """The Profile a run reference names (see ``resolve_side``); a stored run needs its trace
    kept (``--keep-trace``).

    Raises:
        TraceFormatError: a path that is not there, or not a trace.
        HistoryError: a name the history does not hold, a damaged history, or a stored run
            whose trace was not kept.
    """
    run = find_run(ref)
    if isinstance(run, Profile):
        return run
    if run.trace_path is None:
        raise HistoryError(
            f"run {run.id} kept no trace (record with --keep-trace / keep_trace=True to "
            "reopen it); its report is in the history: gpuprofile history show " + run.id
        )
    if not Path(run.trace_path).exists():
        raise HistoryError(f"run {run.id}'s kept trace is gone: {run.trace_path}")
    profile = Profile(read_trace(Path(run.trace_path)), hardware=_recorded_hardware(run))
    profile._run = run
    return profile


def _recorded_hardware(run: StoredRun) -> Hardware | None:
    """The roofs the run was analysed against when recorded (a calibration, your own), so it
    reads the same again; None: the trace's datasheet, as then."""
    try:
        recorded = msgspec.convert(run.report().get("hardware"), HardwareRoofs)
    except msgspec.ValidationError:
        return None  # a report from another version: the datasheet, as for any trace
    if recorded.source in ("unknown", "datasheet"):
        return None
    try:
        return Hardware(**msgspec.structs.asdict(recorded))
    except (TypeError, ValueError):
        return None  # a report from another version: the datasheet, as for any trace


def find_run(ref: object) -> Profile | StoredRun:
    """The run a reference names, as it is at hand: a Profile or StoredRun itself; a path that
    exists, read as a trace; other text looked up in the history (id, label, ``last``)."""
    if isinstance(ref, Profile | StoredRun):
        return ref
    if not isinstance(ref, str | os.PathLike):
        raise GpuprofileError(
            f"cannot compare a {type(ref).__name__}: give a Profile, a trace path, or a run "
            "id or label of the history"
        )
    path = Path(ref)
    if path.exists():
        return Profile(read_trace(path))
    if isinstance(ref, str) and not _looks_like_a_path(ref):
        history = open_history()
        if history is None:
            raise HistoryError(
                f"{ref!r} is no trace file, and the history is off (GPUPROFILE_HISTORY=off)"
            )
        return history.get(ref)
    raise TraceFormatError(ref, "no such file or directory")


def _looks_like_a_path(text: str) -> bool:
    """A path the user meant (a folder or an extension in it), rather than a run id or label."""
    return os.sep in text or "/" in text or Path(text).suffix != ""
