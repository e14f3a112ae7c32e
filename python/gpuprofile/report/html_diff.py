"""The standalone page's "Against baseline" section: the diff (gpuprofile.diff/1) of a report
that holds one, as plain HTML: before/after bars, the kernels and ops that moved most, and the
hints fixed, new and kept. Names are untrusted text: everything passes through ``esc``
(``html.escape``, as report/html.py does)."""

from __future__ import annotations

from html import escape
from typing import Any

from gpuprofile.analyses.kernel_names import short_kernel_name
from gpuprofile.report.diff_schema import (
    DiffChange,
    DiffDocument,
    DiffHints,
    DiffIdleChange,
    DiffRow,
    DiffStepChange,
    DiffSummary,
)
from gpuprofile.report.diff_text import run_name, step_noise
from gpuprofile.units import format_count, format_delta_time, format_si, format_time

TOP_ROWS = 10
_STYLE = """
<style>
.gp-report .bars td{border:none;padding:1px 6px}
.gp-report .bar{height:9px;min-width:1px}
.gp-report .bar.a{background:#9e9e9e}.gp-report .bar.b{background:#1976d2}
.gp-report .worse{color:#b71c1c}.gp-report .better{color:#2e7d32}
.gp-report .mark{display:inline-block;min-width:44px;padding:0 4px;margin-right:6px;
  border-radius:3px;color:#fff;font-size:11px;text-align:center}
.gp-report .mark.fixed{background:#2e7d32}.gp-report .mark.new{background:#c62828}
.gp-report .mark.unjudged{background:#757575}
.gp-report .mark.kept{background:#757575}
</style>
"""
_BAR_PX = 240


def esc(value: Any) -> str:
    """``value`` as HTML text: ``<``, ``>``, ``&`` and quotes escaped."""
    return escape(str(value), quote=True)


def baseline_html(diff: DiffDocument) -> str:
    """The section for a diff (a: the baseline, b: this profile).

    Parameters:
        diff: the ``gpuprofile.diff/1`` document (a report's "baseline").

    Returns:
        Escaped HTML, its own style included (each bokeh Div is a shadow root).
    """
    side = diff.a
    where = ", ".join(w for w in (run_name(side), side.path) if w) or "a capture"
    parts = [
        _STYLE,
        "<h2>Against baseline</h2>",
        f"<p>Baseline: {esc(where)} ({esc(side.format)}, "
        f"{esc(format_count(side.ranks, 'rank'))}). "
        "Grey: before (the baseline), blue: after (this profile).</p>",
    ]
    parts += [f"<p>Note: {esc(note)}</p>" for note in diff.notes]
    parts.append(_bars(diff.summary))
    parts.append(f'<p data-noise="">{esc(step_noise(diff.summary.step_ns))}</p>')
    parts.append(_delta_table(diff.kernels, "Kernels"))
    parts.append(_delta_table(diff.ops, "Ops"))
    parts.append(_hints(diff.hints))
    return "".join(parts)


def _tone(delta: float | None) -> str:
    # Time that grew is worse: every bar here is a duration.
    return "" if not delta else "worse" if delta > 0 else "better"


def _bars(summary: DiffSummary) -> str:
    rows: list[tuple[str, DiffChange | DiffStepChange | DiffIdleChange]] = [
        ("wall", summary.wall_ns),
        ("GPU busy", summary.busy_ns),
        ("GPU idle", summary.idle_ns),
    ]
    if summary.step_ns:
        rows.append(("step (median)", summary.step_ns))
    for cause, idle in summary.idle_by_cause.items():
        if idle.a or idle.b:
            rows.append((f"idle: {cause}", idle))
    body = []
    for label, change in rows:
        a, b = change.a or 0, change.b or 0
        top = max(a, b) or 1
        ratio = None if isinstance(change, DiffIdleChange) else change.ratio  # a cause has none
        bars = "".join(
            f'<div class="bar {cls}" style="width:{round(_BAR_PX * value / top)}px" '
            f'title="{cls}: {esc(format_time(value))}"></div>'
            for cls, value in (("a", a), ("b", b))
        )
        body.append(
            f'<tr data-bar="{esc(label)}"><td>{esc(label)}</td><td>{bars}</td>'
            f'<td class="n">{esc(format_time(change.a))}</td>'
            f'<td class="n">{esc(format_time(change.b))}</td>'
            f'<td class="n {_tone(change.delta)}">'
            f"{esc(format_delta_time(change.delta))}</td>"
            f'<td class="n">{esc("" if ratio is None else format_si(ratio) + "x")}</td></tr>'
        )
    head = "".join(f"<th>{h}</th>" for h in ("", "", "before", "after", "delta", "after/before"))
    return f'<table class="bars"><tr>{head}</tr>{"".join(body)}</table>'


def _delta_table(rows: list[DiffRow], title: str) -> str:
    moved = [row for row in rows if row.delta_ns][:TOP_ROWS]
    if not moved:
        return ""
    head = "".join(
        f"<th>{h}</th>" for h in ("name", "before", "after", "delta", "count before → after")
    )
    body = []
    for row in moved:
        name = row.label or short_kernel_name(row.name)
        if row.matched_by != "name":
            name += f" ({row.b_label or row.b_name or row.matched_by})"
        body.append(
            f"<tr><td>{esc(name)}</td><td class=n>{esc(format_time(row.a_ns))}</td>"
            f"<td class=n>{esc(format_time(row.b_ns))}</td>"
            f'<td class="n {_tone(row.delta_ns)}">{esc(format_delta_time(row.delta_ns))}</td>'
            f"<td class=n>{esc(format_count(row.a_count))} → "
            f"{esc(format_count(row.b_count))}</td></tr>"
        )
    caption = f"{title} that moved most ({len(moved)} of {format_count(len(rows))})"
    return f"<h3>{esc(caption)}</h3><table>{''.join([f'<tr>{head}</tr>', *body])}</table>"


def _hints(hints: DiffHints) -> str:
    items = []
    groups = (
        ("fixed", hints.fixed),
        ("new", hints.new),
        ("kept", hints.kept),
        ("unjudged", hints.unjudged),
    )
    for group, entries in groups:
        for entry in entries:
            gain = f"gain {format_time(entry.a_gain_ns)} → {format_time(entry.b_gain_ns)}"
            items.append(
                f'<li data-hint="{group}"><span class="mark {group}">{group}</span>'
                f"{esc(entry.title)} <span>({esc(entry.kind)}, {esc(gain)})</span></li>"
            )
    if not items:
        return "<h3>Hints</h3><p>Neither run has hints.</p>"
    return f"<h3>Hints fixed, new and kept</h3><ul>{''.join(items)}</ul>"
