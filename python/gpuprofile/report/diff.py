"""Two runs side by side (schema ``gpuprofile.diff/1``, docs/diff.md): what got faster or
slower, which kernels and ops moved, which hints a change fixed or brought.

It reads what each run's report says (wall, GPU busy and idle, steps, hints, roofline) and
each Trace's kernels and ops, so it sits at the report layer; ``gpuprofile.diff`` resolves
paths and Profiles into these.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np

from gpuprofile.analyses.kernel_names import short_kernel_names
from gpuprofile.report.diff_match import Match, match_rows
from gpuprofile.report.diff_schema import (
    SCHEMA,
    DiffChange,
    DiffCounts,
    DiffDocument,
    DiffHint,
    DiffHints,
    DiffIdleChange,
    DiffMemory,
    DiffPair,
    DiffPoint,
    DiffPointFigures,
    DiffRow,
    DiffRun,
    DiffRunName,
    DiffStepChange,
    DiffSummary,
    Number,
    Verdict,
)
from gpuprofile.report.diff_side import DiffSide
from gpuprofile.report.regression import CONFIDENCE, MIN_STEPS, bootstrap_ratio_interval
from gpuprofile.report.schema import Hint, Report, RooflinePoint
from gpuprofile.units import format_count

# A roofline point moved when its % of roof or achieved FLOP/s changed by more than this.
ROOFLINE_MOVE = 0.10


@dataclass(frozen=True)
class Diff:
    """Run b against run a (a: the baseline). ``to_dict()`` is the ``gpuprofile.diff/1``
    document as JSON, ``text()`` (also ``str(diff)``) its plain-text table. Made by
    ``gpuprofile.diff(a, b)``.

    Parameters:
        document: the diff document (report/diff_schema.py).
    """

    document: DiffDocument

    def to_dict(self) -> dict[str, Any]:
        """The diff as plain JSON types (schema gpuprofile.diff/1, docs/diff.md)."""
        return diff_json(self.document)

    def text(self) -> str:
        """The diff as a compact plain-text table."""
        from gpuprofile.report.diff_text import render_diff

        return render_diff(self.document)

    def __str__(self) -> str:
        return self.text()


def diff_runs(a: DiffSide, b: DiffSide) -> Diff:
    """Compare run b with run a, each as a DiffSide (from a Trace or from the history).

    Parameters:
        a: the baseline run.
        b: the run compared with it.

    Returns:
        The Diff; times are whole-job totals (summed over ranks) where a run has several.
    """
    a_report, b_report = a.report, b.report
    kernels = match_rows(a.kernels, b.kernels)
    ops = match_rows(a.ops, b.ops)
    notes = []
    ranks = (len(a_report.ranks), len(b_report.ranks))
    if max(ranks) > 1:
        notes.append(
            f"whole-job totals: times and counts are summed over the ranks "
            f"(a: {ranks[0]}, b: {ranks[1]})"
        )
    by_role = sum(m.matched_by == "role" for m in kernels)
    if by_role:
        notes.append(
            f"{format_count(by_role, 'kernel row')} paired by what the kernels do (their role: "
            "GEMM, attention, elementwise ...; the names differ, as between vendors or libraries)"
        )
    by_position = sum(m.matched_by == "position" for m in [*kernels, *ops])
    if by_position:
        notes.append(
            f"{format_count(by_position, 'row')} matched by place in the op tree (the names differ)"
        )
    if a.ops.time == b.ops.time == "gpu":
        notes.append("op rows compare the GPU time of the kernels each op launched")
    elif a.ops.time != b.ops.time:
        notes.append(
            f"op rows are not alike: a's are {a.ops.time} time, b's {b.ops.time} time (a run "
            "without kernels launched by its ops has host time only)"
        )
    document = DiffDocument(
        schema=SCHEMA,
        a=_side(a),
        b=_side(b),
        summary=_summary(a, b),
        kernels=_table(kernels),
        ops=_table(ops),
        hints=_hints(
            a_report.hints, b_report.hints, with_rank=min(ranks) > 1, b_can=_judges(b_report)
        ),
        roofline=_roofline_moved(a_report, b_report),
        notes=notes,
        memory=memory_changes(a_report, b_report),
    )
    return Diff(document)


PEAK = "peak"


def memory_changes(a: Report, b: Report) -> list[DiffMemory]:
    """The runs' peak memory (summed over ranks), then each module's peak, largest change first."""

    def peaks(report: Report) -> dict[str, int]:
        found: dict[str, int] = {}
        for rank in report.ranks:
            if rank.memory is not None:
                found[PEAK] = found.get(PEAK, 0) + rank.memory.peak.total_bytes
            for row in rank.modules:
                if row.peak_bytes is not None:
                    found[row.path] = max(found.get(row.path, 0), row.peak_bytes)
        return found

    a_peaks, b_peaks = peaks(a), peaks(b)
    if not a_peaks and not b_peaks:
        return []
    rows = []
    for module in {*a_peaks, *b_peaks}:
        before, after = a_peaks.get(module), b_peaks.get(module)
        delta = after - before if before is not None and after is not None else None
        rows.append(DiffMemory(module, before, after, delta))
    rows.sort(key=lambda r: (r.module != PEAK, -abs(r.delta or 0), r.module))
    return rows


def diff_json(document: DiffDocument) -> dict[str, Any]:
    """The diff document in plain JSON types, keys in the Structs' field order."""
    plain: dict[str, Any] = msgspec.to_builtins(document)
    return plain


def _side(side: DiffSide) -> DiffRun:
    report = side.report
    devices = sorted({d.name for r in report.ranks for d in r.devices if d.name})
    return DiffRun(
        path=report.source.path,
        format=report.source.format,
        ranks=len(report.ranks),
        devices=devices,
        run=msgspec.convert(side.run, DiffRunName) if side.run is not None else None,
    )


def _change(a: Number | None, b: Number | None) -> DiffChange:
    """delta = b - a, ratio = b / a (None when a is 0 or unknown)."""
    if a is None or b is None:
        return DiffChange(a, b, None, None)
    return DiffChange(a, b, b - a, b / a if a else None)


def _gpu_total(report: Report, key: str) -> int | None:
    """A GPU figure (busy_ns, idle_ns) summed over ranks; None when no rank has a GPU timeline
    (a CPU capture): unknown, not 0."""
    gpus = [r.gpu for r in report.ranks if r.gpu is not None]
    return sum(int(getattr(g, key)) for g in gpus) if gpus else None


def _summary(a: DiffSide, b: DiffSide) -> DiffSummary:
    a_report, b_report = a.report, b.report
    a_step, a_from = _median_step(a)
    b_step, b_from = _median_step(b)
    causes = sorted({*a_report.idle_by_cause, *b_report.idle_by_cause})
    idle_by_cause = {}
    for cause in causes:
        a_ns = int(a_report.idle_by_cause.get(cause, 0))
        b_ns = int(b_report.idle_by_cause.get(cause, 0))
        idle_by_cause[cause] = DiffIdleChange(a_ns, b_ns, b_ns - a_ns)
    return DiffSummary(
        wall_ns=_change(
            sum(r.wall_ns for r in a_report.ranks),
            sum(r.wall_ns for r in b_report.ranks),
        ),
        busy_ns=_change(_gpu_total(a_report, "busy_ns"), _gpu_total(b_report, "busy_ns")),
        idle_ns=_change(_gpu_total(a_report, "idle_ns"), _gpu_total(b_report, "idle_ns")),
        # The median step of each run, over every rank's steps; None unless both have steps.
        step_ns=_step_change(a, b, _change(a_step, b_step), DiffPair(a_from, b_from))
        if a_step is not None and b_step is not None
        else None,
        idle_by_cause=idle_by_cause,
    )


def _step_change(a: DiffSide, b: DiffSide, median: DiffChange, source: DiffPair) -> DiffStepChange:
    """The median step's change and the steps each side has, the bootstrap interval of b/a's
    ratio of median steps (as the CI gate computes it) and its verdict: "faster" (wholly below
    1), "slower" (wholly above) or "within noise"; both None with fewer than MIN_STEPS positive
    steps on a side."""
    a_steps, b_steps = a.positive_steps, b.positive_steps
    interval: list[float] | None = None
    verdict: Verdict | None = None
    if min(len(a_steps), len(b_steps)) >= MIN_STEPS:
        interval = [float(x) for x in bootstrap_ratio_interval(b_steps, a_steps)]
        # Said once here; the text, the page and the widget read it.
        verdict = "faster" if interval[1] < 1 else "slower" if interval[0] > 1 else "within noise"
    return DiffStepChange(
        a=median.a,
        b=median.b,
        delta=median.delta,
        ratio=median.ratio,
        source=source,
        count=DiffCounts(len(a_steps), len(b_steps)),
        interval=interval,
        confidence=CONFIDENCE,
        verdict=verdict,
    )


def _median_step(side: DiffSide) -> tuple[float | None, str | None]:
    """The median step time (see step_times) and where it came from; None without steps."""
    return (float(np.median(side.steps)), side.steps_from) if len(side.steps) else (None, None)


def _table(pairs: list[Match]) -> list[DiffRow]:
    rows: list[DiffRow] = []
    labels = short_kernel_names(m.name for pair in pairs for m in (pair.a, pair.b) if m)
    for pair in pairs:
        a_ns = pair.a.total_ns if pair.a else 0
        b_ns = pair.b.total_ns if pair.b else 0
        named = pair.a or pair.b
        assert named is not None
        rows.append(
            DiffRow(
                name=named.name,
                a_ns=a_ns,
                b_ns=b_ns,
                delta_ns=b_ns - a_ns,
                a_count=pair.a.count if pair.a else 0,
                b_count=pair.b.count if pair.b else 0,
                matched_by=pair.matched_by,
                # The name in b when it differs (rows matched by position); else None.
                b_name=pair.b.name if pair.a and pair.b and pair.b.name != pair.a.name else None,
                label=labels[named.name],
                b_label=labels[pair.b.name]
                if pair.a and pair.b and pair.b.name != pair.a.name
                else None,
            )
        )
    rows.sort(key=lambda r: (-abs(r.delta_ns), -max(r.a_ns, r.b_ns), r.name))
    return rows


_NUMBER = re.compile(
    r"[-+]?\d[\d,]*(\.\d+)?\s*(%|x\b|(?:[kMGTP]|µ|u|m|n)?(?:s|B|B/s|FLOP/s|FLOP|Hz|W)\b)?"
)
_WORD = re.compile(r"[A-Za-z]+")


def hint_key(hint: Hint, *, with_rank: bool = True) -> str:
    """What identifies a hint across runs: its kind, its rank (with_rank: two jobs; one-rank
    runs compare whatever rank each was) and its title without its numbers (a fix changes
    them) and with plurals made singular ("1 copy" / "3 copies")."""
    title = _NUMBER.sub("#", hint.title)
    title = _WORD.sub(lambda m: _singular(m.group(0).lower()), title)
    rank = hint.rank if with_rank else None
    return f"{hint.kind}|{'' if rank is None else rank}|{' '.join(title.split())}"


def _singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


# Findings that read what only some runs record: the kind, and what a run needs for it. A hint
# of a whose kind b cannot judge is "unjudged", never "fixed".
_NEEDS_CUDA = ("pageable-copy", "low-occupancy")
# ... and kinds only Nsight Compute's counters show (l1tex sectors per request).
_NEEDS_NCU = ("uncoalesced-access",)


def _judges(report: Report) -> set[str]:
    """The hint kinds of _NEEDS_CUDA and _NEEDS_NCU this run can judge: on CUDA (copies
    labelled pageable or pinned, CUPTI's blocks per SM) the first, on ROCm, TPU or a CPU none
    of them; the second only from an Nsight Compute file."""
    device = report.workload.device if report.workload is not None else "cuda"
    can = set(_NEEDS_CUDA) if device == "cuda" else set()
    return can | (set(_NEEDS_NCU) if report.source.format == "ncu" else set())


def _hints(
    a_hints: list[Hint], b_hints: list[Hint], *, with_rank: bool, b_can: set[str]
) -> DiffHints:
    a_by, b_by = _by_key(a_hints, with_rank), _by_key(b_hints, with_rank)
    out: dict[str, list[DiffHint]] = {"fixed": [], "new": [], "kept": [], "unjudged": []}
    for key in [*a_by, *(k for k in b_by if k not in a_by)]:
        a, b = a_by.get(key), b_by.get(key)
        group = "kept" if a and b else "fixed" if a else "new"
        needs = (*_NEEDS_CUDA, *_NEEDS_NCU)
        if group == "fixed" and a is not None and a.kind in needs and a.kind not in b_can:
            group = "unjudged"
        shown = b or a
        assert shown is not None
        out[group].append(
            DiffHint(
                key=key,
                kind=shown.kind,
                title=shown.title,
                a_title=a.title if a else None,
                b_title=b.title if b else None,
                a_gain_ns=a.gain_ns if a else None,
                b_gain_ns=b.gain_ns if b else None,
            )
        )
    for entries in out.values():
        entries.sort(key=lambda e: -max(e.a_gain_ns or 0, e.b_gain_ns or 0))
    return DiffHints(**out)


def _by_key(hints: list[Hint], with_rank: bool) -> dict[str, Hint]:
    """Hints by key; two of one key (rare) count as one, their gains summed."""
    out: dict[str, Hint] = {}
    for hint in hints:
        key = hint_key(hint, with_rank=with_rank)
        if key in out:
            gain_ns = out[key].gain_ns + hint.gain_ns
            out[key] = msgspec.structs.replace(out[key], gain_ns=gain_ns)
        else:
            out[key] = hint
    return out


def _roofline_moved(a_report: Report, b_report: Report) -> list[DiffPoint]:
    """Points of both runs' rooflines (same key) whose % of roof or achieved FLOP/s changed
    by more than ROOFLINE_MOVE of a's value; % of roof only where both are of one roof (an
    op memory-bound on one GPU and compute-bound on another is compared by its FLOP/s)."""
    b_points = {p.key: p for p in b_report.roofline.points}
    moved = []
    for a in a_report.roofline.points:
        b = b_points.get(a.key)
        if b is None:
            continue
        pct, flops = (
            (a.pct_of_roof, b.pct_of_roof),
            (a.achieved_flops_per_s, b.achieved_flops_per_s),
        )
        like = a.roof == b.roof
        if (like and _moved(*pct)) or _moved(*flops):
            moved.append(DiffPoint(a.key, _point_figures(a), _point_figures(b)))
    return moved


def _point_figures(point: RooflinePoint) -> DiffPointFigures:
    return DiffPointFigures(
        point.pct_of_roof, point.achieved_flops_per_s, point.time_ns, point.count, point.roof
    )


def _moved(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return False
    if a == 0:
        return b != 0
    return abs(b - a) / abs(a) > ROOFLINE_MOVE
