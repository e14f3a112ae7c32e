"""One run as a diff and the CI gate read it: its report, its ops and kernels by name, its step
times. Made from a Trace (places in the op tree found on demand) or from the digest the history
store keeps of a run whose trace it did not keep, so a stored run diffs like a loaded one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuprofile.analyses.steps import is_step
from gpuprofile.report.diff_match import NameRow, NameRows, Rows
from gpuprofile.report.schema import Report
from gpuprofile.trace.model import Trace

DIGEST_SCHEMA = "gpuprofile.digest/1"
# Rows of a table whose op-tree place a digest keeps (the longest first): a kernel's place costs
# a pass over the kernels, and rows past these are small enough that "only in a / b" is fair.
PLACED_ROWS = 500


@dataclass(frozen=True)
class DiffSide:
    """What a diff or a regression check reads of one run.

    Parameters:
        report: its report (gpuprofile.report/1).
        kernels, ops: its kernels and ranked ops by name.
        steps: every step's time in ns (float; empty without steps).
        steps_from: where the steps came from ("gpu step markers", "host ProfilerStep
            ranges", "recorded windows"); None without steps.
        run: the history's run it is, {"id", "label", "time"}; None: not a recorded run.
    """

    report: Report
    kernels: Rows
    ops: Rows
    steps: np.ndarray
    steps_from: str | None
    run: dict[str, Any] | None = None

    @property
    def positive_steps(self) -> np.ndarray:
        """The steps that took time: a zero-length step (an empty marker) would make a
        resampled median 0."""
        return self.steps[self.steps > 0]


@dataclass(frozen=True)
class _StoredRows:
    rows: dict[str, NameRow]
    places: dict[str, tuple[int, ...]]
    roles: dict[str, str]
    time: str = "host"  # what an op row's time is (NameRows.time)

    def position(self, row: NameRow) -> tuple[int, ...] | None:
        return self.places.get(row.name)

    def role(self, row: NameRow) -> str | None:
        return self.roles.get(row.name)


def side_of_trace(trace: Trace, report: Report) -> DiffSide:
    """A run given as its Trace and its report (build_report)."""
    times, source = step_times(trace, report)
    return DiffSide(report, NameRows(trace, "kernels"), NameRows(trace, "ops"), times, source)


def step_times(trace: Trace, report: Report) -> tuple[np.ndarray, str | None]:
    """Every step's time in ns and where they came from: the GPU step markers (ProfilerStep#N
    on the GPU timeline) of every rank, else the host's ProfilerStep#N ranges, else the
    recorded windows of a ``--steps`` capture.

    Parameters:
        trace: the run's Trace.
        report: its report (build_report).

    Returns:
        The step times (float ns, in trace order; empty without steps) and their source
        ("gpu step markers", "host ProfilerStep ranges", "recorded windows"; None when empty).
    """
    gpu = [s.window_ns for r in report.ranks if r.gpu for s in r.gpu.steps]
    ops = trace.ops
    host = is_step(ops["name"]) if len(ops) else np.zeros(0, dtype=bool)
    # Kineto can put fewer markers on the GPU than the host recorded steps (on an H200 with
    # torch 2.11, one marker for a window of 25 steps): the GPU's markers then hide steps,
    # and the host's ranges are the steps.
    if gpu and len(gpu) >= int(host.sum()):
        return np.asarray(gpu, dtype=float), "gpu step markers"
    if host.any():
        return ops["dur_ns"].to_numpy()[host].astype(float), "host ProfilerStep ranges"
    windows = [w.end_ns - w.start_ns for w in trace.meta.windows]
    if windows:
        return np.asarray(windows, dtype=float), "recorded windows"
    return np.empty(0), None


def digest(side: DiffSide) -> dict[str, Any]:
    """The side as plain JSON (schema gpuprofile.digest/1): each row as [name, total_ns, count,
    order, place or null, role or null], places kept for the PLACED_ROWS longest rows of each
    table (a digest written before roles has five entries a row)."""
    return {
        "schema": DIGEST_SCHEMA,
        "kernels": _digest_rows(side.kernels),
        "ops": _digest_rows(side.ops),
        "ops_time": side.ops.time,
        "steps": [float(t) for t in side.steps],
        "steps_from": side.steps_from,
    }


def _digest_rows(rows: Rows) -> list[list[Any]]:
    placed = sorted(rows.rows.values(), key=lambda r: -r.total_ns)[:PLACED_ROWS]
    places = {row.name: rows.position(row) for row in placed}
    return [
        [
            r.name,
            r.total_ns,
            r.count,
            r.order,
            list(p) if (p := places.get(r.name)) else None,
            rows.role(r) if r.name in places else None,
        ]
        for r in rows.rows.values()
    ]


def side_of_digest(
    report: Report, document: dict[str, Any], run: dict[str, Any] | None = None
) -> DiffSide:
    """A stored run, from its report and its digest (see ``digest``); ``run``: its id, label
    and time."""
    return DiffSide(
        report,
        _stored_rows(document["kernels"]),
        _stored_rows(document["ops"], document.get("ops_time", "host")),
        np.asarray(document["steps"], dtype=float),
        document["steps_from"],
        run,
    )


def _stored_rows(rows: list[list[Any]], time: str = "host") -> _StoredRows:
    # first (a table row number) means nothing without the trace; places carry the position.
    by_name = {
        str(name): NameRow(
            name=str(name), total_ns=int(total), count=int(count), first=-1, order=int(order)
        )
        for name, total, count, order, *_ in rows
    }
    places = {str(r[0]): tuple(int(i) for i in r[4]) for r in rows if r[4] is not None}
    roles = {str(r[0]): str(r[5]) for r in rows if len(r) > 5 and r[5] is not None}
    return _StoredRows(by_name, places, roles, time)
