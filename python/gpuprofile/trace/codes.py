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
    size = 1  # the key's values lie in [0, size)
    for column in columns:
        labels, count = _labels(column)
        if size * count >= _FOLD_LIMIT:  # renumbered, so the folded key cannot overflow
            key = pd.factorize(key)[0]
            size = int(key.max()) + 1 if len(key) else 1
        key = key * count + labels
        size *= count
    # One number per distinct key, in order of first appearance: only this order is seen.
    return pd.factorize(key)[0]


_FOLD_LIMIT = 2**62


def _labels(column: np.ndarray) -> tuple[np.ndarray, int]:
    """Per row, a number in [0, count) equal where the values are equal: integer codes
    (-1 and up: categorical codes, ranks, factorize's labels) are their own, shifted by one;
    other values are numbered by factorize."""
    if column.dtype.kind in "iu" and len(column):
        low, high = int(column.min()), int(column.max())
        if low >= -1 and high < 2**31:
            return column.astype(np.int64) + 1, high + 2
    labels, uniques = pd.factorize(column)
    return labels + 1, len(uniques) + 1


def sums_by_key(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct keys, ascending, and the float64 sum of the values of each (exact for
    whole nanoseconds below 2**53, as pandas' grouped sums are)."""
    distinct, at = np.unique(keys, return_inverse=True)
    weights = np.asarray(values, dtype=np.float64)
    return distinct, np.bincount(at.reshape(-1), weights=weights, minlength=len(distinct))


def shared_codes(frames: Sequence[pd.DataFrame], columns: Sequence[str]) -> list[np.ndarray]:
    """Per frame, per row: ``first_seen_codes`` of the columns, the same numbers across frames."""
    codes = first_seen_codes(*(np.concatenate([f[c].to_numpy() for f in frames]) for c in columns))
    return np.split(codes, np.cumsum([len(f) for f in frames])[:-1])
