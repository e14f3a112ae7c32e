"""Hints: the product's voice. What is slow, the evidence, the time a fix gives back, the fix.

Every hint says how its gain was found and how much evidence stands behind it:

- ``gain_method``: one or more sentences (a capital first, a full stop last) naming the method
  and its inputs ("Sum of the GPU idle gaps whose cause is ...", "Kernel time x (1 - fp32
  rate / TF32 rate) ...") and, where it is one, saying it is a bound.
- ``confidence``, by the evidence the gain rests on:
  - high: time measured in the trace alone, whose cause the trace shows directly, and which
    the fix removes as a whole (idle gaps while a sync call or the DataLoader ran, allocator
    calls after warm-up, idle that one host cause explains for the most part);
  - medium: measured time combined with a model of what the fix leaves: roofs or rates of
    known hardware (datasheet, calibrated, user), an ideal schedule, perfect overlap, the
    gap a CUDA graph replay still leaves, the ops a fused kernel removes;
  - low: a rule of thumb (a fixed share such as half or a quarter), unknown or estimated
    hardware, kernel names as the only evidence, or time nothing in the trace explains.
  A gain_method that speaks of a fixed share ("half", "a quarter"), of unknown roofs or of
  names alone therefore goes with low confidence (tests/traces/test_hint_texts.py holds every
  detector to these rules on the shared traces).
- Texts a user reads (title, explanation, fix, code) hold numbers formatted by units.py and
  names, never Python reprs (tuples, lists, dicts, None).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from gpuprofile.analyses.claims import Claim
from gpuprofile.analyses.frames import SourceLine

KINDS = (
    "gpu-idle",
    "launch-overhead",
    "memory-bound",
    "compute-bound",
    "tensor-cores-unused",
    "attention-unfused",
    "sync-stall",
    "allocator-churn",
    "pageable-copy",
    "data-loading",
    "low-occupancy",
    "communication",
    "straggler",
    "pipeline-bubble",
    "load-imbalance",
    "precision-fallback",
    "reformat-overhead",
    "unfused-layers",
    "graph-break",
    "python-loop",
    "data-dependent-routing",
    "unfused-elementwise",
    "layout-conversion",
    "host-outside-gpu",
    "uncoalesced-access",
    "ddp-buffer-broadcast",
    "dla-fallback",
)
SEVERITIES = ("high", "medium", "low")
CONFIDENCES = ("high", "medium", "low")
# Evidence lanes are Trace table names: the widget zooms the timeline to them.
EVIDENCE_TABLES = ("ops", "kernels", "memcpy", "memset", "runtime", "memory")
MAX_EVIDENCE_EVENTS = 50


@dataclass(frozen=True)
class Evidence:
    """Where to look: event ids of one Trace table, and time windows (ns from trace start)."""

    table: str
    rank: int
    event_ids: tuple[int, ...] = ()
    windows: tuple[tuple[int, int], ...] = ()
    label: str = ""

    def __post_init__(self) -> None:
        if self.table not in EVIDENCE_TABLES:
            raise ValueError(f"evidence table {self.table!r} is not one of {EVIDENCE_TABLES}")
        if len(self.event_ids) > MAX_EVIDENCE_EVENTS:
            raise ValueError(f"at most {MAX_EVIDENCE_EVENTS} event ids: keep the heaviest")
        if any(end < start for start, end in self.windows):
            raise ValueError("an evidence window ends before it starts")


@dataclass(frozen=True, kw_only=True)
class Hint:
    kind: str
    title: str
    # Set by the findings pipeline (detectors.run_detectors) from gain_ns / basis_ns and the
    # cut-offs in analyses/thresholds.py; "" until then.
    severity: str = ""
    gain_ns: int  # estimated time a fix gives back
    gain_method: str  # how gain_ns was estimated, in a sentence
    confidence: str
    explanation: str  # plain words, with the numbers that triggered the hint
    numbers: Mapping[str, float | int | str]
    fix: tuple[str, ...]  # concrete steps
    code: str = ""  # a code sketch of the fix
    evidence: tuple[Evidence, ...] = ()
    rank: int | None = None  # None: the hint is about the whole run
    related: tuple[str, ...] = field(default=())  # roofline point keys this hint concerns
    # Filled by the findings pipeline from the evidence: the module paths that own it, largest
    # first, and the user's lines (analyses/modules.py, analyses/frames.py).
    modules: tuple[str, ...] = ()
    sources: tuple[SourceLine, ...] = ()
    # What the finding is about, within its kind and rank: an op pattern, a copy path, a set of
    # kernels. Two findings with one key on one rank say one thing; on several ranks, they are
    # folded into one job finding. Kept out of to_dict: the report names hints by position.
    subject: str = ""
    # The time gain_ns is a share of, for its severity: the rank's wall time, the steps'
    # windows, an engine's layer time. Kept out of to_dict, like subject.
    basis_ns: int = 0
    # The time on the rank's clock the gain comes from (analyses/claims.py): the pipeline
    # gives each nanosecond to one finding. None: a finding about the job, not one rank's time.
    claim: Claim | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"hint kind {self.kind!r} is not one of {KINDS}")
        if self.severity and self.severity not in SEVERITIES:
            raise ValueError(f"severity {self.severity!r} is not one of {SEVERITIES}")
        if self.confidence not in CONFIDENCES:
            raise ValueError(f"confidence {self.confidence!r} is not one of {CONFIDENCES}")
        if self.gain_ns < 0:
            raise ValueError("gain_ns is a time given back: it cannot be negative")

    @property
    def key(self) -> tuple[str, str]:
        """The finding's identity across ranks: its kind and its subject."""
        return (self.kind, self.subject)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(replace(self, claim=None))
        out["numbers"] = dict(self.numbers)
        del out["subject"], out["basis_ns"], out["claim"]
        return out


def ranked(hints: Iterable[Hint]) -> list[Hint]:
    """Largest gain first; ties by confidence, then kind, so the order is stable."""
    confidence_order = {c: i for i, c in enumerate(CONFIDENCES)}
    return sorted(hints, key=lambda h: (-h.gain_ns, confidence_order[h.confidence], h.kind))


def rank_prefix(trace_ranks: Iterable[int], rank: int) -> str:
    """ "Rank N: " for titles in multi-rank traces; nothing when the trace has one rank."""
    return f"Rank {rank}: " if len(list(trace_ranks)) > 1 else ""


def heaviest_events(
    rows: pd.DataFrame, table: str, rank: int, label: str, *, by: str = "dur_ns"
) -> Evidence:
    """Evidence of the MAX_EVIDENCE_EVENTS rows with the most ``by``, in time order, each with
    its own [start, end) window. ``rows`` has id, start_ns and dur_ns columns of ``table``."""
    # As rows.nlargest(MAX_EVIDENCE_EVENTS, by).sort_values("start_ns") picks and orders
    # them, on the three columns read: nlargest takes every column of a wide table.
    picked = largest(rows[by].to_numpy(), MAX_EVIDENCE_EVENTS)
    start = rows["start_ns"].to_numpy(np.int64)[picked]
    order = np.argsort(start, kind="quicksort")
    picked, start = picked[order], start[order]
    end = start + rows["dur_ns"].to_numpy(np.int64)[picked]
    return Evidence(
        table=table,
        rank=rank,
        event_ids=tuple(rows["id"].to_numpy(np.int64)[picked].tolist()),
        windows=tuple(zip(start.tolist(), end.tolist())),
        label=label,
    )


def largest(values: np.ndarray, n: int) -> np.ndarray:
    """The positions of the n largest values, largest first, ties in position order, then
    NaNs (in position order) where fewer values are known: pandas' nlargest(keep="first")."""
    known = np.flatnonzero(~np.isnan(values)) if values.dtype.kind == "f" else None
    key = -(values if known is None else values[known])
    positions = np.arange(len(values)) if known is None else known
    if len(key) > n:
        # Only those at or above the n-th largest are sorted (nlargest's own method).
        kept = np.flatnonzero(key <= np.partition(key, n - 1)[n - 1])
        key, positions = key[kept], positions[kept]
    chosen = positions[np.argsort(key, kind="stable")][:n]
    if known is not None and len(chosen) < n:
        missing = np.setdiff1d(np.arange(len(values)), known)
        chosen = np.r_[chosen, missing[: n - len(chosen)]]
    return chosen
