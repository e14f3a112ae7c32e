"""Lay a Trace out as timeline lanes: one per CPU thread and one per GPU stream, per rank.

This is layout, not analysis: it decides where boxes go, never what they mean.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from gpuprofile.trace.model import Trace
from gpuprofile.trace.nesting import nest, overlap_rows

# Event kinds as they cross the wire (the "kind" column).
KINDS = ("op", "runtime", "kernel", "memcpy", "memset")


@dataclass(frozen=True)
class TimelineData:
    lanes: list[dict[str, Any]]
    names: list[str]
    columns: dict[str, np.ndarray]


def timeline_data(trace: Trace) -> TimelineData:
    cpu = pd.concat(
        [_frame(trace.ops, "op", "tid"), _frame(trace.runtime, "runtime", "tid")],
        ignore_index=True,
    )
    gpu = pd.concat(
        [_frame(trace.table(t), t.rstrip("s"), "stream") for t in ("kernels", "memcpy", "memset")],
        ignore_index=True,
    )
    lanes: list[dict[str, Any]] = []
    parts = []
    for frame, lane_kind in ((cpu, "cpu"), (gpu, "gpu")):
        if frame.empty:
            continue
        keys = frame.groupby(["rank", "where", "lane_key"], sort=True).ngroup().to_numpy()
        lane_ids = keys + len(lanes)
        start = frame["start_ns"].to_numpy()
        end = start + frame["dur_ns"].to_numpy()
        if lane_kind == "cpu":
            _, rows = nest(lane_ids, start, end)
        else:
            rows = overlap_rows(lane_ids, start, end)
        placed = frame.assign(lane=lane_ids, row=rows)
        per_lane = placed.groupby("lane", sort=True).agg(
            rank=("rank", "first"),
            where=("where", "first"),
            key=("lane_key", "first"),
            rows=("row", "max"),
        )
        for lane_id, rank, where, key, max_row in per_lane.itertuples():
            lanes.append(
                {
                    "id": int(lane_id),
                    "rank": int(rank),
                    "kind": lane_kind,
                    "label": _lane_label(trace, lane_kind, int(rank), int(where), int(key)),
                    "rows": int(max_row) + 1,
                }
            )
        parts.append(placed)
    if not parts:
        return TimelineData(lanes=[], names=[], columns=_columns(pd.DataFrame(), []))
    events = pd.concat(parts, ignore_index=True).sort_values(["lane", "start_ns"], kind="stable")
    names = pd.Categorical(events["name"].astype(object))
    return TimelineData(
        lanes=lanes,
        names=[str(n) for n in names.categories],
        columns=_columns(events, names.codes),
    )


def _frame(table: pd.DataFrame, kind: str, lane_column: str) -> pd.DataFrame:
    where = table["pid"] if "pid" in table else table["device"]
    return pd.DataFrame(
        {
            "rank": table["rank"].to_numpy(),
            "where": where.to_numpy().astype(np.int64),
            "lane_key": table[lane_column].to_numpy(),
            "name": table["name"].astype(object).to_numpy(),
            "start_ns": table["start_ns"].to_numpy(),
            "dur_ns": table["dur_ns"].to_numpy(),
            "kind": np.full(len(table), KINDS.index(kind), np.uint8),
        }
    )


def _lane_label(trace: Trace, kind: str, rank: int, where: int, key: int) -> str:
    prefix = f"rank {rank} · " if len(trace.ranks) > 1 else ""
    if kind == "gpu":
        return f"{prefix}GPU {where} · stream {key}"
    names = trace.meta.get("ranks", {}).get(rank, {}).get("thread_names", {})
    thread = names.get(f"{where}/{key}")
    # Kineto writes some 32-bit thread ids as signed numbers; the OS shows them unsigned.
    return f"{prefix}{thread}" if thread else f"{prefix}thread {key % 2**32}"


def _columns(events: pd.DataFrame, codes: Any) -> dict[str, np.ndarray]:
    if events.empty:
        return {
            "start_ns": np.empty(0, np.float64),
            "dur_ns": np.empty(0, np.float32),
            "name": np.empty(0, np.uint32),
            "lane": np.empty(0, np.uint16),
            "row": np.empty(0, np.uint16),
            "kind": np.empty(0, np.uint8),
        }
    return {
        "start_ns": events["start_ns"].to_numpy(np.float64),
        "dur_ns": events["dur_ns"].to_numpy(np.float32),
        "name": np.asarray(codes, np.uint32),
        "lane": events["lane"].to_numpy(np.uint16),
        "row": events["row"].to_numpy(np.uint16),
        "kind": events["kind"].to_numpy(np.uint8),
    }
