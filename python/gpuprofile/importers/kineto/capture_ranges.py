"""The ranges a gpuprofile capture records with torch's ``_RecordFunctionFast`` (the cheapest
range torch has, written as category ``cpu_op``) turned into what they stand for.

- Lines (capture/line_ranges.py): with ``--stack`` a range named ``gpuprofile.line {N}`` covers
  each line the user's code ran. An op directly inside one ran on line N of the frame the range
  sits in: it gets N as ``ops.caller_line`` (a Python call keeps the line torch recorded for
  it, the same N), and the ranges are dropped, so the ops nest as torch recorded them and no
  range is taken for work.
- Module calls (capture/modules.py): a ``cpu_op`` named ``nn.Module: {path} ({Type})`` becomes
  ``user_annotation``, the form the module analysis reads (torch writes no op of that name; its
  own module events are ``python_function``), so no analysis takes it for an operator.

A file exported by a capture keeps the ranges as recorded (Perfetto shows them as slices); each
read turns them again.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from gpuprofile.trace.links import with_nesting
from gpuprofile.trace.model import MODULE_PREFIX, NO_ID

LINE_RANGE = "gpuprofile.line "
_LINE = re.compile(re.escape(LINE_RANGE) + r"(\d{1,9})")
_RECORDED_AS = "cpu_op"
_MODULE_CALL = "user_annotation"


def with_capture_ranges(ops: pd.DataFrame) -> pd.DataFrame:
    """``ops`` (nested: with_nesting) with module ranges made annotations, the ops directly in
    a line range given its line and the line ranges dropped; ``ops`` itself when it holds
    neither."""
    if ops.empty:
        return ops
    names = ops["name"].astype("category")
    categories = [str(n) for n in names.cat.categories]
    codes = names.cat.codes.to_numpy()
    ops = _with_module_calls(ops, categories, codes)
    lines = np.array(
        [int(m[1]) if (m := _LINE.fullmatch(n)) else NO_ID for n in categories] + [NO_ID],
        np.int64,  # the last: code -1, a missing name
    )
    line = lines[codes]
    is_range = line != NO_ID
    if not is_range.any():
        return ops
    parents = pd.Index(ops["id"].to_numpy()).get_indexer(ops["parent"].to_numpy())
    parent_line = np.where(parents >= 0, line[np.maximum(parents, 0)], NO_ID)
    caller = ops["caller_line"].to_numpy()
    caller = np.where((caller == NO_ID) & (parent_line != NO_ID), parent_line, caller)
    kept = ops.assign(caller_line=caller).loc[~is_range].reset_index(drop=True)
    kept["name"] = kept["name"].cat.remove_unused_categories()
    return with_nesting(kept)


def _with_module_calls(ops: pd.DataFrame, categories: list[str], codes: np.ndarray) -> pd.DataFrame:
    named = np.array([n.startswith(MODULE_PREFIX) for n in categories] + [False])[codes]
    if not named.any():
        return ops
    category = ops["category"]  # categorical (trace.model.SCHEMA)
    recorded = named & (category == _RECORDED_AS).to_numpy()
    if not recorded.any():
        return ops
    if _MODULE_CALL not in category.cat.categories:
        category = category.cat.add_categories([_MODULE_CALL])
    return ops.assign(category=category.mask(recorded, _MODULE_CALL))
