"""Lay a Trace out as timeline lanes: GPU streams, CPU threads and counters, per rank.

This is layout, not analysis: it decides where boxes go, never what they mean. Every timeline
event (op, runtime call, kernel, memcpy, memset) gets a global id: its position in one array of
all events sorted by (lane, start, longest first). Those ids are what the browser asks about.

Built with numpy over whole columns (a million kernels in a few seconds); Python loops run
per lane, per counter series or per cluster of overlapping events, never per event.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pandas as pd

from gpuprofile.report.lanes import (
    COUNTER_GROUP,
    CPU_GROUP,
    Lane,
    LaneKey,
    gpu_group,
    group_key,
    lane_order,
    lane_title,
    stream_label,
    thread_label,
)
from gpuprofile.trace.model import TIMELINE_TABLES, Trace
from gpuprofile.trace.nesting import clusters, depth_rows, overlap_rows
from gpuprofile.trace.walk import event_order
from gpuprofile.widget.encoding import position_type, smallest_uint
from gpuprofile.widget.stack_lanes import op_titles, shown_op_rows

# Event kinds as they cross the wire, and the Trace table each comes from.
KINDS = ("op", "runtime", "kernel", "memcpy", "memset")
KIND_TABLES = TIMELINE_TABLES
CPU_KINDS = (0, 1)
MEMORY_LABEL = "memory in use"


@dataclass(eq=False)
class CounterSeries:
    lane: int
    time_ns: np.ndarray  # float64, ascending
    value: np.ndarray  # float64, holds until the next sample


@dataclass(eq=False)
class TimelineData:
    """All timeline events in global-id order, as columns, with their lanes and names."""

    lanes: list[Lane]
    names: list[str]
    name_kinds: list[int]
    start: np.ndarray  # float64 ns from the trace start
    end: np.ndarray  # float64
    name: np.ndarray  # uint32 index into names
    lane: np.ndarray  # int32 lane id
    row: np.ndarray  # int32 row within the lane
    kind: np.ndarray  # uint8 index into KINDS
    source: np.ndarray  # int32 position of the event in its Trace table (KIND_TABLES[kind])
    lane_lo: np.ndarray  # per lane id: first global id of the lane (lane_hi: one past the last)
    lane_hi: np.ndarray
    max_end: np.ndarray  # running max of end within each lane: binary-searchable by time
    counters: list[CounterSeries]
    span_ns: float
    # Indexes built on first use by the request handlers (requests.py), kept with the data.
    cache: dict[str, Any] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return len(self.start)

    @property
    def name_dtype(self) -> type[np.unsignedinteger[Any]]:
        return np.uint16 if len(self.names) <= 65535 else np.uint32

    @property
    def max_rows(self) -> int:
        """Sub-rows of the lane with the most (1 without events)."""
        return max((lane.rows for lane in self.lanes), default=1)

    @property
    def row_dtype(self) -> type[np.unsignedinteger[Any]]:
        return smallest_uint(self.max_rows - 1)


def timeline_data(trace: Trace) -> TimelineData:
    single = len(trace.ranks) <= 1
    names = _Names()
    # With stacks, library frames are left out of the thread lanes (stack_lanes.py).
    op_rows = shown_op_rows(trace)
    parts = [
        _events(trace, kind, names, op_rows if kind == 0 else None) for kind in range(len(KINDS))
    ]
    # Tables are concatenated in kind order, CPU kinds first; an event's kind and row in its
    # table follow from its position, so they are not concatenated.
    offsets = np.cumsum([0] + [len(p["start"]) for p in parts])
    n_cpu = int(offsets[max(CPU_KINDS) + 1])
    cpu_keys = _lane_keys(parts[: max(CPU_KINDS) + 1])
    gpu_keys = _lane_keys(parts[max(CPU_KINDS) + 1 :])
    counter_series = _counter_series(trace)
    lanes, cpu_lane, gpu_lane, counter_lane = _layout(
        trace, single, cpu_keys[1], gpu_keys[1], [c[0] for c in counter_series]
    )
    lane = np.empty(int(offsets[-1]), np.int32)
    lane[:n_cpu] = cpu_lane[cpu_keys[0]]
    lane[n_cpu:] = gpu_lane[gpu_keys[0]]
    # Each column is let go once the next stage has what it needs of it: at millions of events
    # fresh memory, not arithmetic, is most of this function's time.
    del cpu_keys, gpu_keys
    name = np.concatenate([p.pop("name") for p in parts])
    start, end = (np.concatenate([p.pop(k) for p in parts]) for k in ("start", "end"))
    del parts
    order = event_order(lane, start, end)
    start, end, lane = start[order], end[order], lane[order]
    # Lane ids of the column's own type: another would make searchsorted cast every event.
    bounds = np.searchsorted(lane, np.arange(len(lanes) + 1, dtype=lane.dtype))
    row, max_end = _rows(lanes, bounds, start, end)
    for info in lanes:
        lo, hi = bounds[info.id], bounds[info.id + 1]
        if info.kind != "counter":
            info.rows = int(row[lo:hi].max()) + 1 if hi > lo else 1
    counters = [
        CounterSeries(lane=int(lane_id), time_ns=t, value=v)
        for lane_id, (_, t, v) in zip(counter_lane, counter_series, strict=True)
    ]
    # Each event's kind and row in its table follow from its position before the order: the
    # table whose offsets hold it, and its distance from that table's first.
    kind = (np.searchsorted(offsets, order, side="right") - 1).astype(np.uint8)
    source = np.empty(len(order), position_type(len(order)))  # kept per event: the narrower type
    np.subtract(order, offsets[kind], out=source, casting="unsafe")
    if op_rows is not None:  # back to the ops table's own row positions
        source[kind == 0] = op_rows[source[kind == 0]]
    name = name[order]
    del order
    span = float(end.max()) if len(end) else 0.0
    # Whole nanoseconds, as float64 the browser reads; one column converted at a time.
    start = start.astype(np.float64)
    end = end.astype(np.float64)
    for series in counters:
        if len(series.time_ns):
            span = max(span, float(series.time_ns[-1]))
        finite = series.value[np.isfinite(series.value)]
        lanes[series.lane].min = float(finite.min()) if len(finite) else None
        lanes[series.lane].max = float(finite.max()) if len(finite) else None
    return TimelineData(
        lanes=lanes,
        names=names.names,
        name_kinds=names.kinds,
        start=start,
        end=end,
        name=name,
        lane=lane,
        row=row,
        kind=kind,
        source=source,
        lane_lo=bounds[:-1],
        lane_hi=bounds[1:],
        max_end=max_end,
        counters=counters,
        span_ns=span,
    )


class _Names:
    """The symbol table: one entry per distinct (kind, name)."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.kinds: list[int] = []
        self._index: dict[tuple[int, str], int] = {}

    def codes(
        self, kind: int, column: pd.Series, title: Callable[[str], str] | None = None
    ) -> np.ndarray:
        """Global name index per row of a categorical name column (missing names are ""),
        each name as ``title`` gives it."""
        codes = column.cat.codes.to_numpy().astype(np.int64)
        categories = [str(c) for c in column.cat.categories] + [""]
        if title is not None:
            categories = [title(c) for c in categories]
        # Only the categories in use: a filtered table keeps all its categories.
        used = np.bincount(codes + 1, minlength=len(categories)) > 0
        lut = np.zeros(len(categories), np.uint32)
        for c in np.flatnonzero(np.roll(used, -1)).tolist():  # roll: code -1 is the last entry
            key = (kind, categories[c])
            if key not in self._index:
                self._index[key] = len(self.names)
                self.names.append(categories[c])
                self.kinds.append(kind)
            lut[c] = self._index[key]
        return lut[codes]


def _events(
    trace: Trace, kind: int, names: _Names, rows: np.ndarray | None
) -> dict[str, np.ndarray]:
    """The columns the layout needs of a table's rows (rows: their positions; None: all)."""
    table = trace.table(KIND_TABLES[kind])
    if rows is not None:
        table = table.iloc[rows]
    start = table["start_ns"].to_numpy(np.int64)
    cpu = kind in CPU_KINDS
    return {
        "rank": table["rank"].to_numpy(np.int64),
        "where": table["pid" if cpu else "device"].to_numpy(np.int64),
        "key": table["tid" if cpu else "stream"].to_numpy(np.int64),
        "start": start,
        "end": start + table["dur_ns"].to_numpy(np.int64),
        "name": names.codes(kind, table["name"], op_titles(trace) if kind == 0 else None),
    }


def _lane_keys(parts: list[dict[str, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Per event of the tables' ``parts`` (concatenated), the index of its (rank, pid|device,
    tid|stream) in the returned array of distinct triples (lane_order orders them as lanes)."""
    n = sum(len(p["start"]) for p in parts)
    # One int64 key whose order is the triples' order (mixed radix of order-keeping column
    # codes), so one pass finds the distinct lanes; threads and streams are few.
    combined = np.zeros(n, np.int64)
    columns: list[np.ndarray | int] = []
    radix = 1
    for name in ("rank", "where", "key"):
        pieces = [p[name] for p in parts if len(p[name])]
        low = min((int(x.min()) for x in pieces), default=0)
        high = max((int(x.max()) for x in pieces), default=0)
        if high == low:  # one value (one rank, one process): nothing to tell apart
            columns.append(low)
            continue
        column = np.concatenate(pieces)
        columns.append(column)
        codes, width = _ordered_codes(column, low, high)
        if radix * width >= 2**62:  # densify first: the key stays in int64
            combined, uniques = pd.factorize(combined, sort=True)
            radix = len(uniques)
        combined = combined * width + codes
        radix *= width
    if radix <= max(len(combined), 2**16):  # a table of the keys in use: no hashing
        present = np.bincount(combined, minlength=radix) > 0
        inverse = (np.cumsum(present) - 1)[combined]
        n_lanes = int(present.sum())
    else:
        inverse, uniques = pd.factorize(combined, sort=True)
        n_lanes = len(uniques)
    last = np.empty(n_lanes, np.int64)
    last[inverse] = np.arange(len(inverse))
    triples = np.stack(
        [np.full(n_lanes, c, np.int64) if isinstance(c, int) else c[last] for c in columns],
        axis=1,
    ).reshape(-1, 3)
    return inverse.astype(np.int64), triples


def _ordered_codes(column: np.ndarray, low: int, high: int) -> tuple[np.ndarray, int]:
    """Codes 0..width-1 of an int64 column (values low..high) in the order of its values, and
    width."""
    if high - low < max(len(column), 2**16):  # dense enough: the offset is the code
        return column - low, high - low + 1
    codes, uniques = pd.factorize(column, sort=True)
    return codes, len(uniques)


def _layout(
    trace: Trace,
    single: bool,
    cpu: np.ndarray,
    gpu: np.ndarray,
    counters: list[tuple[int, str, int, str]],
) -> tuple[list[Lane], np.ndarray, np.ndarray, list[int]]:
    """Lanes in ``lane_order``, and the lane id of each CPU triple, GPU triple and counter
    series. Names come from report/lanes.py, as in every other view: "group" is a group's
    identity (collapsing keys on it), "group_label" what its header says under its rank's."""
    cpu_rows = {
        LaneKey(rank, "cpu", (pid, tid)): i for i, (rank, pid, tid) in enumerate(cpu.tolist())
    }
    gpu_rows = {LaneKey(rank, "gpu", (d, s)): i for i, (rank, d, s) in enumerate(gpu.tolist())}
    counter_keys = [LaneKey(c[0], "counter", (j,)) for j, c in enumerate(counters)]
    lanes: list[Lane] = []
    cpu_lane = np.zeros(len(cpu), np.int32)
    gpu_lane = np.zeros(len(gpu), np.int32)
    counter_lane = [0] * len(counters)
    ids: dict[str, Any]  # the fields of a lane of its kind
    for key in lane_order([*gpu_rows, *cpu_rows, *counter_keys]):
        rank = key.rank
        if key.kind == "gpu":
            device, stream = key.ids
            gpu_lane[gpu_rows[key]] = len(lanes)
            group, label = gpu_group(device), stream_label(stream)
            ids = {"device": device, "stream": stream}
        elif key.kind == "cpu":
            pid, tid = key.ids
            cpu_lane[cpu_rows[key]] = len(lanes)
            facts = trace.meta.ranks.get(rank)
            name = facts.thread_names.get(f"{pid}/{tid}") if facts is not None else None
            group, label = CPU_GROUP, thread_label(tid, name)
            ids = {"pid": pid, "tid": tid % 2**32}
        else:
            (j,) = key.ids
            counter_lane[j] = len(lanes)
            _, label, device, unit = counters[j]
            group, ids = COUNTER_GROUP, {"device": device, "unit": unit}
        lanes.append(
            Lane(id=len(lanes), rank=rank, kind=key.kind, group=group_key(rank, group, single),
                 group_label=group, label=label, title=lane_title(rank, group, label, single),
                 rows=1, **ids)
        )  # fmt: skip
    return lanes, cpu_lane, gpu_lane, counter_lane


def _rows(
    lanes: list[Lane], bounds: np.ndarray, start: np.ndarray, end: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Row of each event in its lane, and the running max of end per lane.

    CPU lanes: rows are nesting depths (call frames). GPU lanes: rows 0 unless kernels overlap
    on a stream, then extra rows, so that no two events of a row overlap."""
    row = np.zeros(len(start), np.int32)
    max_end = np.empty(len(end), np.float64)  # the running max's value, as the browser reads it
    for info in lanes:
        lo, hi = int(bounds[info.id]), int(bounds[info.id + 1])
        if hi == lo:
            continue
        s, e = start[lo:hi], end[lo:hi]
        running = np.maximum.accumulate(e)
        max_end[lo:hi] = running
        if info.kind == "cpu":
            row[lo:hi] = depth_rows(s, e, running)
        else:
            row[lo:hi] = _gpu_rows(s, e, clusters(s, running))
    return row, max_end


def _gpu_rows(s: np.ndarray, e: np.ndarray, cluster: np.ndarray) -> np.ndarray:
    """Row 0 for events alone in their cluster; first-fit rows within clusters of overlaps."""
    size = np.bincount(cluster)
    shared = size[cluster] > 1
    row = np.zeros(len(s), np.int32)
    if shared.any():
        row[shared] = overlap_rows(cluster[shared], s[shared], e[shared])
    return row


def _counter_series(trace: Trace) -> list[tuple[tuple[int, str, int, str], np.ndarray, np.ndarray]]:
    """(rank, label, device, unit), times and values of each counter lane: memory in use per
    device from allocator events, then each sampled counter per device."""
    out = []
    memory = trace.memory
    if len(memory):
        groups = memory.groupby(["rank", "device"], sort=True).indices
        for key, at in groups.items():
            rank, device = (int(k) for k in cast(tuple[int, int], key))
            where = "host" if device < 0 else f"GPU {device}"
            rows = memory.iloc[at]
            series = _series(rows["time_ns"], rows["total_allocated"])
            out.append(((rank, f"{MEMORY_LABEL} · {where}", device, "B"), *series))
    counters = trace.counters
    if len(counters):
        groups = counters.groupby(["rank", "name", "device"], sort=True, observed=True).indices
        for key, at in groups.items():
            rank, name, device = cast(tuple[int, str, int], key)
            rows = counters.iloc[at]
            label = str(name) if int(device) < 0 else f"{name} · GPU {int(device)}"
            unit = str(rows["unit"].iloc[0])
            series = _series(rows["time_ns"], rows["value"])
            out.append(((int(rank), label, int(device), unit), *series))
    return out


def _series(time: pd.Series, value: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(time.to_numpy(), kind="stable")
    return (
        time.to_numpy(np.float64)[order],
        value.to_numpy(np.float64)[order],
    )


# The timeline opens on the GPU's work when that is under this share of the whole trace (a
# JAX profile whose host frame spans seconds around milliseconds of kernels); else on all.
OPENING_GPU_SHARE = 0.1
OPENING_MARGIN = 0.05  # of the GPU's span, on each side


def opening_view(data: TimelineData) -> list[float]:
    """[start, end] the timeline first shows, in ns from the trace start; [] for the whole
    trace. Reset (the toolbar) still shows the whole."""
    gpu = data.kind > max(CPU_KINDS)
    if not gpu.any() or data.span_ns <= 0:
        return []
    start, end = float(data.start[gpu].min()), float(data.end[gpu].max())
    if end - start >= OPENING_GPU_SHARE * data.span_ns:
        return []
    margin = max(OPENING_MARGIN * (end - start), 1.0)
    return [max(0.0, start - margin), min(data.span_ns, end + margin)]
