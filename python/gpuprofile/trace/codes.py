"""Rows numbered by their combination of column values: one integer per distinct combination,
so that pairs, threads (rank, pid, tid) or groups compare as plain integers."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd


def first_seen_codes(*columns: np.ndarray) -> np.ndarray:
    """Per row, the number of its distinct combination of column values, in order of first
    appearance (the order of groupby(sort=False)); a missing value is a value like any other."""
    key = np.zeros(len(columns[0]), dtype=np.int64)
    for column in columns:
        labels, uniques = pd.factorize(column)
        # Refactorized at each step, so the folded key stays below n**2 and cannot overflow.
        key = pd.factorize(key * (len(uniques) + 1) + (labels + 1))[0]
    return key


def shared_codes(frames: Sequence[pd.DataFrame], columns: Sequence[str]) -> list[np.ndarray]:
    """Per frame, per row: ``first_seen_codes`` of the columns, the same numbers across frames."""
    codes = first_seen_codes(*(np.concatenate([f[c].to_numpy() for f in frames]) for c in columns))
    return np.split(codes, np.cumsum([len(f) for f in frames])[:-1])
