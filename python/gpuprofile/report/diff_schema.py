"""The diff contract, ``gpuprofile.diff/1`` (docs/diff.md), defined once: the Structs that
``diff_runs`` builds, that ``Diff.to_dict()``, ``gpuprofile diff --format json`` and a report's
``baseline`` give as JSON, and that ``docs/diff.schema.json`` and the widget's types
(js/model/report_types.d.ts) are generated from (report/schema_gen.py).

Field order is the JSON's key order. A field typed ``Number`` keeps an int an int and a float
a float, as the figures were summed or measured.
"""

from __future__ import annotations

from typing import Literal

import msgspec

SCHEMA = "gpuprofile.diff/1"

Number = int | float  # as report/schema.py's (which imports this module)
# How a row of b was paired with a row of a: by normalized name, by place in the op tree
# (another vendor's or library's name), or not at all.
MatchedBy = Literal["name", "role", "position", "only in a", "only in b"]
# The step-time verdict of the bootstrap interval of b/a: wholly below 1, wholly above, or not.
Verdict = Literal["faster", "slower", "within noise"]


class DiffRunName(msgspec.Struct, frozen=True):
    """How the history names a recorded run (store/history.py ``Run.name()``)."""

    id: str
    label: str | None
    time: Number  # seconds since the epoch, as the history recorded it


class DiffRun(msgspec.Struct, frozen=True):
    """One side of the diff: what was read, its ranks and devices, its recorded run."""

    path: str | None
    format: str
    ranks: int
    devices: list[str]
    run: DiffRunName | None  # None: not a recorded run


class DiffChange(msgspec.Struct, frozen=True):
    """A figure in a and in b: delta = b - a, ratio = b / a (None when a is 0 or unknown)."""

    a: Number | None
    b: Number | None
    delta: Number | None
    ratio: float | None


class DiffPair(msgspec.Struct, frozen=True):
    """Where each side's steps came from; None without steps."""

    a: str | None
    b: str | None


class DiffCounts(msgspec.Struct, frozen=True):
    a: int
    b: int


class DiffStepChange(msgspec.Struct, frozen=True):
    """The median step of each run (DiffChange's fields), the steps each side has, and the
    bootstrap interval of b/a's ratio of median steps with its verdict: both None with too
    few steps on a side."""

    a: Number | None
    b: Number | None
    delta: Number | None
    ratio: float | None
    source: DiffPair
    count: DiffCounts
    interval: list[float] | None
    confidence: float
    verdict: Verdict | None


class DiffIdleChange(msgspec.Struct, frozen=True):
    """GPU idle time of one cause in a and in b, in ns."""

    a: int
    b: int
    delta: int


class DiffSummary(msgspec.Struct, frozen=True):
    """Whole-job totals; a GPU figure is None for a run without a GPU timeline."""

    wall_ns: DiffChange
    busy_ns: DiffChange
    idle_ns: DiffChange
    step_ns: DiffStepChange | None  # None unless both runs have steps
    idle_by_cause: dict[str, DiffIdleChange]


class DiffMemory(msgspec.Struct, frozen=True):
    """Peak memory of one module (its row's peak_bytes), or of the whole run ("peak"), in a
    and in b; None where that run recorded no memory (--memory) or lacks the module."""

    module: str
    a_bytes: int | None
    b_bytes: int | None
    delta: int | None


class DiffRow(msgspec.Struct, frozen=True):
    """A kernel or op in both runs (or one), its time and count in each."""

    name: str
    a_ns: int
    b_ns: int
    delta_ns: int
    a_count: int
    b_count: int
    matched_by: MatchedBy
    b_name: str | None  # the name in b when it differs (matched by position)
    # The names as printed: short, told apart from the table's other names
    # (analyses/kernel_names.short_kernel_names); "": the name itself.
    label: str = ""
    b_label: str | None = None


class DiffHint(msgspec.Struct, frozen=True):
    """A hint fixed, new or kept: its key across runs and its title and gain in each."""

    key: str
    kind: str
    title: str
    a_title: str | None
    b_title: str | None
    a_gain_ns: int | None
    b_gain_ns: int | None


class DiffHints(msgspec.Struct, frozen=True):
    fixed: list[DiffHint]
    new: list[DiffHint]
    kept: list[DiffHint]
    # Hints of a that b's run cannot judge (it lacks what the finding reads: ROCm labels no
    # copy pageable, writes no blocks per SM): not fixed, only unseen.
    unjudged: list[DiffHint] = []


class DiffPointFigures(msgspec.Struct, frozen=True):
    pct_of_roof: Number | None
    achieved_flops_per_s: Number | None
    time_ns: Number
    count: int
    # The roof pct_of_roof is of (dram, fp32, bf16, ...): two runs' percentages compare only
    # on one roof. None: not known (or a diff written before it was kept).
    roof: str | None = None


class DiffPoint(msgspec.Struct, frozen=True):
    """A roofline point (by key) whose % of roof or achieved FLOP/s moved."""

    key: str
    a: DiffPointFigures
    b: DiffPointFigures


class DiffDocument(msgspec.Struct, frozen=True):
    """Run b against run a (a: the baseline)."""

    schema: str
    a: DiffRun
    b: DiffRun
    summary: DiffSummary
    kernels: list[DiffRow]
    ops: list[DiffRow]
    hints: DiffHints
    roofline: list[DiffPoint]
    notes: list[str]
    # Peak memory, the run's first ("peak"), then by module, largest change first; [] when
    # neither run recorded memory.
    memory: list[DiffMemory] = []
