"""The notebook widget: declares state and routes the browser's requests; data is prepared by
timeline.py and marks.py, encoded by encoding.py, and requests are answered by requests.py."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import anywidget
import msgspec
import traitlets

from gpuprofile.analyses.context import Analysis
from gpuprofile.collector import collector_paused
from gpuprofile.errors import GpuprofileError
from gpuprofile.hardware.model import Hardware
from gpuprofile.report.build import build_report
from gpuprofile.report.diff_text import step_noise_view
from gpuprofile.report.memory_layout import memory_layout
from gpuprofile.report.module_layout import module_layout
from gpuprofile.report.roofline_layout import roofline_layout
from gpuprofile.report.schema import Report, report_json
from gpuprofile.report.text import render_text
from gpuprofile.report.widget_summary import SummaryExtras
from gpuprofile.report.workload_text import workload_line
from gpuprofile.widget.marks import marks_columns
from gpuprofile.widget.requests import Source, handle
from gpuprofile.widget.tables import DETAIL_THRESHOLD, counter_columns, overview_columns
from gpuprofile.widget.timeline import KINDS, opening_view, timeline_data
from gpuprofile.widget.wire import encode_wire

if TYPE_CHECKING:
    from gpuprofile.trace.model import Trace

_STATIC = Path(__file__).parent / "static"


def built(name: str, folder: Path = _STATIC) -> Path:
    """A file of the widget's JS build. A source checkout has none until ``make setup`` (or
    ``npm run build``) made them: say so, rather than anywidget's bare "File not found"."""
    path = folder / name
    if not path.is_file():
        raise GpuprofileError(
            f"the notebook widget is not built ({path} is missing): run `make setup`, or "
            "`npm run build` in the gpuprofile checkout, then restart the kernel"
        )
    return path


class ProfileWidget(anywidget.AnyWidget):
    _esm = built("widget.js")
    _css = built("widget.css")

    # The report's JSON (report/schema.py; js/model/report_types.d.ts's Summary) plus "text",
    # "roofline_layout" (the chart as report/roofline_layout.py lays it out: the widget draws it
    # as given) and "step_noise" (the baseline's step verdict and its sentence, diff_text.py).
    summary = traitlets.Dict().tag(sync=True)
    # Display order; {"id", "rank", "kind": "cpu"|"gpu"|"counter", "group" (the group's key),
    # "group_label" (its name under the rank), "label", "rows", "device", "stream", "pid", "tid"}.
    lanes: traitlets.List[dict[str, object]] = traitlets.List().tag(sync=True)
    # Symbol table: "name" columns hold indexes into it; name_kinds[i] indexes kinds.
    names = traitlets.List(traitlets.Unicode()).tag(sync=True)
    name_kinds = traitlets.List(traitlets.Int()).tag(sync=True)
    kinds = traitlets.List(traitlets.Unicode(), default_value=list(KINDS)).tag(sync=True)
    # GPT1 segment table: all events (complete) or the overview of merged boxes.
    events = traitlets.Bytes(b"").tag(sync=True)
    # GPT1 table time_ns f64, value f64 per counter lane (meta.segments).
    counters = traitlets.Bytes(b"").tag(sync=True)
    # GPT1 table of events to highlight per hint evidence and roofline point (meta.groups).
    marks = traitlets.Bytes(b"").tag(sync=True)
    span_ns = traitlets.Float(0.0).tag(sync=True)
    opening_view = traitlets.List(traitlets.Float()).tag(sync=True)  # [] : the whole span
    total_events = traitlets.Int(0).tag(sync=True)
    complete = traitlets.Bool(True).tag(sync=True)
    # While the cell runs: {"running": bool, "elapsed_s", "steps", "readings": [{"name", "unit",
    # "device", "value"}], "missing": {source: reason}}; set from the sampler thread.
    live = traitlets.Dict().tag(sync=True)

    def __init__(self, source: Source | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # Not state: what requests (window, details, range, search) are answered from.
        self._source = source
        self.on_msg(self._on_message)

    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict) or self._source is None:
            return
        reply, buffers = handle(self._source, content)
        self.send(reply, buffers)


def make_widget(
    report: Report | None,
    trace: Trace,
    analysis: Analysis | None = None,
    *,
    text: str = "",
    detail_threshold: int = DETAIL_THRESHOLD,
) -> ProfileWidget:
    """The widget for a report, its text and its trace (see ``show_result``); a report of None
    shows the timeline alone."""
    widget = ProfileWidget()
    show_result(widget, report, text, trace, analysis, detail_threshold=detail_threshold)
    return widget


def show_trace(
    widget: ProfileWidget,
    trace: Trace,
    hardware: Hardware | None = None,
    *,
    detail_threshold: int = DETAIL_THRESHOLD,
) -> None:
    """Fill a widget with a trace, analysed against ``hardware`` (None: its datasheet)."""
    analysis = Analysis(trace, hardware)
    report = build_report(analysis)
    show_result(
        widget, report, render_text(report), trace, analysis, detail_threshold=detail_threshold
    )


def show_result(
    widget: ProfileWidget,
    report: Report | None,
    text: str,
    trace: Trace,
    analysis: Analysis | None = None,
    *,
    detail_threshold: int = DETAIL_THRESHOLD,
) -> None:
    """Fill a widget (a live one shown while the cell ran, or a new one) with a profile: its
    report and text, and its trace. With the analysis, roofline points mark all their
    instances; without, the heaviest ones the report names. Traces of more than
    ``detail_threshold`` events cross as an overview, with detail fetched on demand. The
    browser redraws once, as one state update."""
    # The collector paused: composing the state allocates enough to set off full collections
    # of every object the process holds (collector.py).
    with collector_paused():
        # Beside the report, what Python composes once and the browser draws or shows as text.
        extras: SummaryExtras = {"text": text}
        if report is not None:  # else a timeline alone
            extras["roofline_layout"] = roofline_layout(report)
            extras["module_layout"] = module_layout(report)
            extras["memory_layout"] = memory_layout(report)
            extras["workload_line"] = workload_line(report.workload) if report.workload else None
            extras["step_noise"] = (
                step_noise_view(report.baseline.summary.step_ns) if report.baseline else None
            )
        summary: dict[str, Any] = {
            **(report_json(report) if report is not None else {}),
            **msgspec.to_builtins(extras),
        }
        data = timeline_data(trace)
        state = {
            "summary": summary,
            "lanes": msgspec.to_builtins(data.lanes),
            "names": data.names,
            "name_kinds": data.name_kinds,
            "events": encode_wire("events", *overview_columns(data, detail_threshold)),
            "counters": encode_wire("counters", *counter_columns(data)),
            "marks": encode_wire("marks", *marks_columns(data, trace, report, analysis)),
            "span_ns": data.span_ns,
            "opening_view": opening_view(data),
            "total_events": data.total,
            "complete": data.total <= detail_threshold,
        }
        widget._source = Source(data=data, trace=trace, analysis=analysis)
        with widget.hold_sync():
            for name, value in state.items():
                setattr(widget, name, value)
