"""Analysis.rank_table is ``frame[frame["rank"] == rank]`` of a table, the same rows, index and
values, whether the rank's rows are one run (a merged job: a slice sharing the columns) or
interleaved with another rank's (positions taken)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from gpuprofile.analyses.context import Analysis
from helpers.synthetic import synthetic_trace


def test_rank_tables_are_the_rank_rows_in_one_run_or_interleaved() -> None:
    merged = synthetic_trace(300, ranks=3)
    by_time = merged.kernels.sort_values("start_ns", kind="stable").reset_index(drop=True)
    interleaved = dataclasses.replace(merged, kernels=by_time)
    runs = []
    for trace in (merged, interleaved):
        analysis = Analysis(trace)
        for table in ("ops", "kernels", "runtime"):
            frame = analysis.trace.table(table)
            for rank in analysis.trace.ranks:
                rows = np.flatnonzero(frame["rank"].to_numpy() == rank)
                runs.append(bool(rows[-1] - rows[0] + 1 == len(rows)))
                pd.testing.assert_frame_equal(
                    analysis.rank_table(table, rank), frame[frame["rank"] == rank]
                )
    assert any(runs) and not all(runs)  # both ways were taken
