"""gpuprofile.show: a recorded run brought back into the notebook."""

from __future__ import annotations

from html import escape
from typing import Any

from gpuprofile.profiles.runs import RunRef, find_run, resolve_run
from gpuprofile.store.history import StoredRun


def show(run: RunRef | StoredRun) -> Any:
    """Show a run in the notebook: the interactive widget when its trace is at hand (a
    Profile, a trace path, or a run recorded with ``--keep-trace``), else its recorded report
    as a static snapshot.

    Parameters:
        run: a Profile, a trace path, a StoredRun, or a run of the history: its id (or a
            unique prefix), its label, or ``"last"``.

    Returns:
        What a cell's last expression shows: the Profile, or the snapshot of a run whose
        trace was not kept.

    Raises:
        TraceFormatError: a path that is missing or not a trace.
        HistoryError: a name the history does not hold, or a damaged history.
    """
    found = find_run(run)
    if isinstance(found, StoredRun) and found.trace_path is None:
        return _Snapshot(found)
    return resolve_run(found)


class _Snapshot:
    """A stored run without its trace: its report, as the saved notebook shows it."""

    def __init__(self, run: StoredRun) -> None:
        self.run = run

    def __repr__(self) -> str:
        return f"<gpuprofile run {self.run.id}: report only (trace not kept)>"

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        from gpuprofile.report.snapshot import render_snapshot
        from gpuprofile.report.text import render_text

        report = self.run.typed_report()
        note = (
            f"run {self.run.id} kept no trace, so there is no timeline to explore; record with "
            "--keep-trace (keep_trace=True) to bring the widget back."
        )
        html = f"<p>{escape(note)}</p>" + render_snapshot(report, None)
        data = {"text/html": html, "text/plain": note + "\n\n" + render_text(report)}
        return data, {"gpuprofile": {"snapshot": True, "run_id": self.run.id}}
