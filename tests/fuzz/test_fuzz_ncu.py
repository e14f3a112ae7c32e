"""Mutants of the shared Nsight Compute CSVs (helpers/mutants_csv.py: cells changed, columns
dropped, rows cut or repeated, numbers that do not parse), each of which gives a result or a
clear error (issue 16)."""

from __future__ import annotations

import pytest

from helpers.mutants_csv import mutate_csv
from helpers.mutants_judge import assert_mutants, shared

FILES = ("rtx5070_gemm_naive.csv", "rtx5070_saxpy.csv")

pytestmark = pytest.mark.traces  # reads ../shared/traces


@pytest.mark.parametrize("name", FILES)
def test_ncu_mutants_meet_the_contract(name: str) -> None:
    data = shared("ncu", name).read_bytes()
    assert_mutants(lambda rng: mutate_csv(data, rng), name, name, examples=50)
