"""A Profile: one Trace with its analysis; the report, the text, the widget and the snapshot are
renderings of it."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from gpuprofile.capture.recording import Recording
from gpuprofile.collector import collector_paused
from gpuprofile.errors import HistoryError
from gpuprofile.hardware.model import Hardware
from gpuprofile.store.history import StoredRun, open_history
from gpuprofile.store.origin import Origin, script_origin
from gpuprofile.trace.model import TIMELINE_TABLES, Trace
from gpuprofile.units import format_count

if TYPE_CHECKING:
    import pandas as pd

    from gpuprofile.analyses.context import Analysis
    from gpuprofile.report.diff_side import DiffSide
    from gpuprofile.report.schema import Report
    from gpuprofile.store.history import History
    from gpuprofile.widget.widget import ProfileWidget


class Profile:
    """A profiled run: its ``trace``, the ``analysis`` against the roofs of its hardware, and
    their renderings: ``report()`` (a dict; ``typed_report()`` the same as report/schema.py's
    Structs), ``text()`` (also ``str(profile)``) and
    ``widget()`` (what a notebook displays).

    Parameters:
        trace: the Trace, or the Recording of a capture still running (the Profile can be
            used once its block has ended).
        hardware: the roofs to analyse against; None: the datasheet of the device the trace
            names (see ``gpuprofile.calibrate()``).
        baseline: the run this one is compared with (``resolve_side(ref)``, or a Profile's
            ``diff_side()``): ``report()["baseline"]`` is then the
            diff (``gpuprofile.diff(baseline, self)``, schema gpuprofile.diff/1), and the text,
            the widget and the HTML page show it.
    """

    def __init__(
        self,
        trace: Trace | Recording,
        *,
        hardware: Hardware | None = None,
        baseline: DiffSide | None = None,
    ) -> None:
        self._source = trace
        self._hardware = hardware
        self._baseline = baseline
        self._analysis: Analysis | None = None
        self._report: Report | None = None
        self._report_json: dict[str, Any] | None = None
        self._text: str | None = None
        self._widget: ProfileWidget | None = None
        self._side: DiffSide | None = None
        self._run: StoredRun | None = None

    @property
    def trace(self) -> Trace:
        """The trace; a job's ranks on one clock (the analysis aligns them)."""
        recorded = self._recorded()
        return self.analysis.trace if len(recorded.meta.ranks) > 1 else recorded

    def _recorded(self) -> Trace:
        source = self._source
        return source if isinstance(source, Trace) else source.trace

    @property
    def partial(self) -> bool:
        """The profiled code raised before it finished: this covers only what ran."""
        return self._recorded().meta.partial

    @property
    def analysis(self) -> Analysis:
        """The trace with its hardware roofs, and what is derived from both."""
        if self._analysis is None:
            from gpuprofile.analyses.context import Analysis

            self._analysis = Analysis(self._recorded(), self._hardware)
        return self._analysis

    @property
    def baseline(self) -> DiffSide | None:
        """The run this one is compared with (as a diff reads it), or None."""
        return self._baseline

    def with_hardware(self, hardware: Hardware) -> Profile:
        """The same trace analysed against other roofs (measured, or your own)."""
        return Profile(self._recorded(), hardware=hardware, baseline=self._baseline)

    def with_baseline(self, baseline: Profile | DiffSide) -> Profile:
        """The same profile compared with a baseline run (its analysis is shared, not redone).

        Parameters:
            baseline: a Profile, or a run as ``gpuprofile.profiles.resolve_side`` gives it
                (from a trace path, or a run id, label or ``last`` of the history).

        Returns:
            A new Profile whose ``report()["baseline"]`` is the diff against it.
        """
        side = baseline.diff_side() if isinstance(baseline, Profile) else baseline
        other = Profile(self._source, hardware=self._hardware, baseline=side)
        other._analysis = self._analysis
        return other

    def report(self) -> dict[str, Any]:
        """The versioned report dict (schema gpuprofile.report/1), as `--format json` prints;
        with a baseline, its "baseline" key holds the diff against it (a: the baseline)."""
        if self._report_json is None:
            from gpuprofile.report.schema import report_json

            with collector_paused():
                self._report_json = report_json(self.typed_report())
        return self._report_json

    def typed_report(self) -> Report:
        """The report as the Structs of report/schema.py, what every view reads; ``report()``
        is its JSON."""
        if self._report is None:
            from gpuprofile.report.build import build_report

            with collector_paused():
                report = build_report(self.analysis)
            if self._baseline is not None:
                from gpuprofile.report.diff import diff_runs
                from gpuprofile.report.diff_side import side_of_trace

                # The side diff_side() and the history read too: made once.
                self._side = side_of_trace(self.trace, report)
                changes = diff_runs(self._baseline, self._side)
                report = msgspec.structs.replace(report, baseline=changes.document)
            self._report = report
        return self._report

    def diff_side(self) -> DiffSide:
        """This run as a diff and the CI gate read it (made once; named by its run in the
        history once recorded)."""
        if self._side is None:
            from gpuprofile.report.diff_side import side_of_trace

            self._side = side_of_trace(self.trace, self.typed_report())
        if self._run is not None and self._side.run is None:
            self._side = dataclasses.replace(self._side, run=self._run.name())
        return self._side

    @property
    def run(self) -> StoredRun | None:
        """The run this profile was recorded as in the history (None: not recorded)."""
        return self._run

    def save(
        self,
        *,
        label: str | None = None,
        keep_trace: bool = False,
        origin: Origin | None = None,
        history: History | None = None,
    ) -> StoredRun:
        """Record this profile in the history (``%%gpuprofile`` and ``profile()`` do it
        themselves; this is for a loaded trace or another label).

        Parameters:
            label: a name to find the run by (``gpuprofile diff before after``).
            keep_trace: also keep the trace (a Chrome trace beside the store), so
                ``gpuprofile.show(run)`` can bring the timeline back.
            origin: where the run came from; None: the running script.
            history: the store; None: where GPUPROFILE_HISTORY or the user's data folder say.

        Returns:
            The StoredRun (also ``profile.run``).

        Raises:
            HistoryError: the history is off, damaged, or stays locked.
        """
        from gpuprofile.report.diff_side import digest

        store = history or open_history()
        if store is None:
            raise HistoryError("the history is off (GPUPROFILE_HISTORY=off): nothing recorded")
        run_id = store.new_id()
        kept = None
        if keep_trace:
            kept = store.traces / f"{run_id}.json.gz"
            try:
                store.traces.mkdir(parents=True, exist_ok=True)
                self.export_trace(kept)
            except OSError as error:
                raise HistoryError(f"cannot keep the trace in {store.traces}: {error}") from None
        self._run = store.record(
            self.typed_report(),
            digest(self.diff_side()),
            run_id=run_id,
            label=label,
            origin=origin or script_origin(),
            framework=dict(self._recorded().meta.framework),
            trace_path=str(kept) if kept else None,
        )
        return self._run

    def text(self) -> str:
        """The report as plain text (what ``print(profile)`` shows)."""
        if self._text is None:
            from gpuprofile.report.text import render_text

            self._text = render_text(self.typed_report())
        return self._text

    def widget(self) -> ProfileWidget:
        """The notebook widget, made once: displaying a Profile again shows the same widget
        rather than holding another copy of the timeline in the kernel."""
        # A closed widget (its cell re-ran, see magic.py) cannot be shown again: a new one.
        if self._widget is None or self._widget.comm is None:
            from gpuprofile.widget.widget import ProfileWidget

            self.fill_widget(ProfileWidget())
        assert self._widget is not None
        return self._widget

    def fill_widget(self, widget: ProfileWidget) -> None:
        """Show this profile in a widget (a new one, or the live one of a running cell); it
        becomes this Profile's widget."""
        from gpuprofile.widget.widget import show_result

        show_result(widget, self.typed_report(), self.text(), self.trace, self.analysis)
        self._widget = widget

    def kernels(self) -> pd.DataFrame:
        """The GPU kernels, one row each, as a new DataFrame (changing it leaves the trace as it
        is): id, rank, device, stream, name, kind (compute, communication, memory, sync),
        start_ns, dur_ns, grid_x/y/z, block_x/y/z, registers_per_thread, shared_memory,
        occupancy (%), blocks_per_sm, flops and bytes (measured on the launch; NaN: not
        measured), collective, comm_bytes, correlation, external_id, op_id (the launching op's
        id in ``ops()``). Unknown ids and counts are <NA>. docs/data.md has the details."""
        from gpuprofile.report.tables import kernel_table

        return kernel_table(self.trace, self.analysis.kernel_classes)

    def ops(self) -> pd.DataFrame:
        """The CPU ops, one row each, as a new DataFrame: id, rank, pid, tid, name, category
        (cpu_op, user_annotation, python_function...), start_ns, dur_ns, parent (the enclosing
        op's id; <NA> at the top), depth, input_dims and input_types (the JSON text the trace
        recorded), flops and flops_source ("measured", "computed" from the shapes, "unknown"),
        external_id. docs/data.md has the details."""
        from gpuprofile.report.tables import op_table

        return op_table(self.trace, self.analysis.op_costs)

    def copies(self) -> pd.DataFrame:
        """The memory copies, one row each, as a new DataFrame: id, rank, device, stream, name,
        kind (HtoD, DtoH, DtoD, HtoH, PtoP, unknown), pinned (host side page-locked), start_ns,
        dur_ns, bytes, bytes_per_s (achieved), correlation, external_id. docs/data.md has the
        details."""
        from gpuprofile.report.tables import copy_table

        return copy_table(self.trace)

    def to_parquet(self, directory: str | os.PathLike[str]) -> list[str]:
        """Write kernels, ops, copies (as the methods above return them) and the trace's
        memset, runtime and counters tables as ``NAME.parquet``, and its meta as ``meta.json``,
        into ``directory`` (made if missing). Needs pyarrow: ``pip install
        'gpuprofile[parquet]'``. Returns the paths written."""
        from gpuprofile.report.parquet import write_parquet

        frames = {"kernels": self.kernels(), "ops": self.ops(), "copies": self.copies()}
        return [str(p) for p in write_parquet(self.trace, frames, directory)]

    def export_trace(self, path: str | os.PathLike[str]) -> int:
        """Write the trace as a Chrome / Perfetto trace (JSON; gzip when the name ends in
        .gz): ranks as processes, CPU threads and GPU streams as threads, flows from runtime
        calls to the GPU work they launched (docs/data.md). Returns the events written."""
        from gpuprofile.report.chrome_trace import write_chrome_trace

        return write_chrome_trace(self.trace, path)

    def save_html(self, path: str | os.PathLike[str]) -> int:
        """Write the profile as one self-contained HTML page that opens offline: summary,
        gauges, the kernel timeline by stream, the roofline and the hints (docs/html.md).
        Parameters: path: the file to write; its directory must exist. Returns the bytes
        written."""
        from gpuprofile.report.html import write_html

        return write_html(self.typed_report(), self.trace, path)

    def snapshot_html(self, run_id: str | None = None) -> str:
        """The profile as a static HTML snapshot of at most ~300 KB, what a saved notebook
        keeps of it (docs/widget.md): summary, gauges, timeline and roofline pictures, hints.

        Parameters:
            run_id: the run's id in the history; the snapshot then says how to reopen it.
        Returns the HTML fragment (no script, every trace name escaped)."""
        from gpuprofile.report.snapshot import render_snapshot

        kept = self._run is not None and self._run.id == run_id and bool(self._run.trace_path)
        return render_snapshot(self.typed_report(), self.trace, run_id=run_id, trace_kept=kept)

    def __repr__(self) -> str:
        # One line, from what is already known: no analysis, no report.
        source = self._source
        if isinstance(source, Recording) and not source.done:
            return "<gpuprofile.Profile (recording)>"
        trace = self._recorded()
        where = trace.meta.source.path
        events = sum(len(trace.table(t)) for t in TIMELINE_TABLES)
        ranks = len(trace.ranks)
        return (
            f"<gpuprofile.Profile {trace.meta.source.format}"
            + (f" {os.path.basename(where)!r}" if where else "")
            + f": {format_count(ranks, 'rank')}, {format_count(events, 'event')}"
            + (", partial" if trace.meta.partial else "")
            + ">"
        )

    def __str__(self) -> str:
        return self.text()

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        # The widget view for Jupyter frontends; the text report for everything else, where a
        # widget would only cost time and memory (terminal IPython has no kernel to talk to).
        if not in_kernel():
            return {"text/plain": self.text()}, {}
        bundle: Any = self.widget()._repr_mimebundle_(**kwargs)
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
        return {**data, "text/plain": self.text()}, metadata

    @property
    def _ipython_display_(self) -> Callable[[], None]:
        # In a kernel a Profile is two outputs (widget_outputs), which one mime bundle cannot
        # say. Elsewhere (terminal IPython) the AttributeError makes IPython fall back to
        # _repr_mimebundle_: the text report, as before.
        if not in_kernel():
            raise AttributeError("_ipython_display_")
        return lambda: show_outputs(self)


def widget_outputs(
    profile: Profile, run_id: str | None = None
) -> tuple[tuple[dict[str, Any], dict[str, Any]], tuple[dict[str, Any], dict[str, Any]]]:
    """The two outputs (data, metadata) a notebook shows for a profile: the live widget, and
    the static snapshot that a saved notebook keeps once the widget's kernel is gone. The
    snapshot's own style hides it while the widget is rendered (report/snapshot.py).

    Parameters:
        profile: the Profile, whose widget is made (or reused).
        run_id: the run's id in the history, named in the snapshot; None: the one the
            profile was recorded as, if it was.
    Returns ((widget data, metadata), (snapshot data, metadata))."""
    return widget_output(profile.widget()), snapshot_output(profile, run_id)


def widget_output(widget: ProfileWidget) -> tuple[dict[str, Any], dict[str, Any]]:
    """A widget's output (data, metadata): its view, and one line for text readers. The same
    while its cell runs and after: an output updated in place is drawn afresh by JupyterLab, and
    the view the user zoomed and selected in would be lost."""
    bundle: Any = widget._repr_mimebundle_()
    data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
    # The text report lives in the snapshot's output; one copy is enough for text readers.
    return {**data, "text/plain": WIDGET_TEXT}, metadata


def snapshot_output(
    profile: Profile, run_id: str | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The snapshot's output (data, metadata), named by ``run_id`` as in ``widget_outputs``."""
    if run_id is None and profile.run is not None:
        run_id = profile.run.id
    snapshot = {"text/html": profile.snapshot_html(run_id), "text/plain": profile.text()}
    return snapshot, {"gpuprofile": {"snapshot": True, "run_id": run_id}}


WIDGET_TEXT = "gpuprofile widget (interactive while its kernel runs; the report is the next output)"


def show_outputs(profile: Profile, run_id: str | None = None) -> None:
    """Display a profile in a notebook: its widget, then its snapshot (``widget_outputs``)."""
    from IPython.display import display

    for data, metadata in widget_outputs(profile, run_id):
        display(data, metadata=metadata, raw=True)


def in_kernel() -> bool:
    """Running in a Jupyter kernel, whose frontend can show widgets (not terminal IPython)."""
    from IPython import get_ipython

    return getattr(get_ipython(), "kernel", None) is not None
