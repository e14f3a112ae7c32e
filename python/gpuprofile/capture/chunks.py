"""Per-step chunks of one capture merged into one Trace.

Windows of a --steps capture read apart (the live view reads new ones at each refill; the
final read falls back to one by one when a file fails) are Traces whose times start at their
own first event, ``meta["origin_ns"]``. Merging puts every
chunk on the first chunk's time base, renumbers ids so they stay unique per table (and the
columns that point at op ids follow), and merges the per-rank metadata. Pure: no torch, no clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from pandas.api.types import union_categoricals

from gpuprofile.trace.model import NO_ID, SCHEMA, Trace, make_table

# Columns holding an id of the ops table, per table.
_OP_REFERENCES = {"ops": ("parent",), "kernels": ("op_id",)}


def merge_chunks(chunks: Sequence[Trace]) -> Trace:
    """One Trace holding every chunk, in time order of their origins."""
    if not chunks:
        raise ValueError("no chunks to merge")
    for chunk in chunks:
        if "origin_ns" not in chunk.meta:
            raise ValueError("a chunk has no meta['origin_ns']: it cannot be placed in time")
    ordered = sorted(chunks, key=lambda c: int(c.meta["origin_ns"]))
    origin = int(ordered[0].meta["origin_ns"])
    shifts = np.array([int(c.meta["origin_ns"]) - origin for c in ordered], np.int64)
    op_offsets = np.cumsum([0] + [len(c.ops) for c in ordered[:-1]])
    tables: dict[str, pd.DataFrame] = {}
    for table, schema in SCHEMA.items():
        frames = [chunk.table(table) for chunk in ordered]
        lengths = [len(frame) for frame in frames]
        # Column by column, without copying frames: a run of hundreds of windows merges in
        # one pass per column.
        columns: dict[str, Any] = {}
        for column, dtype in schema.items():
            parts = [frame[column] for frame in frames]
            if dtype == "category":
                # As object categories: an empty table's are object, a filled one's str
                # (pandas 3), and union_categoricals refuses to mix the two.
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
        columns[time_key] = columns[time_key] + np.repeat(shifts, lengths)
        if "id" in schema:
            columns["id"] = columns["id"] + np.repeat(np.cumsum([0, *lengths[:-1]]), lengths)
        for column in _OP_REFERENCES.get(table, ()):
            known = columns[column] != NO_ID
            columns[column] = np.where(
                known, columns[column] + np.repeat(op_offsets, lengths), columns[column]
            )
        tables[table] = make_table(table, columns)
    return Trace(**tables, meta=_merged_meta(ordered, origin))


def _merged_meta(chunks: Sequence[Trace], origin: int) -> dict[str, Any]:
    meta: dict[str, Any] = {**chunks[0].meta, "origin_ns": origin}
    ranks: dict[Any, dict[str, Any]] = {}
    for chunk in chunks:
        for rank, facts in chunk.meta.get("ranks", {}).items():
            ranks[rank] = _merge_rank(ranks[rank], facts) if rank in ranks else dict(facts)
    meta["ranks"] = ranks
    # Each window's span ("start_ns", "end_ns") moves to the merged time base with its chunk.
    meta["chunks"] = [
        {**entry, **{k: entry[k] + shift for k in ("start_ns", "end_ns") if k in entry}}
        for chunk in chunks
        for shift in [int(chunk.meta["origin_ns"]) - origin]
        for entry in chunk.meta.get("chunks", [])
    ]
    return meta


def _merge_rank(into: dict[str, Any], facts: dict[str, Any]) -> dict[str, Any]:
    out = {**into}
    out["thread_names"] = {**facts.get("thread_names", {}), **into.get("thread_names", {})}
    skipped = dict(into.get("skipped", {}))
    for what, count in facts.get("skipped", {}).items():
        skipped[what] = skipped.get(what, 0) + count
    out["skipped"] = skipped
    files = list(into.get("files", [into["file"]] if "file" in into else []))
    if "file" in facts:
        files.append(facts["file"])
    out["files"] = files
    # Device lists of later chunks add the devices the first one did not see.
    seen = {d.get("id") for d in into.get("devices", [])}
    out["devices"] = [
        *into.get("devices", []),
        *(d for d in facts.get("devices", []) if d.get("id") not in seen),
    ]
    return out
