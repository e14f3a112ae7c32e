"""The one definition of a recorded training step: torch.profiler's ``ProfilerStep#N`` range.

``prof.step()`` opens a ``ProfilerStep#N`` range on the host (an ops row) and Kineto projects
it onto the GPU timeline (a ``gpu_user_annotation``); N counts from 0. Every analysis, detector
and view that looks for steps asks here, so a change to the pattern happens in one place.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from gpuprofile.analyses.names import categorical, codes, per_category

STEP_NAME = re.compile(r"^ProfilerStep#(\d+)$")


def step_number(name: str) -> int:
    """N of a ``ProfilerStep#N`` name; -1 for any other name."""
    found = STEP_NAME.match(name)
    return int(found.group(1)) if found else -1


def step_numbers(names: pd.Series) -> np.ndarray:
    """Per row of a name column: N of its ``ProfilerStep#N`` name, -1 for any other name or
    a missing one. Worked out once per distinct name (analyses/names.py), not per row."""
    names = categorical(names)
    return np.asarray(per_category(names, "profiler_step", step_number, np.int64, -1)[codes(names)])


def is_step(names: pd.Series) -> np.ndarray:
    """Per row of a name column: is it a ``ProfilerStep#N`` range?"""
    return step_numbers(names) >= 0


_OPTIMIZER_STEP = re.compile(r"Optimizer\.step#")


def step_spans(ops: pd.DataFrame, first_ns: int) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) of one rank's steps in time order: its ProfilerStep ranges; without two
    of them, the training iterations that each end with an optimizer step (the first from
    ``first_ns``, the rank's start). ``ops``: the rank's ops rows."""
    starts = ops["start_ns"].to_numpy(np.int64)
    ends = starts + ops["dur_ns"].to_numpy(np.int64)
    marked = is_step(ops["name"])
    if marked.sum() >= 2:
        order = np.argsort(starts[marked], kind="stable")
        return starts[marked][order], ends[marked][order]
    names = categorical(ops["name"])
    stepped = per_category(names, "optimizer_step", lambda n: bool(_OPTIMIZER_STEP.match(n)),
                           bool, False)[codes(names)]  # fmt: skip
    done = np.sort(ends[stepped])
    return np.concatenate([[first_ns], done[:-1]]).astype(np.int64) if len(done) else done, done


def count_in_steps(spans: tuple[np.ndarray, np.ndarray], times: np.ndarray) -> np.ndarray:
    """How many of the times fall in each step [start, end) of ``spans`` (steps do not
    overlap)."""
    starts, ends = spans
    at = np.sort(times)
    return np.searchsorted(at, ends, side="left") - np.searchsorted(at, starts, side="left")
