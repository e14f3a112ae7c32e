"""The `marks` table: timeline events to highlight for each hint's evidence, roofline point and
module row (a rank's ``ModuleRow.evidence``: its calls).

Hints and roofline points name events by their Trace table and id; the browser knows them by
global id (timeline.py). This maps one onto the other, once, when the widget is made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from gpuprofile.trace.model import Trace
from gpuprofile.widget.encoding import position_type
from gpuprofile.widget.request_args import cached
from gpuprofile.widget.tables import event_columns
from gpuprofile.widget.timeline import KIND_TABLES, TimelineData

if TYPE_CHECKING:
    from gpuprofile.analyses.context import Analysis
    from gpuprofile.report.schema import Report

MAX_POINT_MARKS = 2000


def global_ids(data: TimelineData, trace: Trace, table: str, ids: Any) -> np.ndarray:
    """Global ids of events given by their Trace table ids (-1 where not a timeline event)."""
    wanted = np.asarray(ids, dtype=np.int64)
    if table not in KIND_TABLES or not len(wanted):
        return np.full(len(wanted), -1, np.int64)
    rows = rows_of_ids(data, trace, table, wanted)
    return np.where(rows >= 0, gid_of_row(data, trace, table)[np.maximum(rows, 0)], -1)


def rows_of_ids(data: TimelineData, trace: Trace, table: str, wanted: np.ndarray) -> np.ndarray:
    """Row of each id in a Trace table (-1 where none): a lookup table when the ids are dense
    enough (importers number events from 0), else a hash index; built once per table."""

    def build() -> tuple[int, np.ndarray] | pd.Index:
        ids = trace.table(table)["id"].to_numpy(np.int64)
        if len(ids):
            low, high = int(ids.min()), int(ids.max())
            if high - low < 4 * len(ids) + 1024:
                lookup = np.full(high - low + 1, -1, position_type(len(ids)))
                lookup[ids - low] = np.arange(len(ids))
                if np.count_nonzero(lookup >= 0) == len(ids):  # unique, as get_indexer needs
                    return low, lookup
        index: pd.Index = pd.Index(ids)
        return index

    index = cached(data, f"rows_of_ids:{table}", build)
    if isinstance(index, pd.Index):
        return np.asarray(index.get_indexer(pd.Index(wanted)))
    low, lookup = index
    at = wanted - low
    inside = (at >= 0) & (at < len(lookup))
    return np.where(inside, lookup[np.where(inside, at, 0)], -1)


def gid_of_row(data: TimelineData, trace: Trace, table: str) -> np.ndarray:
    """Global id of each row of a Trace table (-1 for none)."""
    kind = KIND_TABLES.index(table)

    def build() -> np.ndarray:
        gids = np.flatnonzero(data.kind == kind)
        out = np.full(len(trace.table(table)), -1, position_type(data.total))
        out[data.source[gids]] = gids
        return out

    return cached(data, f"gid_of_row:{kind}", build)


def gid_mask(data: TimelineData, trace: Trace, table: str, row_mask: np.ndarray) -> np.ndarray:
    """A per-row mask of a Trace table as a per-event mask of the timeline."""
    mask = np.zeros(data.total, bool)
    gids = gid_of_row(data, trace, table)
    mask[gids[row_mask & (gids >= 0)]] = True
    return mask


def marks_columns(
    data: TimelineData,
    trace: Trace,
    report: Report | None,
    analysis: Analysis | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Columns group, id, lane, row, start_ns, dur_ns, name and meta.groups (contract); no
    marks without a report."""
    groups: list[dict[str, Any]] = []
    members: list[np.ndarray] = []
    for i, hint in enumerate(report.hints if report else []):
        for j, evidence in enumerate(hint.evidence):
            gids = global_ids(data, trace, evidence.table, evidence.event_ids)
            gids = gids[gids >= 0]
            groups.append(
                {"kind": "hint", "hint": i, "evidence": j, "label": evidence.label,
                 "total": len(gids), "heaviest": _heaviest(gids, data.end[gids] - data.start[gids])}
            )  # fmt: skip
            members.append(gids)
    points = report.roofline.points if report else []
    everything = _all_point_members(trace, analysis, {p.key for p in points})
    for k, point in enumerate(points):
        found = everything.get(point.key)
        if found is not None:
            table, ids, weight = found
        else:  # no analysis: the heaviest ids the report kept
            table = "ops" if point.level == "op" else "kernels"
            ids = np.asarray(point.event_ids, np.int64)
            weight = None
        gids = global_ids(data, trace, table, ids)
        known = gids >= 0
        gids = gids[known]
        if weight is None:
            weight = data.end[gids] - data.start[gids]
        else:
            weight = np.asarray(weight, np.float64)[known]
        total = len(gids) if found is not None else max(len(gids), point.count)
        heaviest = _heaviest(gids, weight)
        if len(gids) > MAX_POINT_MARKS:
            gids = gids[heaviest_first(weight, MAX_POINT_MARKS)]
        groups.append({"kind": "point", "point": k, "total": total, "heaviest": heaviest})
        members.append(gids)
    for rank in report.ranks if report else []:
        for m, row in enumerate(rank.modules):
            gids = _module_members(data, trace, row.evidence)
            weight = data.end[gids] - data.start[gids]
            heaviest = _heaviest(gids, weight)
            total = len(gids)
            if total > MAX_POINT_MARKS:
                gids = gids[heaviest_first(weight, MAX_POINT_MARKS)]
            groups.append({"kind": "module", "rank": rank.rank, "module": m, "path": row.path,
                           "total": total, "heaviest": heaviest})  # fmt: skip
            members.append(gids)
    group_col, id_col = [], []
    for g, gids in enumerate(members):
        gids = gids[np.argsort(data.start[gids], kind="stable")]  # time order within a group
        group_col.append(np.full(len(gids), g, np.uint32))
        id_col.append(gids)
    ids = np.concatenate(id_col) if id_col else np.empty(0, np.int64)
    columns = {
        "group": np.concatenate(group_col) if group_col else np.empty(0, np.uint32),
        **event_columns(data, ids),
        "name": data.name[ids].astype(np.uint32),
    }
    return columns, {"groups": groups}


def _module_members(data: TimelineData, trace: Trace, evidence: Any) -> np.ndarray:
    """The timeline events of a module row's evidence (its calls), each once."""
    found = [global_ids(data, trace, e.table, e.event_ids) for e in evidence]
    gids = np.concatenate(found) if found else np.empty(0, np.int64)
    return np.unique(gids[gids >= 0])


def heaviest_first(weight: np.ndarray, k: int) -> np.ndarray:
    """``np.argsort(-weight, kind="stable")[:k]``: the k heaviest positions, heaviest first,
    ties in position order; only the k chosen by a partition are sorted."""
    if len(weight) <= k or (weight.dtype.kind == "f" and np.isnan(weight).any()):
        return np.argsort(-weight, kind="stable")[:k]
    kth = np.partition(weight, len(weight) - k)[len(weight) - k]  # the k-th heaviest
    above = np.flatnonzero(weight > kth)
    chosen = np.union1d(above, np.flatnonzero(weight == kth)[: k - len(above)])
    return chosen[np.argsort(-weight[chosen], kind="stable")]


def _heaviest(gids: np.ndarray, weight: np.ndarray) -> int | None:
    """The id with the most weight (an op point's members weigh their GPU time, not their CPU
    duration): where the timeline zooms when the group is picked."""
    return int(gids[np.argmax(weight)]) if len(gids) else None


def _all_point_members(
    trace: Trace, analysis: Analysis | None, keys: set[str]
) -> dict[str, tuple[str, np.ndarray, np.ndarray]]:
    if analysis is None or not keys:
        return {}
    from gpuprofile.analyses.roofline import point_members

    found = point_members(analysis.roofline_members, keys)
    return {k: (m.table, m.ids, m.time_ns) for k, m in found.items()}
