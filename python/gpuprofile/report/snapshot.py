"""A profile's static snapshot: one bounded HTML fragment that a saved notebook keeps.

A widget's output needs its kernel; reopened later, JupyterLab shows "Error displaying widget:
model not found" instead. Beside the widget, a cell therefore carries this snapshot (summary,
gauges as bars, the timeline and roofline as images, the hints with their fixes, the diff
against a baseline), which needs no script and renders in JupyterLab (trusted or not) and
nbconvert. It stays under ``LIMIT`` bytes whatever the trace: lists are capped, long names
shortened, pictures merged per pixel.

Its one scoped <style> also arranges the cell's outputs in JupyterLab: while the widget is
rendered (the live session), the snapshot's output is hidden; when the widget's model is gone
(reopened without it), the widget's error line is hidden and the snapshot stands in for it.
"""

from __future__ import annotations

import copy
import statistics
from typing import TYPE_CHECKING, Any

import msgspec

from gpuprofile.report.diff import diff_json
from gpuprofile.report.diff_schema import DiffDocument
from gpuprofile.report.html import REPORT_STYLE, esc, gauges_html, hints_html, roofline_caption
from gpuprofile.report.html import summary_html as page_summary_html
from gpuprofile.report.html_diff import baseline_html
from gpuprofile.report.memory_svg import memory_section
from gpuprofile.report.module_svg import modules_section
from gpuprofile.report.roofline_geometry import plot_status
from gpuprofile.report.schema import Report, report_json, to_report
from gpuprofile.report.snapshot_svg import as_img, roofline_svg, timeline_svg
from gpuprofile.units import (
    format_count,
    format_flops_per_s,
    format_fraction,
    format_intensity,
    format_percent,
    format_reading,
    format_time,
)

if TYPE_CHECKING:
    from gpuprofile.trace.model import Trace

LIMIT = 300_000  # bytes of HTML, whatever the trace
SNAPSHOT_CLASS = "gpuprofile-snapshot"
MAX_RANKS = 8
MAX_HINTS = 12
MAX_EVIDENCE = 6
MAX_NOTICES = 10
MAX_TEXT = 400  # characters of any one string from the trace or the report
MAX_PROSE = 4000  # explanations and fix code

# In JupyterLab (4.x): the widget's root element is `.gpuprofile` (js/widget.css); a widget
# output whose model is gone holds only the text "Error displaying widget: model not found" on
# a `.jupyter-widgets` node, with no element inside (a rendered widget always has one).
_ARRANGE = f"""
.jp-OutputArea:has(.gpuprofile) > .jp-OutputArea-child:has(.{SNAPSHOT_CLASS}){{display:none}}
.jp-OutputArea:has(.{SNAPSHOT_CLASS}) .jp-OutputArea-output.jupyter-widgets:not(:has(*)){{
display:none}}
"""


_BAR = "display:inline-block;width:160px;height:10px;background:#eee;margin-right:6px"


def render_snapshot(
    report: Report,
    trace: Trace | None,
    *,
    run_id: str | None = None,
    trace_kept: bool = False,
) -> str:
    """The profile as one static HTML fragment of at most ``LIMIT`` bytes.

    Parameters:
        report: the ``gpuprofile.report/1`` Report.
        trace: the Trace it was built from (its kernels and ops draw the timeline); None: no
            timeline picture.
        run_id: the run's id in the history, if recorded: the snapshot then says what
            ``gpuprofile.show(run_id)`` brings back.
        trace_kept: whether the run kept its trace (``--keep-trace``): ``show`` then brings
            the interactive view back, else this report only.
    Returns the HTML text (escaped throughout; no script)."""
    bounded = _bounded(report)
    timeline, timeline_note = timeline_svg(trace)
    roofline, roofline_note = roofline_svg(report)
    sections = [
        _header(run_id, trace_kept),
        page_summary_html(bounded).replace("<h1>gpuprofile report</h1>", "", 1),
        _more_ranks(report),
        _steps_html(bounded),
        # The diff against a baseline (%%gpuprofile --baseline): the point of the cell.
        baseline_html(_bounded_diff(report.baseline)) if report.baseline else "",
        _gauge_bars(bounded) or gauges_html(bounded),
        f"<h2>Timeline</h2><p>{esc(timeline_note)}</p>{timeline}",
        f"<h2>Roofline</h2>{roofline_caption(bounded)}<p>{esc(roofline_note)}</p>"
        + _points_table(bounded)
        + roofline,
        # The model's modules, as the widget draws them ("" without module rows).
        modules_section(
            bounded,
            lambda rank, svg: as_img(svg, "gp-snapshot-modules", f"time by module, rank {rank}"),
        ),
        # Memory by category, the peak, an out-of-memory post-mortem ("" without one).
        memory_section(bounded, lambda svg, alt: as_img(svg, "gp-snapshot-memory", alt)),
        hints_html(bounded) + _more_hints(report),
    ]
    # Each section is bounded; should they still add up past the limit (a job of many ranks
    # with long names), the largest go, each replaced by a line that says so.
    while _size(sections) > LIMIT:
        largest = max(range(len(sections)), key=lambda i: len(sections[i]))
        sections[largest] = "<p>(part left out: the snapshot is kept under 300 KB)</p>"
    return (
        f'<div class="gp-report {SNAPSHOT_CLASS}" data-gpuprofile-snapshot="1">'
        f"{REPORT_STYLE.replace('</style>', _ARRANGE + '</style>')}{''.join(sections)}</div>"
    )


def _size(sections: list[str]) -> int:
    return sum(len(s.encode("utf-8")) for s in sections) + len(REPORT_STYLE) + len(_ARRANGE) + 200


def _header(run_id: str | None, trace_kept: bool) -> str:
    line = "<h1>gpuprofile</h1><p><i>Static snapshot of this profile, as the notebook keeps it."
    if run_id is not None:
        call = "<code>" + esc(f'gpuprofile.show("{run_id}")') + "</code>"
        # Promise only what show() gives: without a kept trace, the report and no timeline.
        line += (
            f" For the interactive view, run {call} in a cell."
            if trace_kept
            else f" {call} shows this report again; the run kept no trace, so for the "
            "interactive timeline profile with <code>%%gpuprofile --keep-trace</code>."
        )
    return line + "</i></p>"


def _shorten(value: Any, limit: int) -> Any:
    if isinstance(value, str) and len(value) > limit:
        return value[: limit - 1] + "\u2026"
    return value


def _bounded(report: Report) -> Report:
    """A copy of the report with the lists the snapshot shows capped and long strings
    shortened (kernel names of C++ templates can run to kilobytes)."""
    plain = report_json(report)  # walked as plain JSON, whatever the section
    out = copy.copy(plain)
    out["notices"] = plain["notices"][:MAX_NOTICES]
    out["ranks"] = [_walk(r, MAX_TEXT) for r in plain["ranks"][:MAX_RANKS]]
    hints = []
    for hint in plain["hints"][:MAX_HINTS]:
        short = {k: _walk(v, MAX_TEXT) for k, v in hint.items() if k not in ("evidence",)}
        short["explanation"] = _shorten(hint.get("explanation") or "", MAX_PROSE)
        short["code"] = _shorten(hint.get("code") or "", MAX_PROSE)
        short["fix"] = [_shorten(step, MAX_PROSE) for step in (hint.get("fix") or [])[:10]]
        short["evidence"] = [_walk(e, MAX_TEXT) for e in (hint.get("evidence") or [])]
        short["evidence"] = short["evidence"][:MAX_EVIDENCE]
        hints.append(short)
    out["hints"] = hints
    out["gauges"] = [_walk(g, MAX_TEXT) for g in plain["gauges"][: 4 * MAX_RANKS]]
    out["source"] = _walk(plain["source"], MAX_TEXT)
    out["hardware"] = _walk(plain["hardware"], MAX_TEXT)
    return to_report(out)


def _bounded_diff(diff: DiffDocument) -> DiffDocument:
    """The diff with each text cut to MAX_TEXT, as the report's sections are."""
    return msgspec.convert(_walk(diff_json(diff), MAX_TEXT), DiffDocument)


def _walk(value: Any, limit: int) -> Any:
    if isinstance(value, dict):
        return {k: _walk(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        # Event id lists are only counted; their length must stay.
        return [_walk(v, limit) for v in value] if len(value) <= 50 else value
    return _shorten(value, limit)


def _more_ranks(report: Report) -> str:
    ranks = len(report.ranks)
    if ranks <= MAX_RANKS:
        return ""
    return f"<p>{esc(f'... and {ranks - MAX_RANKS} more ranks (gpuprofile.show for all).')}</p>"


def _more_hints(report: Report) -> str:
    hints = len(report.hints)
    if hints <= MAX_HINTS:
        return ""
    more = format_count(hints - MAX_HINTS, "more hint")
    return f"<p>{esc(f'... and {more} (gpuprofile.show for all).')}</p>"


def _steps_html(report: Report) -> str:
    """Per rank, the distribution of GPU step windows: count, median, fastest, slowest."""
    lines = []
    for rank in report.ranks:
        steps = sorted(s.window_ns for s in (rank.gpu.steps if rank.gpu else []))
        if not steps:
            continue
        median = statistics.median(steps)
        lines.append(
            f"<p>Rank {esc(rank.rank)}: {esc(format_count(len(steps), 'step'))}, median "
            f"{esc(format_time(median))}, fastest {esc(format_time(steps[0]))}, slowest "
            f"{esc(format_time(steps[-1]))}</p>"
        )
    return "<h2>Step times</h2>" + "".join(lines) if lines else ""


def _gauge_bars(report: Report) -> str:
    """The gauges as static bars: the reading, the share of its roof as a filled bar (no bar
    where the roof is unknown), and the gauge's note."""
    gauges = report.gauges
    if not gauges:
        return ""
    rows = []
    several = len({g.rank for g in gauges}) > 1
    for g in gauges:
        value = "unknown" if g.value is None else format_reading(g.value, g.unit)
        fraction = g.fraction
        if fraction is None:
            bar = ""
            of_roof = esc(g.roof_label or "roof unknown")
        else:
            width = max(0.0, min(float(fraction), 1.0)) * 100
            # Inline styles: HTML sanitizers (untrusted notebooks, viewers) drop <style>.
            bar = (
                f'<span style="{_BAR}"><span style="display:block;height:100%;'
                f'width:{width:.1f}%;background:#1f77b4"></span></span>'
            )
            roof = "" if g.roof is None else format_reading(g.roof, g.unit)
            # The roof's label ends in its source, "(datasheet)": not in parentheses again.
            of_roof = esc(f"{format_fraction(fraction, 0)} of {roof}, roof: {g.roof_label}")
        label = f"rank {g.rank} {g.label}" if several else g.label
        rows.append(
            f"<tr><td>{esc(label)}</td><td>{bar}<b>{esc(value)}</b></td><td>{of_roof}</td>"
            f"<td>{esc(g.note)}</td></tr>"
        )
    return "<h2>Gauges</h2><table>" + "".join(rows) + "</table>"


def _points_table(report: Report, limit: int = 8) -> str:
    """The heaviest roofline points by time, as the picture cannot name them: those it can plot
    (``plot_status``, the rule every roofline view shares)."""
    points = [p for p in report.roofline.points if not plot_status(p)]
    points = sorted(points, key=lambda p: -p.time_ns)[:limit]
    if not points:
        return ""
    rows = "".join(
        f"<tr><td>{esc(_shorten(p.label or p.name, MAX_TEXT))}</td>"
        f"<td>{esc(_shorten(p.shapes, MAX_TEXT))}</td>"
        f"<td>{esc(format_time(p.time_ns))}</td>"
        f"<td>{esc(format_intensity(p.intensity))}</td>"
        f"<td>{esc(format_flops_per_s(p.achieved_flops_per_s))}</td>"
        f"<td>{esc(format_percent(p.pct_of_roof))}</td></tr>"
        for p in points
    )
    header = "".join(
        f"<th>{h}</th>"
        for h in ("op or kernel", "shapes", "time", "intensity", "FLOP/s", "of roof")
    )
    return f"<table><tr>{header}</tr>{rows}</table>"
