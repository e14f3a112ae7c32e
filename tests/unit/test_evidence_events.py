"""heaviest_events picks and orders evidence as pandas' nlargest then sort_values do, reading
three columns rather than taking every column of a wide table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gpuprofile.analyses.hints import MAX_EVIDENCE_EVENTS, heaviest_events


@pytest.mark.parametrize("seed", range(40))
def test_heaviest_events_as_pandas_picks_them(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 3 * MAX_EVIDENCE_EVENTS))
    # Few distinct durations and starts: ties in both, which the order must break as pandas.
    rows = pd.DataFrame(
        {
            "id": rng.permutation(n).astype(np.int64) + 100,
            "start_ns": rng.integers(0, 12, n).astype(np.int64),
            "dur_ns": rng.integers(0, int(rng.integers(1, 30)), n).astype(np.int64),
            "bytes": np.where(rng.random(n) < 0.3, np.nan, rng.integers(0, 5, n)),
            "wide": ["x"] * n,
        },
        index=rng.permutation(n) * 7,  # not positions: the evidence reads ids, not the index
    )
    for by in ("dur_ns", "bytes"):
        expected = rows.nlargest(MAX_EVIDENCE_EVENTS, by).sort_values("start_ns")
        found = heaviest_events(rows, "kernels", 0, "label", by=by)
        assert list(found.event_ids) == expected["id"].tolist()
        ends = (expected["start_ns"] + expected["dur_ns"]).tolist()
        assert list(found.windows) == list(zip(expected["start_ns"].tolist(), ends, strict=True))
