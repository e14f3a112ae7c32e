"""The standalone HTML report: one file that opens offline (``Profile.save_html``,
``gpuprofile report TRACE --html FILE``).

Bokeh draws the kernel timeline and the roofline and its JS is inlined, so the page makes no
network request. Trace names are untrusted text: every string that goes into markup passes
through ``html.escape`` here, and plot labels and hover values are bokeh text (its tooltips
escape field values unless told ``{safe}``, which this module never does).
"""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuprofile.errors import GpuprofileError
from gpuprofile.report.html_diff import baseline_html
from gpuprofile.report.schema import Hint, RankReport, Report
from gpuprofile.report.workload_text import workload_line
from gpuprofile.units import (
    format_count,
    format_fraction,
    format_intensity,
    format_percent,
    format_reading,
    format_time,
)

if TYPE_CHECKING:
    from gpuprofile.trace.model import Trace

REPORT_STYLE = """
<style>
.gp-report{font-family:system-ui,sans-serif;font-size:13px;max-width:1200px}
.gp-report h1{font-size:20px}.gp-report h2{font-size:16px;margin-top:18px}
.gp-report table{border-collapse:collapse;margin:4px 0}
.gp-report td,.gp-report th{border:1px solid #ddd;padding:2px 6px;text-align:left}
.gp-report td.n{text-align:right;font-variant-numeric:tabular-nums}
.gp-report .notice{background:#fff4d6;padding:4px 8px;margin:2px 0}
.gp-report .hint{border-left:4px solid #c33;padding:2px 10px;margin:8px 0}
.gp-report .hint.medium{border-color:#e90}.gp-report .hint.low{border-color:#999}
.gp-report code,.gp-report pre{background:#f4f4f4}
</style>
"""


def esc(value: Any) -> str:
    """``value`` as HTML text: ``<``, ``>``, ``&`` and quotes escaped."""
    return html.escape(str(value), quote=True)


def _table(header: list[str], rows: list[list[tuple[str, bool]]]) -> str:
    # Cells arrive as (already escaped text, is_number); headers are ours but escaped anyway.
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join(
        "<tr>"
        + "".join(f'<td class="n">{c}</td>' if num else f"<td>{c}</td>" for c, num in row)
        + "</tr>"
        for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _t(value: Any) -> tuple[str, bool]:
    return esc(value), False


def _labelled(label: str, name: str) -> tuple[str, bool]:
    """A short name, its full name shown on hover."""
    if not label or label == name:
        return _t(name)
    return f'<span title="{esc(name)}">{esc(label)}</span>', False


def _n(text: str) -> tuple[str, bool]:
    return esc(text), True


def summary_html(report: Report) -> str:
    """Title, notices, source, hardware, and per rank the wall time, GPU busy/idle, idle by
    cause, top kernels and top ops. Parameters: report: a ``gpuprofile.report/1`` Report.
    Returns escaped HTML."""
    source = report.source
    hardware = report.hardware
    parts = ["<h1>gpuprofile report</h1>"]
    if report.workload is not None:
        evidence = "".join(f"<li>{esc(why)}</li>" for why in report.workload.evidence)
        parts.append(
            f'<details class="workload"><summary>{esc(workload_line(report.workload))}'
            f"</summary><ul>{evidence}</ul></details>"
        )
    for notice in report.notices:
        parts.append(f'<div class="notice">{esc(notice.kind)}: {esc(notice.text)}</div>')
    # A capture has no path: its format alone ("capture"), not "capture (capture)".
    what = esc(source.format) + (f", {esc(source.version)}" if source.version else "")
    where = f"{esc(source.path)} ({what})" if source.path else what
    parts.append(
        f"<p>Source: {where}<br>"
        f"Hardware: {esc(hardware.name or 'unknown')} "
        f"({esc(hardware.source or 'unknown')})</p>"
    )
    for rank in report.ranks:
        parts.append(_rank_summary(rank, len(report.ranks) > 1))
    return "".join(parts)


def _rank_summary(rank: RankReport, several: bool) -> str:
    gpu = rank.gpu
    title = f"Rank {rank.rank}" if several else "Summary"
    lines = [f"<h2>{esc(title)}</h2>", f"<p>Wall: {esc(format_time(rank.wall_ns))}"]
    if gpu:
        lines.append(
            f"<br>GPU busy: {esc(format_time(gpu.busy_ns))} "
            f"({esc(format_percent(gpu.busy_pct))}), idle: "
            f"{esc(format_time(gpu.idle_ns))} of a {esc(format_time(gpu.window_ns))} window"
        )
    else:
        lines.append("<br>No GPU activity.")
    lines.append("</p>")
    causes = [(c, ns) for c, ns in rank.idle_by_cause.items() if ns]
    if causes:
        rows = [[_t(c), _n(format_time(ns))] for c, ns in sorted(causes, key=lambda x: -x[1])]
        lines.append("<h3>GPU idle by cause</h3>" + _table(["cause", "time"], rows))
    if rank.top_kernels:
        rows = [
            [
                _labelled(k.label, k.name),
                _t(k.kind),
                _n(format_count(k.count)),
                _n(format_time(k.total_ns)),
            ]
            for k in rank.top_kernels
        ]
        lines.append("<h3>Top kernels</h3>" + _table(["kernel", "class", "count", "time"], rows))
    if rank.top_ops:
        rows = [
            [_t(o.name), _n(format_count(o.count)), _n(format_time(o.total_ns))]
            for o in rank.top_ops
        ]
        lines.append("<h3>Top ops</h3>" + _table(["op", "count", "time"], rows))
    return "".join(lines)


def gauges_html(report: Report) -> str:
    """The gauges as a table: reading, roof and the share of the roof. Returns escaped HTML."""
    if not report.gauges:
        return ""
    rows = []
    for g in report.gauges:
        value = "unknown" if g.value is None else format_reading(g.value, g.unit)
        roof = "" if g.roof is None else format_reading(g.roof, g.unit)
        rows.append(
            [
                _t(g.rank),
                _t(g.label),
                _n(value),
                _n(roof),
                _t(g.roof_label),
                _n(format_fraction(g.fraction, 0)),
                _t(g.note),
            ]
        )
    header = ["rank", "gauge", "value", "roof", "roof is", "of roof", "note"]
    return "<h2>Gauges</h2>" + _table(header, rows)


def hints_html(report: Report) -> str:
    """Each hint: title, explanation, the fix steps, code, and its evidence. Escaped HTML."""
    if not report.hints:
        return f"<h2>Hints</h2><p>No hints. {esc(report.no_findings)}</p>"
    parts = ["<h2>Hints</h2>"]
    for hint in report.hints:
        severity = esc(hint.severity or "low")
        parts.append(
            f'<div class="hint {severity}"><h3>{esc(hint.title)}</h3>'
            f"<p>{severity} · {esc(hint.kind)} · "
            f"gain {esc(format_time(hint.gain_ns))}"
            f"</p>{_where_html(hint)}<p>{esc(hint.explanation)}</p>"
        )
        if hint.fix:
            parts.append("<ol>" + "".join(f"<li>{esc(step)}</li>" for step in hint.fix) + "</ol>")
        if hint.code:
            parts.append(f"<pre>{esc(hint.code)}</pre>")
        if hint.evidence:
            rows = [
                [
                    _t(e.label),
                    _t(e.table),
                    _t(e.rank),
                    _n(format_count(len(e.event_ids))),
                    _t(
                        ", ".join(
                            f"{format_time(a)}\u2013{format_time(b)}" for a, b in e.windows[:5]
                        )
                    ),
                ]
                for e in hint.evidence
            ]
            parts.append(_table(["evidence", "table", "rank", "events", "windows"], rows))
        parts.append("</div>")
    return "".join(parts)


def _where_html(hint: Hint) -> str:
    """Where a hint is in the user's program: its first module and line, or ""."""
    from gpuprofile.analyses.frames import SourceLine

    parts = []
    if hint.modules:
        more = f" (+{len(hint.modules) - 1} more)" if len(hint.modules) > 1 else ""
        parts.append(f"module {hint.modules[0]}{more}")
    if hint.sources:
        ref = hint.sources[0]
        parts.append(f"line {SourceLine(ref.file, ref.line, ref.function).label}")
    return f'<p class="where">{esc(" · ".join(parts))}</p>' if parts else ""


def ranks_html(report: Report) -> str:
    """For a job of several ranks: per rank wall, GPU busy, waits, exposed communication and
    bubble, then the stragglers. Empty for one rank. Returns escaped HTML."""
    job = report.distributed
    if not job:
        return ""
    rows = []
    for rank in report.ranks:
        gpu, dist = rank.gpu, rank.distributed
        rows.append(
            [
                _t(rank.rank),
                _n(format_time(rank.wall_ns)),
                _n(format_time(gpu.busy_ns if gpu else None)),
                _n(format_percent(gpu.busy_pct if gpu else None)),
                _n(format_time(dist.wait_ns if dist else None)),
                _n(format_time(dist.exposed_comm_ns if dist else None)),
                _n(format_fraction(dist.bubble_fraction if dist else None)),
            ]
        )
    header = ["rank", "wall", "GPU busy", "busy", "wait", "exposed comm", "bubble"]
    parts = ["<h2>Ranks</h2>", _table(header, rows)]
    if job.missing_ranks:
        parts.append(f"<p>Missing ranks: {esc(', '.join(str(r) for r in job.missing_ranks))}</p>")
    if job.stragglers:
        rows = [
            [_t(s.rank), _n(format_time(s.wait_caused_ns)), _t(s.cause)] for s in job.stragglers
        ]
        parts.append("<h3>Stragglers</h3>" + _table(["rank", "wait caused", "cause"], rows))
    return "".join(parts)


def roofline_caption(report: Report) -> str:
    """One line under the roofline: coverage and what the format lacks. Escaped HTML."""
    roofline = report.roofline
    text = f"FLOPs known for {format_fraction(roofline.coverage)} of the time."
    if roofline.missing_flops:
        text += f" {roofline.missing_flops.rstrip('.')}."
    points = [p for p in roofline.points if p.intensity]
    if points:
        best = max(points, key=lambda p: p.time_ns)
        text += f" Heaviest: {best.name} at {format_intensity(best.intensity)}."
    return f"<p>{esc(text)}</p>"


def render_html(report: Report, trace: Trace, *, title: str = "gpuprofile report") -> str:
    """The whole page as one HTML string, bokeh's JS and CSS inlined.

    Parameters:
        report: the ``gpuprofile.report/1`` Report of the trace; with a baseline (the diff
            against one), its section follows the summary.
        trace: the Trace the report was built from (its kernels draw the timeline).
        title: the page's title (escaped by bokeh).
    Returns the HTML text."""
    from bokeh.embed import file_html
    from bokeh.layouts import column
    from bokeh.models.widgets.markups import Div
    from bokeh.resources import INLINE

    from gpuprofile.report.html_plots import roofline_figure, timeline_figure

    def div(markup: str) -> Div:
        # disable_math: a name holding $$...$$ would otherwise make bokeh fetch MathJax.
        return Div(
            # Each Div renders in its own shadow root: the style goes into every one.
            text=f'{REPORT_STYLE}<div class="gp-report">{markup}</div>',
            sizing_mode="stretch_width",
            disable_math=True,
        )

    timeline, timeline_note = timeline_figure(trace)
    items: list[Any] = [
        div(summary_html(report) + ranks_html(report) + gauges_html(report)),
    ]
    if report.baseline:
        items.append(div(baseline_html(report.baseline)))
    items += [
        div(f"<h2>Kernel timeline</h2><p>{esc(timeline_note)}</p>"),
    ]
    if timeline is not None:
        items.append(timeline)
    roofline = roofline_figure(report)
    items.append(div("<h2>Roofline</h2>" + roofline_caption(report)))
    if roofline is not None:
        items.append(roofline)
    from gpuprofile.report.module_svg import modules_section

    modules = modules_section(report, lambda _, svg: f'<div class="gp-modules">{svg}</div>')
    if modules:  # no module rows: no section, not an empty one
        items.append(div(modules))
    from gpuprofile.report.memory_svg import memory_section

    memory = memory_section(report, lambda svg, _: f'<div class="gp-memory">{svg}</div>')
    if memory:
        items.append(div(memory))
    items.append(div(hints_html(report)))
    page: str = file_html(
        column(*items, sizing_mode="stretch_width"), resources=INLINE, title=title
    )
    return page


def write_html(
    report: Report, trace: Trace, path: str | os.PathLike[str], *, title: str | None = None
) -> int:
    """Write the standalone page to ``path``. Parameters: report, trace: as ``render_html``;
    path: the file to write (its directory must exist); title: the page title (default: the
    trace's file name). Returns the bytes written. Raises GpuprofileError when the file cannot
    be written."""
    target = Path(path)
    if not target.parent.is_dir():
        raise GpuprofileError(f"{target}: no such directory {str(target.parent)!r}")
    if target.is_dir():
        raise GpuprofileError(f"{target}: is a directory; give a file name")
    source = report.source.path
    page = render_html(
        report, trace, title=title or f"gpuprofile: {Path(source).name if source else 'capture'}"
    )
    data = page.encode("utf-8")
    try:
        target.write_bytes(data)
    except OSError as exc:
        raise GpuprofileError(f"{target}: cannot write: {exc.strerror or exc}") from None
    return len(data)
