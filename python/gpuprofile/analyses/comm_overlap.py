"""How much of a rank's communication compute hides: the figures the communication hint and
the job view share.

On a GPU rank, communication is the union of its communication kernels (``kernel_kind``), per
device; the part during which a compute kernel ran on the same device (on another stream) is
overlapped, the rest exposed. On a CPU-only rank (gloo), communication is its ``gloo:*`` and
``c10d::*`` ops, and compute every outermost aten op that is not one of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from gpuprofile.analyses.claims import NOTHING, Claim
from gpuprofile.analyses.intervals import union_length
from gpuprofile.analyses.kernel_kind import COMMUNICATION, COMPUTE
from gpuprofile.analyses.lookups import Lookups
from gpuprofile.analyses.names import matches

_CPU_COLLECTIVE = re.compile(r"^(gloo:|c10d::)")


@dataclass(frozen=True)
class CommOverlap:
    """One rank's communication.

    Attributes:
        on_gpu: measured from kernels (else from CPU ops).
        events: the communication events (kernels or ops) as rows of their table.
        comm_ns: the union of their intervals.
        overlapped_ns: the part of it during which compute ran.
        exposed: the rest, as time on the rank's clock (the communication finding's claim).
    """

    on_gpu: bool
    events: pd.DataFrame
    comm_ns: int
    overlapped_ns: int
    exposed: Claim

    @property
    def exposed_ns(self) -> int:
        return self.comm_ns - self.overlapped_ns

    @property
    def overlap(self) -> float | None:
        """Share of communication that compute hid; None without communication."""
        return self.overlapped_ns / self.comm_ns if self.comm_ns else None


def comm_overlap(facts: Lookups, rank: int) -> CommOverlap | None:
    """The rank's communication and how much compute hid it; None when it has none.
    facts: the trace and its lookups (``Analysis.comm_overlap`` keeps each rank's)."""
    kernels = facts.rank_table("kernels", rank)
    if len(kernels):
        kinds = facts.kernel_classes.kinds_of(kernels["name"])
        comm = kernels[kinds == COMMUNICATION]
        if comm.empty:
            return None
        compute = kernels[kinds == COMPUTE]
        comm_ns = overlapped = 0
        exposed = NOTHING
        for device, rows in comm.groupby("device", sort=True):
            start, end = bounds(rows)
            c_start, c_end = bounds(compute[compute["device"] == device])
            comm_ns += union_length(start, end)
            overlapped += overlap_ns(start, end, c_start, c_end)
            exposed = exposed.union(Claim(start, end).minus(Claim(c_start, c_end)))
        return CommOverlap(True, comm, comm_ns, overlapped, exposed)
    mine = facts.rank_rows("ops", rank)
    ops = facts.rank_table("ops", rank)
    if ops.empty:
        return None
    is_comm = matches(ops["name"], _CPU_COLLECTIVE, anchored=True)
    comm = ops[is_comm]
    if comm.empty:
        return None
    compute = ops[~is_comm & facts.outermost_cpu_ops[mine]]
    start, end = bounds(comm)
    return CommOverlap(
        False,
        comm,
        union_length(start, end),
        overlap_ns(start, end, *bounds(compute)),
        Claim(start, end).minus(Claim(*bounds(compute))),
    )


def overlap_ns(
    a_start: np.ndarray, a_end: np.ndarray, b_start: np.ndarray, b_end: np.ndarray
) -> int:
    """Length of (union of A) intersected with (union of B): |A| + |B| - |A u B|."""
    both = union_length(np.concatenate([a_start, b_start]), np.concatenate([a_end, b_end]))
    return union_length(a_start, a_end) + union_length(b_start, b_end) - both


def bounds(rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    start = rows["start_ns"].to_numpy(np.int64)
    return start, start + rows["dur_ns"].to_numpy(np.int64)
