"""Sampler readings as the Trace's counters table, on the trace's own time base.

Which clock: with torch 2.13 (CPU build, Linux) Kineto's exported timestamps are Unix time,
i.e. the clock of ``time.time_ns()``: ``baseTimeNanoseconds + ts * 1000`` of a record_function
fell between time.time_ns() read just before and just after it (measured: 40-160 us after the
first read, 3-5 us before the second), while it was ~1.8e18 ns away from time.monotonic_ns()
and time.perf_counter_ns(). The Kineto importer keeps that start as ``meta["origin_ns"]``, so a
sample taken at time.time_ns() = t sits at t - origin_ns on the trace. tests/unit/test_sampler.py
checks this on every run, so a torch that changes clocks fails a test rather than shifting lanes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from gpuprofile.capture.sources import Reading
from gpuprofile.trace.model import TIMELINE_TABLES, Trace, make_table


def with_samples(
    trace: Trace,
    samples: Sequence[tuple[int, Reading]],
    missing: Mapping[str, str],
    *,
    interval_s: float | None = None,
    dropped: int = 0,
    rank: int | None = None,
) -> Trace:
    """A copy of ``trace`` with the samples added to its counters and ``meta["sampler"]`` set.

    Counters are step-wise (a value holds until the next sample), so per series the last sample
    taken before the trace's first event moves to time 0, where its value still held, and
    samples after the trace's last event are left out: every counter lies within the trace.
    """
    if "origin_ns" not in trace.meta:
        raise ValueError("the trace has no meta['origin_ns']: samples cannot be placed on it")
    origin = int(trace.meta["origin_ns"])
    if rank is None:
        rank = trace.ranks[0] if trace.ranks else 0
    end = trace_end_ns(trace)
    series: dict[tuple[str, str, int], list[tuple[int, float]]] = {}
    for time_ns, reading in samples:
        key = (reading.name, reading.unit, reading.device)
        series.setdefault(key, []).append((int(time_ns) - origin, float(reading.value)))
    names: list[str] = []
    units: list[str] = []
    devices: list[int] = []
    times: list[int] = []
    values: list[float] = []
    for (name, unit, device), points in series.items():
        points.sort(key=lambda p: p[0])
        before = [p for p in points if p[0] < 0]
        kept = [(0, before[-1][1])] if before else []
        kept += [p for p in points if p[0] >= 0 and (end is None or p[0] <= end)]
        for time_ns, value in kept:
            names.append(name)
            units.append(unit)
            devices.append(device)
            times.append(time_ns)
            values.append(value)
    old = trace.counters
    counters = make_table(
        "counters",
        {
            "rank": np.concatenate([old["rank"].to_numpy(), np.full(len(times), rank)]),
            "name": [*old["name"].astype(str), *names],
            "unit": [*old["unit"].astype(str), *units],
            "device": np.concatenate([old["device"].to_numpy(), np.asarray(devices, dtype=int)]),
            "time_ns": np.concatenate([old["time_ns"].to_numpy(), np.asarray(times, dtype=int)]),
            "value": np.concatenate([old["value"].to_numpy(), np.asarray(values, dtype=float)]),
        },
    )
    meta: dict[str, Any] = {
        **trace.meta,
        "sampler": {"interval_s": interval_s, "missing": dict(missing), "dropped": int(dropped)},
    }
    return dataclasses.replace(trace, counters=counters, meta=meta)


def trace_end_ns(trace: Trace) -> int | None:
    """End of the trace's last event (ns from its start), or None for a trace without events."""
    ends: list[int] = []
    for table in map(trace.table, TIMELINE_TABLES):
        if len(table):
            ends.append(int((table["start_ns"] + table["dur_ns"]).max()))
    if len(trace.memory):
        ends.append(int(trace.memory["time_ns"].max()))
    return max(ends) if ends else None
