"""The sweep contract, ``gpuprofile.sweep/1``: what ``Sweep.report()`` returns, typed once.

A sweep profiles the same work at several values of one parameter (``gpuprofile.sweep``,
``%%gpuprofile --sweep``). Each point holds the medians over its repeats; each fit is a power
law ``y = a * value^exponent`` fitted in log-log space over every repeat (the repeats give the
interval its degrees of freedom), with its 95% interval and r². Times are nanoseconds.
"""

from __future__ import annotations

import msgspec

SWEEP_SCHEMA = "gpuprofile.sweep/1"
METRICS = ("time", "flops", "peak_bytes")
TOTAL = "total"


class SweepModule(msgspec.Struct, frozen=True):
    """A module at one value: medians over the repeats of its module row (report ModuleRow)."""

    path: str
    type: str
    forward_ns: int
    backward_ns: int
    gpu_ns: int
    flops: float | None  # None: no FLOP count for its ops
    alloc_bytes: int | None  # None: memory not recorded (--memory)
    peak_bytes: int | None
    time_samples_ns: list[int] = []  # forward + backward in each repeat that ran it


class SweepPoint(msgspec.Struct, frozen=True):
    value: float
    wall_ns: int  # median over repeats of the profiled call's wall
    step_ns: int  # median over repeats of the wall per step counted (the wall without steps)
    repeats: int
    wall_samples_ns: list[int]  # each repeat's wall, in order
    step_samples_ns: list[int]
    runs: list[str]  # each repeat's run id in the history ([] when the history is off)
    modules: list[SweepModule]
    flops: float | None  # the whole call's counted FLOPs (median), None: none counted
    peak_bytes: int | None  # the call's peak memory in use (median), None: not recorded


class Fit(msgspec.Struct, frozen=True):
    subject: str  # a module path, or "total"
    metric: str  # time | flops | peak_bytes
    exponent: float
    coefficient: float  # a, in the metric's unit: y = a * value^exponent
    interval: tuple[float, float] | None  # 95%; None: too few samples (fewer than 3)
    r2: float | None  # None: the metric does not vary, an exact fit
    samples: int


class Projected(msgspec.Struct, frozen=True):
    subject: str
    metric: str
    value: float  # predicted at the projection's value
    interval: tuple[float, float] | None  # 95% prediction interval
    share_of_step: float | None  # time only: the subject's predicted time over the step's


class Projection(msgspec.Struct, frozen=True):
    value: float  # the parameter's value predicted at
    figures: list[Projected]


class SweepStop(msgspec.Struct, frozen=True):
    """Where a sweep stopped: the value whose run ran out of memory (larger ones were not run)."""

    value: float
    error: str  # the exception, type: message (untrusted text)
    run: str | None  # the failed run's id in the history: its partial profile and post-mortem


class SweepReport(msgspec.Struct, frozen=True):
    schema: str
    parameter: str
    values: list[float]
    points: list[SweepPoint]
    fits: list[Fit]
    projection: Projection | None
    # Subjects and metrics left unfitted, and why (a module seen at one value only).
    notes: list[str] = []
    stopped: SweepStop | None = None
