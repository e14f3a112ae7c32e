"""The time a finding's gain comes from, so that no nanosecond is given back twice.

A detector names, with its hint, the time its gain is part of (its ``Claim``): the idle gaps
it would close, the kernels of the ops it would change (their ops' own time on a CPU trace),
the host time it would remove. All are [start, end) on the rank's one clock. The findings
pipeline (detectors.shared_gains) then hands each nanosecond to one finding: the largest gain
keeps its time; a smaller finding that claims some of the same time keeps the share of its
gain that lies in time nobody claimed before it, and one whose time was all claimed already is
folded into the finding that took most of it.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from gpuprofile.analyses.intervals import IntervalSet, merged_blocks
from gpuprofile.analyses.lookups import Lookups, outermost_with


class Claim:
    """Disjoint [start, end) blocks, in order; equal only to itself (no array comparison)."""

    __slots__ = ("_set", "ends", "starts")

    def __init__(self, starts: np.ndarray, ends: np.ndarray) -> None:
        start = np.asarray(starts, dtype=np.int64)
        end = np.asarray(ends, dtype=np.int64)
        keep = end > start
        self.starts, self.ends = merged_blocks(start[keep], end[keep])
        self._set: IntervalSet | None = None

    @property
    def length_ns(self) -> int:
        return int((self.ends - self.starts).sum())

    def overlap_ns(self, other: Claim) -> int:
        """How much of this claim the other holds too."""
        if not len(self.starts) or not len(other.starts):
            return 0
        return int(other.intervals().coverage(self.starts, self.ends).sum())

    def intervals(self) -> IntervalSet:
        if self._set is None:
            self._set = IntervalSet(self.starts, self.ends)
        return self._set

    def minus(self, other: Claim) -> Claim:
        """The part of this claim the other does not hold."""
        if not len(self.starts) or not len(other.starts):
            return self
        cuts = _merged(self.edges(), other.edges())
        lo, hi = cuts[:-1], cuts[1:]
        # Every end of either claim is a cut: each piece lies wholly in or out of each.
        keep = self.holds(lo) & ~other.holds(lo)
        return Claim(lo[keep], hi[keep])

    def edges(self) -> np.ndarray:
        """Every start and end, in order (the blocks are disjoint): start, end, start..."""
        return np.column_stack((self.starts, self.ends)).ravel()

    def holds(self, at: np.ndarray) -> np.ndarray:
        """Per time, whether it lies in one of the claim's blocks."""
        block = np.searchsorted(self.starts, at, side="right") - 1
        return np.asarray((block >= 0) & (at < self.ends[np.maximum(block, 0)]))

    def union(self, other: Claim) -> Claim:
        return Claim(np.r_[self.starts, other.starts], np.r_[self.ends, other.ends])

    def __repr__(self) -> str:  # cheap: never the arrays
        return f"Claim({len(self.starts)} blocks, {self.length_ns} ns)"


def _merged(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The sorted distinct values of two sorted arrays: a stable sort merges the two runs in
    linear time, where np.union1d sorts from scratch."""
    merged = np.concatenate([a, b])
    merged.sort(kind="stable")
    return merged[np.r_[True, merged[1:] != merged[:-1]]] if len(merged) else merged


NOTHING = Claim(np.zeros(0, np.int64), np.zeros(0, np.int64))


def rows_claim(start: np.ndarray, dur: np.ndarray) -> Claim:
    """The claim of table rows given their starts and durations."""
    start = np.asarray(start, dtype=np.int64)
    return Claim(start, start + np.asarray(dur, dtype=np.int64))


def frame_claim(rows: pd.DataFrame) -> Claim:
    """The claim of a frame's rows (start_ns and dur_ns columns: gaps, kernels, ops)."""
    return rows_claim(rows["start_ns"].to_numpy(), rows["dur_ns"].to_numpy())


def ids_claim(facts: Lookups, rank: int, table: str, ids: Iterable[int]) -> Claim:
    """The claim of rows of a table by id: kernels their own time, ops their work
    (op_claim)."""
    if table == "ops":
        return op_ids_claim(facts, rank, ids)
    at = facts.id_index(table).get_indexer(pd.Index(np.fromiter(ids, np.int64)))
    rows, frame = at[at >= 0], facts.trace.table(table)
    # Two columns at the rows, not every column of the table (kernels has two dozen).
    return rows_claim(frame["start_ns"].to_numpy()[rows], frame["dur_ns"].to_numpy()[rows])


def op_ids_claim(facts: Lookups, rank: int, op_ids: Iterable[int]) -> Claim:
    """op_claim of the ops with these ids (unknown ids are skipped)."""
    at = facts.id_index("ops").get_indexer(pd.Index(np.fromiter(op_ids, np.int64)))
    return op_claim(facts, rank, at[at >= 0])


def op_claim(facts: Lookups, rank: int, op_rows: np.ndarray) -> Claim:
    """The time of these ops' work: the kernels they or any op inside them launched, on a
    rank with kernels; on a CPU trace, the ops' own time. op_rows: positions in the ops table."""
    trace = facts.trace
    ops = trace.ops
    flag = np.zeros(len(ops), dtype=bool)
    flag[np.asarray(op_rows, dtype=np.int64)] = True
    kernels = facts.rank_table("kernels", rank)
    if len(kernels):
        at = facts.id_index("ops").get_indexer(pd.Index(kernels["op_id"].to_numpy()))
        inside = outermost_with(flag, facts.op_parents)
        mine = (at >= 0) & (inside[np.maximum(at, 0)] >= 0)
        return rows_claim(kernels["start_ns"].to_numpy()[mine], kernels["dur_ns"].to_numpy()[mine])
    rows = np.flatnonzero(flag)
    return rows_claim(ops["start_ns"].to_numpy()[rows], ops["dur_ns"].to_numpy()[rows])


class Ledger:
    """How much of each nanosecond of one rank's time findings have given back so far.

    A finding's gain is spread evenly over its claim (its density: gain per claimed ns, at
    most 1). Where findings claim the same time, each nanosecond gives back at most itself:
    a later finding keeps, per nanosecond, the smaller of its density and what is left. So
    two findings that split one op's time between them (an elementwise chain counts each op up
    to its roof time, the memory-bound finding the rest) both keep theirs, and two that claim
    all of the same time (unfused attention and memory-bound on the same softmax) do not."""

    def __init__(self) -> None:
        self.bounds = np.zeros(0, np.int64)  # breakpoints; segment i: [bounds[i], bounds[i+1])
        self.used = np.zeros(0, np.float64)  # given back per ns on each segment, 0..1

    def take(self, claim: Claim, gain_ns: int) -> int:
        """Grant a finding the part of its gain that is left in its claim; record it."""
        total = claim.length_ns
        if total <= 0 or gain_ns <= 0:
            return 0
        density = min(gain_ns / total, 1.0)
        bounds = _merged(self.bounds, claim.edges())
        used = np.zeros(max(len(bounds) - 1, 0), np.float64)
        if len(self.used):
            # Each new segment lies inside one old one (or outside them all).
            at = np.searchsorted(self.bounds, bounds[:-1], side="right") - 1
            inside = (at >= 0) & (at < len(self.used))
            used[inside] = self.used[at[inside]]
        length = np.diff(bounds).astype(np.float64)
        # Every end of the claim is a bound: each segment lies wholly in or out of it.
        mine = claim.holds(bounds[:-1])
        granted = np.where(mine, np.minimum(density, np.maximum(1.0 - used, 0.0)), 0.0)
        self.bounds, self.used = bounds, used + granted
        # floor, less a hair of float error (1 - 0.9 is 0.0999...)
        return min(int(float((granted * length).sum()) + 1e-6), gain_ns)
