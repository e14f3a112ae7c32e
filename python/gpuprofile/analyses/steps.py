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
