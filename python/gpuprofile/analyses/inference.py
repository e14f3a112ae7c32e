"""An inference engine's layers (TensorRT), as one table: what the precision and reformat
detectors and the report read.

The layers are the trace's ``trt_layer`` ops; their type, precision and tactic come from
``TraceMeta.inference["layers"]`` (importers/tensorrt.py), joined by op id.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from gpuprofile.trace.model import Trace

LAYER_CATEGORY = "trt_layer"
# Layers that move or convert data and compute nothing: TensorRT's reformats (named
# "Reformatting CopyNode for ..." when the graph is not exported), copies and shuffles.
DATA_MOVEMENT_TYPES = frozenset({"Reformat", "Shuffle", "Copy", "NoOp", "Slice", "Concatenation"})
DATA_MOVEMENT_NAME = re.compile(r"^Reformatting CopyNode\b|\bCopyNode\b|^copied_", re.IGNORECASE)
REDUCED_PRECISIONS = ("FP16", "BF16", "FP8", "FP4", "INT8", "INT4")
LAYER_COLUMNS = ("id", "name", "start_ns", "dur_ns", "type", "precision", "tactic", "moves_data")


def layers(trace: Trace) -> pd.DataFrame:
    """One row per engine layer in execution order: ``LAYER_COLUMNS``; ``type``,
    ``precision`` and ``tactic`` None where the engine graph was not exported; ``moves_data``
    True for reformat/copy/shuffle layers (by type, else by TensorRT's reformat names)."""
    is_layer = (trace.ops["category"] == LAYER_CATEGORY).to_numpy(bool)
    if not is_layer.any():  # not an engine profile: no copy of the ops table to make
        return pd.DataFrame([], columns=list(LAYER_COLUMNS))
    ops = trace.ops[is_layer]
    facts = {f["op_id"]: f for f in (trace.meta.inference or {}).get("layers") or []}
    rows: list[dict[str, Any]] = []
    columns = (ops["id"], ops["name"].astype(str), ops["start_ns"], ops["dur_ns"])
    for op_id, name, start, dur in zip(*(c.tolist() for c in columns), strict=True):
        fact = facts.get(op_id, {})
        kind = fact.get("type")
        moves = kind in DATA_MOVEMENT_TYPES if kind else bool(DATA_MOVEMENT_NAME.search(name))
        rows.append(
            {
                "id": op_id,
                "name": name,
                "start_ns": start,
                "dur_ns": dur,
                "type": kind,
                "precision": fact.get("precision"),
                "tactic": fact.get("tactic"),
                "moves_data": moves,
            }
        )
    return pd.DataFrame(rows, columns=list(LAYER_COLUMNS))


def precision_mix(trace: Trace) -> list[dict[str, Any]]:
    """Time per layer precision, largest first: [{precision, time_ns, share}] (share of the
    layers' summed time); [] when no layer's precision is known (no engine graph)."""
    table = layers(trace)
    if table.empty or table["precision"].isna().all():
        return []
    total = int(table["dur_ns"].sum())
    by = table.assign(precision=table["precision"].fillna("unknown")).groupby("precision")
    sums = by["dur_ns"].sum().sort_values(ascending=False, kind="stable")
    return [
        {"precision": str(p), "time_ns": int(ns), "share": ns / total if total else None}
        for p, ns in zip(sums.index, sums.to_numpy(np.int64).tolist(), strict=True)
    ]
