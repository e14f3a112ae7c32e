"""The capture's line ranges (capture/line_ranges.py) turned into each op's line.

With ``--stack`` a gpuprofile capture records a range (category ``cpu_op``) named
``gpuprofile.line {N}`` over each line its user code ran. An op directly inside one ran on line
N of the frame the range sits in: it gets N as ``ops.caller_line`` (a Python call keeps the line
torch recorded for it, the same N), and the ranges are dropped, so the ops nest as torch
recorded them and no range is taken for work. A file exported by a capture keeps the ranges
(Perfetto shows them as slices under each frame); each read turns them into lines again.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from gpuprofile.trace.links import with_nesting
from gpuprofile.trace.model import NO_ID

LINE_RANGE = "gpuprofile.line "
_LINE = re.compile(re.escape(LINE_RANGE) + r"(\d{1,9})")


def with_range_lines(ops: pd.DataFrame) -> pd.DataFrame:
    """``ops`` (nested: with_nesting) with the ops directly in a line range given its line, and
    the ranges dropped; ``ops`` itself when it holds none."""
    if ops.empty:
        return ops
    names = ops["name"].astype("category")
    lines = np.array(
        [int(m[1]) if (m := _LINE.fullmatch(str(n))) else NO_ID for n in names.cat.categories]
        + [NO_ID],  # code -1: a missing name
        np.int64,
    )
    line = lines[names.cat.codes.to_numpy()]
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
