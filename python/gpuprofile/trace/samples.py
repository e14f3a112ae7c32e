"""Gauge readings (the capture's sampler: NVML, psutil, torch.cuda) as the Trace's counters
table, on the trace's own time base.

Which clock: with torch 2.13 (CPU build, Linux) Kineto's exported timestamps are Unix time,
i.e. the clock of ``time.time_ns()``: ``baseTimeNanoseconds + ts * 1000`` of a record_function
fell between time.time_ns() read just before and just after it (measured: 40-160 us after the
first read, 3-5 us before the second), while it was ~1.8e18 ns away from time.monotonic_ns()
and time.perf_counter_ns(). The Kineto importer keeps that start as ``meta.origin_ns``, so a
sample taken at time.time_ns() = t sits at t - origin_ns on the trace. tests/unit/test_sampler.py
checks this on every run, so a torch that changes clocks fails a test rather than shifting lanes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import msgspec
import numpy as np

from gpuprofile.trace.meta import Sampling
from gpuprofile.trace.model import TIMELINE_TABLES, Trace, make_table


@dataclass(frozen=True, slots=True)
class Reading:
    """One gauge read once."""

    name: str
    unit: str
    device: int  # CUDA ordinal; -1 is the host
    value: float


# Per series (name, unit, device): its sample times (time.time_ns()) and values, in time order.
Series = dict[tuple[str, str, int], tuple[np.ndarray, np.ndarray]]


def sample_series(samples: Sequence[tuple[int, Reading]]) -> Series:
    """The samples grouped by series, each in time order."""
    grouped: dict[tuple[str, str, int], list[tuple[int, float]]] = {}
    for time_ns, reading in samples:
        key = (reading.name, reading.unit, reading.device)
        grouped.setdefault(key, []).append((int(time_ns), float(reading.value)))
    series: Series = {}
    for key, points in grouped.items():
        times = np.fromiter((t for t, _ in points), np.int64, len(points))
        values = np.fromiter((v for _, v in points), np.float64, len(points))
        order = np.argsort(times, kind="stable")
        series[key] = (times[order], values[order])
    return series


def with_samples(
    trace: Trace,
    samples: Sequence[tuple[int, Reading]],
    missing: Mapping[str, str],
    *,
    interval_s: float | None = None,
    dropped: int = 0,
) -> Trace:
    """A copy of ``trace`` with the samples added to its counters and ``meta.sampling`` set.

    Counters are step-wise (a value holds until the next sample), so per series the last sample
    taken before the trace's first event moves to time 0, where its value still held, and
    samples after the trace's last event are left out: every counter lies within the trace.
    """
    origin = trace.meta.origin_ns
    end = trace_end_ns(trace)
    old = trace.counters
    names: list[str] = [*old["name"].astype(str)]
    units: list[str] = [*old["unit"].astype(str)]
    devices, times, values = (
        [old["device"].to_numpy()],
        [old["time_ns"].to_numpy()],
        [old["value"].to_numpy()],
    )
    for (name, unit, device), (at, value) in sample_series(samples).items():
        at = at - origin
        first = int(np.searchsorted(at, 0, side="left"))
        last = len(at) if end is None else int(np.searchsorted(at, end, side="right"))
        keep_time, keep_value = at[first:last], value[first:last]
        if first > 0:  # the value that held when the trace began
            keep_time = np.concatenate([[0], keep_time])
            keep_value = np.concatenate([[value[first - 1]], keep_value])
        names += [name] * len(keep_time)
        units += [unit] * len(keep_time)
        devices.append(np.full(len(keep_time), device))
        times.append(keep_time)
        values.append(keep_value)
    rank = trace.ranks[0] if trace.ranks else 0
    added = len(names) - len(old)
    counters = make_table(
        "counters",
        {
            "rank": np.concatenate([old["rank"].to_numpy(), np.full(added, rank)]),
            "name": names,
            "unit": units,
            "device": np.concatenate(devices),
            "time_ns": np.concatenate(times),
            "value": np.concatenate(values),
        },
    )
    sampling = Sampling(interval_s=interval_s, missing=dict(missing), dropped=int(dropped))
    return replace(
        trace, counters=counters, meta=msgspec.structs.replace(trace.meta, sampling=sampling)
    )


def trace_end_ns(trace: Trace) -> int | None:
    """End of the trace's last event (ns from its start), or None for a trace without events."""
    ends: list[int] = []
    for table in map(trace.table, TIMELINE_TABLES):
        if len(table):
            ends.append(int((table["start_ns"] + table["dur_ns"]).max()))
    if len(trace.memory):
        ends.append(int(trace.memory["time_ns"].max()))
    return max(ends) if ends else None
