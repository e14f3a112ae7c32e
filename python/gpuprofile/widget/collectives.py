"""The `collective` request: the same collective instance on every rank, for an event the user
clicked. The matching is the analysis's (``Analysis.collectives``: one row per (instance,
rank)); this maps the clicked event onto its instance and the instance's rows onto timeline
events, so the browser can list each rank's arrival and wait and draw links between them.

The frame and a lookup from (table, event id) to its row are built on the first request and
kept in data.cache.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from gpuprofile.analyses.patterns import COLLECTIVE_OP
from gpuprofile.widget.event_details import kernel_op, launched_by_op
from gpuprofile.widget.marks import global_ids
from gpuprofile.widget.request_args import Reply, Source, analysis_of, cached, event_id
from gpuprofile.widget.timeline import KIND_TABLES, KINDS

# The tables whose events the analysis matches (spec: table is "kernels" or "ops").
MATCHED_TABLES = ("kernels", "ops")


def collective(source: Source, message: Mapping[str, Any]) -> Reply:
    """{"id", "collective": None | {"instance", "group", "name", "bytes", "last_rank",
    "max_wait_ns", "ranks": [{"rank", "id", "lane", "row", "start_ns", "dur_ns", "arrival_ns",
    "end_ns", "wait_ns", "last"}]}} for the event ``id`` (or, when the matching went by the
    other table, the kernel it launched or the op that launched it); None when it is no
    matched collective. ``id`` is -1 (and lane -1) for a rank whose event is not on the
    timeline."""
    data, trace = source.data, source.trace
    gid = event_id(data, message)
    table = KIND_TABLES[int(data.kind[gid])]
    if table not in MATCHED_TABLES:
        return {"id": gid, "collective": None}, []
    frame, lookup = cached(data, "collectives", lambda: _indexed(source))
    at = _matched_row(source, lookup, gid)
    if at is None:
        return {"id": gid, "collective": None}, []
    instance = frame["instance"].to_numpy()
    lo = int(np.searchsorted(instance, instance[at], side="left"))
    hi = int(np.searchsorted(instance, instance[at], side="right"))
    rows = frame.iloc[lo:hi]
    gids = np.full(len(rows), -1, np.int64)
    for name in MATCHED_TABLES:
        mine = (rows["table"] == name).to_numpy()
        if mine.any():
            gids[mine] = global_ids(data, trace, name, rows["event_id"].to_numpy()[mine])
    ranks = [_rank_row(source, row, int(g)) for row, g in zip(_records(rows), gids, strict=True)]
    last = [r["rank"] for r in ranks if r["last"]]
    first = rows.iloc[0]
    info = {
        "instance": int(first["instance"]),
        "group": str(first["group"]),
        "name": str(first["name"]),
        "bytes": int(first["bytes"]),
        "last_rank": last[0] if last else None,
        "max_wait_ns": max((r["wait_ns"] for r in ranks), default=0),
        "ranks": ranks,
    }
    return {"id": gid, "collective": info}, []


def _matched_row(source: Source, lookup: dict[tuple[str, int], int], gid: int) -> int | None:
    """The matched row of an event; else, where the matching went by the other table, that of
    the kernel a communicating op launched (a c10d op launching an NCCL kernel) or of the op
    that launched a kernel."""
    data, trace = source.data, source.trace
    kind = int(data.kind[gid])

    def row_of(g: int) -> int | None:
        table = KIND_TABLES[int(data.kind[g])]
        return lookup.get((table, int(trace.table(table)["id"].iloc[int(data.source[g])])))

    found = row_of(gid)
    if found is not None:
        return found
    if kind == KINDS.index("op"):
        # Only a communicating op (c10d, gloo, nccl, record_param_comms): a step annotation
        # launches every collective of its step.
        name = data.names[int(data.name[gid])]
        related = launched_by_op(source, gid).tolist() if COLLECTIVE_OP.search(name) else []
    else:
        op = kernel_op(source, trace.kernels.iloc[int(data.source[gid])])
        related = [] if op is None else [op]
    for g in related:
        found = row_of(int(g))
        if found is not None:
            return found
    return None


def _records(rows: pd.DataFrame) -> list[dict[str, Any]]:
    return rows.to_dict("records")  # type: ignore[return-value]


def _rank_row(source: Source, row: Mapping[str, Any], gid: int) -> dict[str, Any]:
    data = source.data
    place = (
        {
            "id": gid,
            "lane": int(data.lane[gid]),
            "row": int(data.row[gid]),
            "start_ns": float(data.start[gid]),
            "dur_ns": float(data.end[gid] - data.start[gid]),
        }
        if gid >= 0
        else {"id": -1, "lane": -1, "row": 0, "start_ns": None, "dur_ns": None}
    )
    return {
        "rank": int(row["rank"]),
        **place,
        "arrival_ns": int(row["arrival_ns"]),
        "end_ns": int(row["end_ns"]),
        "wait_ns": int(row["wait_ns"]),
        "last": bool(row["last"]),
    }


def _indexed(source: Source) -> tuple[pd.DataFrame, dict[tuple[str, int], int]]:
    """The matched collectives sorted by (instance, rank), and the position of each (table,
    event id) in them."""
    frame = _matched(source)
    frame = frame.sort_values(["instance", "rank"], kind="stable").reset_index(drop=True)
    keys = zip(frame["table"].astype(str).tolist(), frame["event_id"].tolist(), strict=True)
    lookup = {(t, int(e)): i for i, (t, e) in enumerate(keys)}
    return frame, lookup


def _matched(source: Source) -> pd.DataFrame:
    return analysis_of(source).collectives
