"""Bubbles: the share of each recorded step in which a rank of a job does not compute.

Defined so that anyone can recompute it from the trace:

- a rank's **compute** is its GPU kernels that are not communication (``kernel_kind`` compute),
  or, on a rank with no GPU kernels, its CPU operator events (category ``cpu_op``) that do not
  communicate (``kernel_kind.is_comm_op``). Annotations (``ProfilerStep#N``,
  ``record_function`` ranges) are not compute;
- a rank's **step N** is its ``ProfilerStep#N`` annotation; a compute event belongs to the step
  in which it (for a kernel: the op that launched it, else the kernel itself) starts. A trace
  without step annotations is one step;
- the job's **window** of step N runs from the earliest start to the latest end of any rank's
  compute in that step;
- a rank's **bubble fraction** in that step is the share of the window not covered by the
  union of its compute (clipped to the window); with several steps, their mean.

Pipeline parallelism is recognised from point-to-point sends between ranks
(``collectives.match_collectives``): the ranks that send to each other, in rank order, form the
stages (p) when every consecutive pair exchanges; microbatches (m) are the sends per step from
the first stage to the second. The schedule's own bubble is (p-1)/(m+p-1) (GPipe, 1F1B); the
excess over it is the measured mean bubble of the stages minus that, and the bottleneck stage
is the one that computes longest per step.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from gpuprofile.analyses.intervals import merged_blocks
from gpuprofile.analyses.kernel_kind import COMPUTE, KernelClasses, is_comm_op
from gpuprofile.analyses.names import strings
from gpuprofile.analyses.steps import step_numbers
from gpuprofile.trace.model import NO_ID, Trace


@dataclass(frozen=True)
class StepRank:
    rank: int
    compute_ns: int  # union of its compute inside the job's window
    wait_ns: int  # its collective waits arriving inside the window
    bubble_fraction: float


@dataclass(frozen=True)
class Step:
    step: int | None  # N of ProfilerStep#N; None: the trace has no step annotations
    start_ns: int
    end_ns: int
    ranks: tuple[StepRank, ...]


@dataclass(frozen=True)
class Pipeline:
    stages: int
    stage_ranks: tuple[int, ...]
    microbatches: int
    theoretical_bubble_fraction: float
    bubble_fraction: float  # measured: mean over stages and steps
    bottleneck_rank: int


def compute_events(trace: Trace, classes: KernelClasses) -> pd.DataFrame:
    """Every rank's compute (see the module docstring): rank, start_ns, end_ns, at_ns (the
    time that places it in a step), table, id, name; classes: ``Analysis.kernel_classes``.
    Kept per trace (bubbles and stragglers
    both read it); read-only."""
    frames = []
    kernels = trace.kernels
    gpu_ranks = set(kernels["rank"].unique().tolist())
    if len(kernels):
        k = kernels[classes.kinds_of(kernels["name"]) == COMPUTE]
        ops = trace.ops
        at_op = pd.Index(ops["id"].to_numpy()).get_indexer(k["op_id"].to_numpy())
        op_start = np.r_[ops["start_ns"].to_numpy(np.int64), NO_ID]
        at = np.where(at_op >= 0, op_start[at_op], k["start_ns"].to_numpy())
        frames.append(_events(k, "kernels", at))
    ops = trace.ops
    cpu = ops["rank"].isin([r for r in trace.ranks if r not in gpu_ranks]).to_numpy()
    if cpu.any():
        o = ops[cpu & (ops["category"] == "cpu_op").to_numpy() & ~is_comm_op(ops["name"])]
        frames.append(_events(o, "ops", o["start_ns"].to_numpy()))
    frames = [f for f in frames if len(f)]
    if not frames:
        return _events(ops.iloc[:0], "ops", np.zeros(0, np.int64))
    return pd.concat(frames, ignore_index=True)


def _events(rows: pd.DataFrame, table: str, at: np.ndarray) -> pd.DataFrame:
    start = rows["start_ns"].to_numpy(np.int64)
    return pd.DataFrame(
        {
            "rank": rows["rank"].to_numpy(np.int64),
            "start_ns": start,
            "end_ns": start + rows["dur_ns"].to_numpy(np.int64),
            "at_ns": np.asarray(at, np.int64),
            "table": table,
            "id": rows["id"].to_numpy(np.int64),
            "name": strings(rows["name"]),
        }
    )


def step_spans(trace: Trace) -> pd.DataFrame:
    """Per rank and step: rank, step, start_ns, end_ns of its ProfilerStep#N annotations."""
    ops = trace.ops
    step = step_numbers(ops["name"])
    marked = step >= 0
    rows = ops[marked]
    return pd.DataFrame(
        {
            "rank": rows["rank"].to_numpy(np.int64),
            "step": step[marked],
            "start_ns": rows["start_ns"].to_numpy(np.int64),
            "end_ns": (rows["start_ns"] + rows["dur_ns"]).to_numpy(np.int64),
        }
    )


def bubbles(trace: Trace, collectives: pd.DataFrame, events: pd.DataFrame) -> list[Step]:
    """Per recorded step (matched across ranks by N), the job's window and each rank's
    compute, wait and bubble fraction.

    Parameters:
        trace: a trace of two ranks or more, clocks aligned.
        collectives: ``Analysis.collectives`` (its waits are counted per step).
        events: ``compute_events(trace, classes)``.

    Returns:
        The steps in order; [] when no rank computes.
    """
    if events.empty:
        return []
    # Columns, not frames: a group's frame would copy every column (names included) per step.
    step_of = _steps_of(events, step_spans(trace))
    kept = np.flatnonzero(step_of != OUTSIDE_STEPS)
    kept = kept[np.argsort(step_of[kept], kind="stable")]
    step_of = step_of[kept]
    rank_of = events["rank"].to_numpy(np.int64)[kept]
    starts = events["start_ns"].to_numpy(np.int64)[kept]
    ends = events["end_ns"].to_numpy(np.int64)[kept]
    arrival = collectives["arrival_ns"].to_numpy(np.int64)
    wait_rank = collectives["rank"].to_numpy(np.int64)
    wait_ns = collectives["wait_ns"].to_numpy(np.int64)
    out = []
    steps, firsts = np.unique(step_of, return_index=True)  # step_of is sorted: runs of steps
    stops = np.r_[firsts[1:], len(step_of)]
    for step, first, stop in zip(steps.tolist(), firsts.tolist(), stops.tolist(), strict=True):
        start, end = int(starts[first:stop].min()), int(ends[first:stop].max())
        window = end - start
        if window <= 0:
            continue
        waiting = (arrival >= start) & (arrival < end)
        ranks = []
        for rank in trace.ranks:
            theirs = first + np.flatnonzero(rank_of[first:stop] == rank)
            blocks = merged_blocks(starts[theirs], ends[theirs])
            computed = int((np.minimum(blocks[1], end) - np.maximum(blocks[0], start)).sum())
            ranks.append(
                StepRank(
                    rank=rank,
                    compute_ns=computed,
                    wait_ns=int(wait_ns[waiting & (wait_rank == rank)].sum()),
                    bubble_fraction=1.0 - computed / window,
                )
            )
        out.append(Step(None if step < 0 else step, start, end, tuple(ranks)))
    return out


# _steps_of's step for an event outside every step of its rank.
OUTSIDE_STEPS = -2


def _steps_of(events: pd.DataFrame, spans: pd.DataFrame) -> np.ndarray:
    """Per event, the step its rank was in when it started (OUTSIDE_STEPS: none); -1 for
    every event when the trace has no steps (it is one step)."""
    if spans.empty:
        return np.full(len(events), -1, np.int64)
    step = np.full(len(events), OUTSIDE_STEPS, np.int64)
    for rank, theirs in spans.groupby("rank"):
        theirs = theirs.sort_values("start_ns")
        rows = np.flatnonzero(events["rank"].to_numpy() == rank)
        at = events["at_ns"].to_numpy()[rows]
        i = np.searchsorted(theirs["start_ns"].to_numpy(), at, side="right") - 1
        inside = (i >= 0) & (at < theirs["end_ns"].to_numpy()[np.maximum(i, 0)])
        step[rows[inside]] = theirs["step"].to_numpy()[i[inside]]
    return step


def mean_bubble(steps: list[Step], rank: int) -> float | None:
    values = [r.bubble_fraction for s in steps for r in s.ranks if r.rank == rank]
    return float(np.mean(values)) if values else None


def pipeline(steps: list[Step], collectives: pd.DataFrame) -> Pipeline | None:
    """The pipeline the sends describe (module docstring), or None: no point-to-point sends
    whose peers are known, or ranks that do not form a chain."""
    sends = collectives[(collectives["name"] == "send") & (collectives["peer"] != NO_ID)]
    if sends.empty or not steps:
        return None
    edges = sends.groupby(["rank", "peer"]).size()
    involved = sorted(set(edges.index.get_level_values(0)) | set(edges.index.get_level_values(1)))
    pairs = {(int(a), int(b)) for a, b in edges.index}
    chain = all((a, b) in pairs or (b, a) in pairs for a, b in itertools.pairwise(involved))
    if len(involved) < 2 or not chain:
        return None
    first, second = involved[0], involved[1]
    forward = int(edges.get((first, second), 0)) or int(edges.get((second, first), 0))
    p = len(involved)
    m = max(1, round(forward / max(1, len(steps))))
    bubble = [mean_bubble(steps, r) for r in involved]
    compute = {
        r: np.mean([x.compute_ns for s in steps for x in s.ranks if x.rank == r]) for r in involved
    }
    return Pipeline(
        stages=p,
        stage_ranks=tuple(int(r) for r in involved),
        microbatches=m,
        theoretical_bubble_fraction=(p - 1) / (m + p - 1),
        bubble_fraction=float(np.mean([b for b in bubble if b is not None])),
        bottleneck_rank=int(max(compute, key=lambda r: compute[r])),
    )
