"""The timeline's tables as they cross the wire: segment tables of real events, merged
coverage boxes for windows too dense to send whole, the overview, and counter samples.

A segment table lists events lane by lane ([lane, first_id, count] per run of consecutive
ids), so ids cost no bytes; see encoding.py for the byte layout.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuprofile.trace import walk
from gpuprofile.widget.timeline import TimelineData


def event_columns(data: TimelineData, ids: np.ndarray) -> dict[str, np.ndarray]:
    """The events' global id, place (lane, row) and time, as the wire contract sends a list of
    events (search hits, marks)."""
    return {
        "id": ids.astype(np.uint32),
        "lane": data.lane[ids].astype(np.uint16),
        "row": data.row[ids].astype(np.uint16),
        "start_ns": data.start[ids],
        "dur_ns": (data.end[ids] - data.start[ids]).astype(np.float32),
    }


# Past this many events only the overview is widget state (saved in the notebook); detail for
# a zoomed window is asked for over the comm channel.
DETAIL_THRESHOLD = 200_000
OVERVIEW_BINS = 8192
# The overview's budget of boxes across all lane rows: bins per row shrink as rows multiply (many
# ranks, streams, deep stacks), so the saved notebook stays bounded; never below MIN_BINS.
OVERVIEW_BOXES = 200_000
MIN_BINS = 256
COUNTER_POINTS = 4096


def window_ids(data: TimelineData, t0: float, t1: float, lanes: Any = None) -> np.ndarray:
    """Global ids (ascending) of the events that overlap [t0, t1], optionally of some lanes.

    Per lane two binary searches bound the candidates (running max of end >= t0, start <= t1);
    the few candidates inside that ended before t0 (children of a long event) are dropped."""
    lane_ids = range(len(data.lanes)) if lanes is None else lanes
    parts = []
    for lane in lane_ids:
        lo, hi = int(data.lane_lo[lane]), int(data.lane_hi[lane])
        if hi == lo:
            continue
        i0 = lo + int(np.searchsorted(data.max_end[lo:hi], t0, side="left"))
        i1 = lo + int(np.searchsorted(data.start[lo:hi], t1, side="right"))
        if i1 > i0:
            ids = np.arange(i0, i1)
            parts.append(ids[data.end[i0:i1] >= t0])
    return np.concatenate(parts) if parts else np.empty(0, np.int64)


def segment_columns(
    data: TimelineData, ids: np.ndarray, view: tuple[float, float]
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The segment table of real events (ids ascending): columns and meta."""
    # A segment ends where the lane changes or the ids stop running on.
    segments = _segments(data.lane[ids], np.diff(ids) != 1, ids)
    columns = {
        "start_ns": data.start[ids],
        "dur_ns": (data.end[ids] - data.start[ids]).astype(np.float32),
        "name": data.name[ids].astype(data.name_dtype),
        "row": data.row[ids].astype(data.row_dtype),
    }
    return columns, {"segments": segments, "merged": False, "view": [view[0], view[1]]}


def merged_columns(
    data: TimelineData, ids: np.ndarray | None, view: tuple[float, float], bins: int
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Coverage boxes of the events ids (ascending; None: every event) at `bins` bins across
    view, per lane row.

    Events shorter than a bin are merged with the others of their row that start in the same
    bin (name: the longest member's; extent: first start to last end); longer ones stay."""
    t0, t1 = view
    grid = BoxGrid(
        first_row=np.r_[0, np.cumsum([lane.rows for lane in data.lanes])].astype(np.int64),
        t0=t0,
        width=max((t1 - t0) / max(bins, 1), 1e-9),
        bins=bins,
    )
    found = compiled_boxes(data, ids, grid)
    count, box_start, box_end, box_ids, long_ids = found or py_boxes(data, ids, grid)
    all_lane = np.r_[data.lane[box_ids], data.lane[long_ids]]
    all_start = np.r_[box_start, data.start[long_ids]]
    all_end = np.r_[box_end, data.end[long_ids]]
    all_name = np.r_[data.name[box_ids], data.name[long_ids]]
    all_row = np.r_[data.row[box_ids], data.row[long_ids]]
    all_count = np.r_[count, np.ones(len(long_ids), np.uint32)]
    final = np.lexsort((all_start, all_lane))
    segments = _segments(all_lane[final], np.zeros(max(len(final) - 1, 0), bool))
    columns = {
        "start_ns": all_start[final].astype(np.float64),
        "dur_ns": (all_end[final] - all_start[final]).astype(np.float32),
        "name": all_name[final].astype(data.name_dtype),
        "row": all_row[final].astype(data.row_dtype),
        "count": all_count[final].astype(np.uint32),
    }
    return columns, {"segments": segments, "merged": True, "view": [t0, t1], "bins": bins}


@dataclass(frozen=True)
class BoxGrid:
    """A box per lane row and bin across a view, numbered (first_row[lane] + row) * bins + bin:
    lane rows are numbered across lanes."""

    first_row: np.ndarray  # int64, per lane id its first row's number, then the rows in all
    t0: float  # the view's start
    width: float  # a bin's, in ns
    bins: int

    @property
    def boxes(self) -> int:
        return int(self.first_row[-1]) * self.bins


# Per box in use: count, first start, last end, longest member; then the long events' ids.
Boxes = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def compiled_boxes(data: TimelineData, ids: np.ndarray | None, grid: BoxGrid) -> Boxes | None:
    """py_boxes' answer by the compiled core (one pass, no per-event columns), or None where
    it is not built or the boxes would outnumber the events (py_boxes numbers those in use)."""
    events = data.total if ids is None else len(ids)
    # The core reads no ids as every event: an empty window is py_boxes' (and costs nothing).
    if grid.boxes > events + 2**16 or events == 0:
        return None
    found = walk.compiled_boxes(
        data.lane, data.row, data.start, data.end, ids,
        grid.first_row, grid.t0, grid.width, grid.bins,
    )  # fmt: skip
    if found is None:
        return None
    count, first, last_end, first_longest, long_ids = found
    used = np.flatnonzero(count)
    return (
        count[used].astype(np.uint32),
        data.start[first[used]],
        last_end[used],
        first_longest[used],
        long_ids,
    )


def py_boxes(data: TimelineData, ids: np.ndarray | None, grid: BoxGrid) -> Boxes:
    """Per box in use (ascending box number): its members' count, first start, last end and
    longest member (the first of equals); then the ids of the events a bin long or longer."""
    start, end = (data.start, data.end) if ids is None else (data.start[ids], data.end[ids])
    dur = end - start
    long = dur >= grid.width
    short = np.flatnonzero(~long)
    # Clipped at 0 first, truncation is floor.
    bin_of = np.clip((start[short] - grid.t0) / grid.width, 0, grid.bins - 1).astype(np.int64)
    short_ids = short if ids is None else ids[short]
    box = (grid.first_row[data.lane[short_ids]] + data.row[short_ids]) * grid.bins + bin_of
    boxes = grid.boxes
    if boxes > 4 * len(box) + 2**16:  # a wide window of many rows: number the boxes in use
        _, box = np.unique(box, return_inverse=True)
        boxes = int(box.max()) + 1 if len(box) else 0
    count, first, box_end, first_longest = _merge(box, boxes, end[short], dur[short])
    long_ids = np.flatnonzero(long) if ids is None else ids[long]
    return count, start[short[first]], box_end, short_ids[first_longest], long_ids


def _merge(
    box: np.ndarray, boxes: int, end: np.ndarray, dur: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per box in use (ascending), of the members (in id order) numbered 0..boxes-1 in
    ``box``: their count, first member, last end and longest member (the first of equals)."""
    count = np.bincount(box, minlength=boxes)
    used = np.flatnonzero(count)
    position = np.arange(len(box))
    first = np.full(boxes, len(box))
    np.minimum.at(first, box, position)
    last_end = np.full(boxes, -np.inf)
    np.maximum.at(last_end, box, end)
    longest = np.full(boxes, -np.inf)
    np.maximum.at(longest, box, dur)
    is_longest = np.flatnonzero(dur == longest[box])
    first_longest = np.full(boxes, len(box))
    np.minimum.at(first_longest, box[is_longest], is_longest)
    return (
        count[used].astype(np.uint32),
        first[used],
        last_end[used],
        first_longest[used],
    )


def _segments(
    lane: np.ndarray, split: np.ndarray, ids: np.ndarray | None = None
) -> list[list[int]]:
    """The contract's segments [lane, first id, count] of rows in lane order: a run ends where
    the lane changes or `split` (between row i and i + 1) says; first id -1 for merged boxes."""
    if not len(lane):
        return []
    firsts = np.flatnonzero(np.r_[True, (np.diff(lane) != 0) | split])
    counts = np.diff(np.r_[firsts, len(lane)])
    first_ids = ids[firsts].tolist() if ids is not None else [-1] * len(firsts)
    return [
        [int(lane_id), int(first), int(count)]
        for lane_id, first, count in zip(
            lane[firsts].tolist(), first_ids, counts.tolist(), strict=True
        )
    ]


def overview_columns(
    data: TimelineData, detail_threshold: int = DETAIL_THRESHOLD
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """What the `events` trait holds: every event when there are few, else the overview."""
    view = (0.0, data.span_ns)
    if data.total <= detail_threshold:
        return segment_columns(data, np.arange(data.total), view)
    return merged_columns(data, None, view, overview_bins(data))


def overview_bins(data: TimelineData) -> int:
    """Bins across the span for the overview: OVERVIEW_BINS, fewer when lane rows are many."""
    lane_rows = sum(lane.rows for lane in data.lanes if lane.kind != "counter")
    return max(MIN_BINS, min(OVERVIEW_BINS, OVERVIEW_BOXES // max(lane_rows, 1)))


def counter_columns(data: TimelineData) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The `counters` trait: each counter lane's samples, at most COUNTER_POINTS per lane."""
    times, values, segments = [], [], []
    for series in data.counters:
        t, v = _downsample(series.time_ns, series.value, data.span_ns)
        times.append(t)
        values.append(v)
        segments.append([series.lane, 0, len(t)])
    columns = {
        "time_ns": np.concatenate(times) if times else np.empty(0, np.float64),
        "value": np.concatenate(values) if values else np.empty(0, np.float64),
    }
    return columns, {"segments": segments}


def _downsample(time: np.ndarray, value: np.ndarray, span: float) -> tuple[np.ndarray, np.ndarray]:
    """At most COUNTER_POINTS samples: per time bin, its first time with its largest value, so
    peaks stay visible when a step line is drawn through them."""
    if len(time) <= COUNTER_POINTS:
        return time, value
    width = max(span, float(time[-1]), 1.0) / COUNTER_POINTS
    bins = np.minimum((time / width).astype(np.int64), COUNTER_POINTS - 1)
    firsts = np.flatnonzero(np.r_[True, bins[1:] != bins[:-1]])
    safe = np.where(np.isnan(value), -np.inf, value)
    peak = np.maximum.reduceat(safe, firsts)
    return time[firsts], np.where(np.isneginf(peak), np.nan, peak)
