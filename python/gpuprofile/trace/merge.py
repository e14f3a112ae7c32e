"""Traces combined into one: the windows of one rank, or the ranks of a job.

Each part is placed on one time base: at its own start (``meta.origin_ns``) plus its clock
offset, so the merged trace starts at the earliest of them. Parts follow one another in the
order of their placed starts, and ids are renumbered in that order so they stay unique per
table; the columns that point at op ids follow. Facts of one rank met in several parts are
joined (``RankMeta.joined``). Pure: no torch, no clock, no files.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import numpy as np
import pandas as pd
from pandas.api.types import union_categoricals

from gpuprofile.trace.meta import RankMeta, Source, TraceMeta
from gpuprofile.trace.model import NO_ID, SCHEMA, Trace, make_table

# Columns holding an id of the ops table, per table.
_OP_REFERENCES = {"ops": ("parent",), "kernels": ("op_id",)}


def merge(
    parts: Sequence[Trace],
    *,
    ranks: Sequence[int] | None = None,
    clock_offsets_ns: Sequence[int] | None = None,
    source: Source | None = None,
) -> Trace:
    """One Trace holding every part.

    Parameters:
        parts: the traces (windows of one rank, or ranks of a job), in any order.
        ranks: the rank each part's rows and facts take (each part then holds one rank);
            None keeps the ranks the parts have.
        clock_offsets_ns: per part, ns added to its own clock to place it on the others' (a
            rank whose clock runs ahead gets a negative offset); recorded per rank as
            ``RankMeta.clock_offset_ns``. None: the parts' clocks agree.
        source: the merged trace's source; None keeps the first part's.

    Returns:
        A new Trace; the parts are not changed.
    """
    if not parts:
        raise ValueError("no traces to merge")
    n = len(parts)
    if ranks is not None and len(ranks) != n:
        raise ValueError(f"{len(ranks)} ranks for {n} traces")
    if clock_offsets_ns is not None and len(clock_offsets_ns) != n:
        raise ValueError(f"{len(clock_offsets_ns)} clock offsets for {n} traces")
    offsets = [int(o) for o in clock_offsets_ns] if clock_offsets_ns is not None else [0] * n
    # In time order of their placed starts (a stable sort: ties keep the order given).
    order = sorted(range(n), key=lambda i: parts[i].meta.origin_ns + offsets[i])
    parts = [parts[i] for i in order]
    offsets = [offsets[i] for i in order]
    ranks = [ranks[i] for i in order] if ranks is not None else None
    placed = [part.meta.origin_ns + offset for part, offset in zip(parts, offsets)]
    origin = min(placed)
    shifts = [at - origin for at in placed]
    # Where each part's op ids start in the merged ops table.
    op_starts = list(np.cumsum([0, *(len(part.ops) for part in parts[:-1])]))
    tables = {
        table: _merged_table(table, [part.table(table) for part in parts], shifts, op_starts, ranks)
        for table in SCHEMA
    }
    meta = _merged_meta(parts, origin, shifts, offsets, ranks, source)
    return Trace(**tables, meta=meta)


def _merged_table(
    table: str,
    frames: list[pd.DataFrame],
    shifts: list[int],
    op_starts: list[int],
    ranks: Sequence[int] | None,
) -> pd.DataFrame:
    schema = SCHEMA[table]
    lengths = [len(frame) for frame in frames]
    # Column by column, without copying frames: a run of hundreds of windows merges in one
    # pass per column.
    columns: dict[str, Any] = {}
    for column, dtype in schema.items():
        parts = [frame[column] for frame in frames]
        if dtype == "category":
            # As object categories: an empty table's are object, a filled one's str (pandas 3),
            # and union_categoricals refuses to mix the two.
            columns[column] = union_categoricals(
                [
                    pd.Categorical.from_codes(p.cat.codes, p.cat.categories.astype(object))
                    for p in parts
                ],
                ignore_order=True,
            )
        else:
            columns[column] = np.concatenate([p.to_numpy() for p in parts])
    time_key = "start_ns" if "start_ns" in schema else "time_ns"
    columns[time_key] = columns[time_key] + np.repeat(np.array(shifts, np.int64), lengths)
    if ranks is not None:
        columns["rank"] = np.repeat(np.array(ranks, np.int32), lengths)
    if "id" in schema:
        columns["id"] = columns["id"] + np.repeat(np.cumsum([0, *lengths[:-1]]), lengths)
    for column in _OP_REFERENCES.get(table, ()):
        known = columns[column] != NO_ID
        moved = columns[column] + np.repeat(np.array(op_starts, np.int64), lengths)
        columns[column] = np.where(known, moved, columns[column])
    return make_table(table, columns)


def _merged_meta(
    parts: Sequence[Trace],
    origin: int,
    shifts: list[int],
    offsets: list[int],
    ranks: Sequence[int] | None,
    source: Source | None,
) -> TraceMeta:
    merged: dict[int, RankMeta] = {}
    for i, part in enumerate(parts):
        if ranks is not None and len(part.meta.ranks) > 1:
            raise ValueError(f"part {i} holds ranks {sorted(part.meta.ranks)}: one rank each")
        for rank, facts in part.meta.ranks.items():
            rank = ranks[i] if ranks is not None else rank
            facts = msgspec.structs.replace(
                facts, clock_offset_ns=facts.clock_offset_ns + offsets[i]
            )
            merged[rank] = merged[rank].joined(facts) if rank in merged else facts
    first = parts[0].meta
    return msgspec.structs.replace(
        first,
        source=source or first.source,
        origin_ns=origin,
        ranks=merged,
        windows=tuple(
            window.shifted(shift)
            for part, shift in zip(parts, shifts)
            for window in part.meta.windows
        ),
        partial=any(part.meta.partial for part in parts),
        errors=tuple(error for part in parts for error in part.meta.errors),
        # Each rank's kernel names its own cell files (their folder holds its pid).
        cells={name: count for part in parts for name, count in part.meta.cells.items()},
        module_names={k: v for part in parts for k, v in part.meta.module_names.items()},
    )


def shifted_ranks(trace: Trace, offsets_ns: dict[int, int]) -> Trace:
    """The same trace with each rank's times moved by its offset (ns added to its clock),
    recorded in ``RankMeta.clock_offset_ns``; the time base moves back when a rank moves before
    the trace's start, so every time stays >= 0."""
    offsets = {rank: int(ns) for rank, ns in offsets_ns.items() if ns}
    if not offsets:
        return trace
    earliest = min(0, *offsets.values())
    lookup_ranks = np.array(sorted(offsets), np.int64)
    lookup_shift = np.array([offsets[r] for r in sorted(offsets)], np.int64)
    tables = {}
    for name in SCHEMA:
        frame = trace.table(name)
        time_key = "start_ns" if "start_ns" in SCHEMA[name] else "time_ns"
        ranks = frame["rank"].to_numpy(np.int64)
        at = np.searchsorted(lookup_ranks, ranks)
        at = np.minimum(at, len(lookup_ranks) - 1)
        shift = np.where(lookup_ranks[at] == ranks, lookup_shift[at], 0) - earliest
        moved = frame.copy(deep=False)
        moved[time_key] = frame[time_key].to_numpy() + shift
        tables[name] = moved
    ranks_meta = {
        rank: msgspec.structs.replace(
            facts, clock_offset_ns=facts.clock_offset_ns + offsets.get(rank, 0)
        )
        for rank, facts in trace.meta.ranks.items()
    }
    meta = msgspec.structs.replace(
        trace.meta,
        origin_ns=trace.meta.origin_ns + earliest,
        ranks=ranks_meta,
        windows=tuple(w.shifted(-earliest) for w in trace.meta.windows),
    )
    return Trace(**tables, meta=meta)
