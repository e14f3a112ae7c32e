import numpy as np
import pandas as pd
import pytest

from gpuprofile.trace.model import SCHEMA, Trace, empty_table, make_table


def test_empty_trace_has_every_table_with_its_schema() -> None:
    trace = Trace()
    for table, schema in SCHEMA.items():
        frame = trace.table(table)
        assert frame.empty
        assert {c: str(frame[c].dtype) for c in frame.columns} == schema


def test_make_table_fills_defaults_and_encodes_names() -> None:
    kernels = make_table(
        "kernels",
        {"name": ["gemm", "relu", "gemm"], "start_ns": [0, 5, 9], "dur_ns": [4, 1, 4]},
    )
    assert isinstance(kernels["name"].dtype, pd.CategoricalDtype)
    assert list(kernels["name"].cat.categories) == ["gemm", "relu"]
    assert kernels["correlation"].tolist() == [-1, -1, -1]
    assert np.isnan(kernels["occupancy"]).all()
    Trace(kernels=kernels)


def test_validation_rejects_wrong_dtypes_columns_and_negative_durations() -> None:
    ops = empty_table("ops")
    with pytest.raises(ValueError, match="column 'start_ns' is float64, expected int64"):
        Trace(ops=ops.astype({"start_ns": "float64"}))
    with pytest.raises(ValueError, match="differ from schema"):
        Trace(ops=ops.drop(columns=["depth"]))
    with pytest.raises(ValueError, match="negative durations"):
        Trace(kernels=make_table("kernels", {"start_ns": [0], "dur_ns": [-1]}))
    with pytest.raises(ValueError, match="no columns"):
        make_table("memcpy", {"bogus": [1]})
    with pytest.raises(KeyError, match="no table"):
        Trace().table("events")
