"""The diff (gpuprofile.diff/1) as a compact plain-text table, for terminals and CI logs."""

from __future__ import annotations

from typing import TypedDict

from gpuprofile.analyses.kernel_names import short_kernel_name
from gpuprofile.report.diff_schema import (
    DiffChange,
    DiffDocument,
    DiffHints,
    DiffIdleChange,
    DiffMemory,
    DiffRow,
    DiffRun,
    DiffStepChange,
    DiffSummary,
)
from gpuprofile.units import (
    format_bytes,
    format_count,
    format_delta_time,
    format_fraction,
    format_percent,
    format_si,
    format_time,
    printable,
)

TOP_ROWS = 10


def render_diff(diff: DiffDocument) -> str:
    """The diff document as text: the two runs, the summary with deltas and ratios, the
    kernels and ops that moved most, the hints fixed / new / kept, the roofline points that
    moved, and the notes."""
    lines = [
        "gpuprofile diff (b against a)",
        f"  a: {_side(diff.a)}",
        f"  b: {_side(diff.b)}",
        *(f"  note: {note}" for note in diff.notes),
        "",
        f"  {'':<28}{'a':>11}{'b':>11}{'delta':>12}{'b/a':>8}",
    ]
    lines += _summary_lines(diff.summary)
    for cause, change in diff.summary.idle_by_cause.items():
        lines.append(_summary_line(f"  idle: {cause}", change))
    lines.extend(memory_lines(diff.memory, TOP_ROWS))
    lines.extend(_rows(diff.kernels, "Kernels"))
    lines.extend(_rows(diff.ops, "Ops"))
    lines.extend(_hints(diff.hints))
    if diff.roofline:
        lines += ["", f"Roofline points that moved ({len(diff.roofline)}):"]
        for point in diff.roofline[:TOP_ROWS]:
            a, b = point.a, point.b
            roofs = (
                f"{format_percent(a.pct_of_roof)} -> {format_percent(b.pct_of_roof)} of roof"
                if a.roof == b.roof
                else f"% of roof not compared ({a.roof} roof -> {b.roof} roof)"
            )
            key = point.key if len(point.key) <= 80 else point.key[:77] + "..."
            lines.append(
                f"  {roofs}, {format_si(a.achieved_flops_per_s, 'FLOP/s')} -> "
                f"{format_si(b.achieved_flops_per_s, 'FLOP/s')}  {printable(key)}"
            )
    # Names are escaped where printed; this catches trace text inside hint titles.
    return printable("\n".join(lines), lines=True) + "\n"


def render_baseline(diff: DiffDocument, rows: int = 3) -> list[str]:
    """The short "Against baseline" section of a profile's text report: the summary with
    deltas, the kernels that moved most, and the hints fixed and new.

    Parameters:
        diff: the diff document (a: the baseline, b: this profile).
        rows: kernels (else ops, for a trace without kernels) and hints shown at most.

    Returns:
        The section's lines (no trailing newline).
    """
    lines = [
        "",
        f"Against baseline {_side(diff.a)}:",
        f"  {'':<28}{'before':>11}{'after':>11}{'delta':>12}{'b/a':>8}",
    ]
    lines += [line.rstrip() for line in _summary_lines(diff.summary)]
    lines += memory_lines(diff.memory, rows)
    table, table_rows = ("kernels", diff.kernels) if diff.kernels else ("ops", diff.ops)
    moved = [row for row in table_rows if row.delta_ns][:rows]
    if moved:
        lines.append(f"  {table} that moved most:")
    for row in moved:
        counts = f"x{format_count(row.a_count)} -> {format_count(row.b_count)}"
        name = printable(row.label or short_kernel_name(row.name))
        lines.append(
            f"  {format_delta_time(row.delta_ns):>11}  {format_time(row.a_ns)} -> "
            f"{format_time(row.b_ns)}  {counts}  {name}"
        )
    for group, entries in (("fixed", diff.hints.fixed), ("new", diff.hints.new)):
        titles = "; ".join(entry.title for entry in entries[:rows])
        more = f" (+{len(entries) - rows} more)" if len(entries) > rows else ""
        lines.append(f"  hints {group}: {titles or 'none'}{more}")
    kept = len(diff.hints.kept)
    lines.append(f"  hints kept: {format_count(kept) if kept else 'none'}")
    return lines


def memory_lines(memory: list[DiffMemory], rows: int) -> list[str]:
    """Peak memory before and after, the run's then the modules' that moved most."""
    if not memory:
        return []
    lines = []
    for change in memory[: rows + 1]:
        label = "peak memory" if change.module == "peak" else f"  {printable(change.module)}"
        delta = "" if change.delta is None else f"{'+' if change.delta >= 0 else '-'}"
        delta += format_bytes(abs(change.delta)) if change.delta is not None else "n/a"
        lines.append(
            f"  {label:<28}{format_bytes(change.a_bytes):>11}{format_bytes(change.b_bytes):>11}"
            f"{delta:>12}"
        )
    return lines


def run_name(side: DiffRun) -> str | None:
    """A recorded run as the history names it: "run 1a2b3c4d (label)"; None: not recorded."""
    run = side.run
    if run is None:
        return None
    return f"run {run.id}" + (f" ({run.label})" if run.label else "")


def _side(side: DiffRun) -> str:
    named = run_name(side)
    where = ", ".join(w for w in (named, side.path) if w) or "(captured)"
    devices = ", ".join(side.devices) or "no GPU named"
    return f"{where} ({side.format}, {format_count(side.ranks, 'rank')}, {devices})"


def _ratio(ratio: float | None) -> str:
    return "" if ratio is None else f"{format_si(ratio)}x"


# How to get a verdict where a side has too few samples to tell a change from noise.
MORE_SAMPLES = (
    "record several steps a side (%%gpuprofile --steps W,N, or gpuprofile.step() in the loop) "
    "or repeat each run, then compare"
)
SINGLE_SAMPLE = (
    "one sample a side: a single run cannot tell a change from run-to-run noise, so the "
    f"ratios below are no verdict; {MORE_SAMPLES}"
)


def step_noise(step: DiffStepChange | None) -> str:
    """What the step-time ratio is worth: its bootstrap interval, or why there is none (no
    steps: one sample a side). The one wording of it: the text, the HTML diff and the widget
    (``step_noise_view``) all show this."""
    if step is None:
        return SINGLE_SAMPLE
    counts = f"{format_count(step.count.a, 'step')} vs {format_count(step.count.b)}"
    if step.interval is None:
        return f"{counts}: too few for a noise interval; {MORE_SAMPLES}"
    lo, hi = step.interval
    return (
        f"{format_fraction(step.confidence, 0)} interval of b/a {format_si(lo)}x to "
        f"{format_si(hi)}x over {counts}: {step.verdict}"
    )


class StepNoise(TypedDict):
    """The widget's ``summary.step_noise`` (a TypedDict: the widget's trait takes it as is, and
    schema_gen types it for the JS)."""

    verdict: str
    text: str


def step_noise_view(step: DiffStepChange | None) -> StepNoise:
    """For the widget's baseline panel: the diff's step verdict ("faster", "slower", "within
    noise", "" without an interval or without steps) and ``step_noise``'s sentence."""
    return {"verdict": step.verdict or "" if step else "", "text": step_noise(step)}


def _summary_lines(summary: DiffSummary) -> list[str]:
    """Wall, GPU busy and idle, and the median step with what its change is worth."""
    lines = [
        _summary_line("wall", summary.wall_ns),
        _summary_line("GPU busy", summary.busy_ns),
        _summary_line("GPU idle", summary.idle_ns),
    ]
    if summary.step_ns is not None:
        lines.append(_summary_line("step (median)", summary.step_ns))
    lines.append(f"  {'':<28}({step_noise(summary.step_ns)})")
    return lines


def _summary_line(label: str, change: DiffChange | DiffStepChange | DiffIdleChange) -> str:
    ratio = None if isinstance(change, DiffIdleChange) else change.ratio  # a cause has none
    return (
        f"  {label:<28}{format_time(change.a):>11}{format_time(change.b):>11}"
        f"{format_delta_time(change.delta):>12}{_ratio(ratio):>8}"
    )


def _rows(rows: list[DiffRow], title: str) -> list[str]:
    if not rows:
        return []
    shown = rows[:TOP_ROWS]
    lines = [
        "",
        f"{title}: {len(shown)} of {format_count(len(rows))} by |delta|",
        f"  {'delta':>11}{'a':>11}{'b':>11}{'count a -> b':>18}  name",
    ]
    for row in shown:
        counts = f"{format_count(row.a_count)} -> {format_count(row.b_count)}"
        name = printable(row.label or short_kernel_name(row.name))
        if row.matched_by == "position":
            b_name = row.b_label or short_kernel_name(row.b_name or "")
            name += f" ~ {printable(b_name)} (by position)"
        elif row.matched_by != "name":
            name += f" ({row.matched_by})"
        lines.append(
            f"  {format_delta_time(row.delta_ns):>11}{format_time(row.a_ns):>11}"
            f"{format_time(row.b_ns):>11}{counts:>18}  {name}"
        )
    return lines


def _hints(hints: DiffHints) -> list[str]:
    lines: list[str] = []
    groups = (
        ("fixed", hints.fixed),
        ("new", hints.new),
        ("kept", hints.kept),
        ("b's run cannot judge", hints.unjudged),
    )
    for group, entries in groups:
        if not entries:
            continue
        lines += ["", f"Hints {group} ({len(entries)}):"]
        for entry in entries[:TOP_ROWS]:
            gains = f"gain {format_time(entry.a_gain_ns)} -> {format_time(entry.b_gain_ns)}"
            lines.append(f"  [{entry.kind}] {entry.title}  ({gains})")
    return lines
