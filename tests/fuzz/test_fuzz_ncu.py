"""Mutants of the shared Nsight Compute CSVs (helpers/mutants_csv.py: cells changed, columns
dropped, rows cut or repeated, numbers that do not parse), each of which gives a result or a
clear error (issue 16)."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers.mutants_csv import mutate_csv
from helpers.mutants_judge import assert_contract, fuzz_settings, shared

FILES = ("rtx5070_gemm_naive.csv", "rtx5070_saxpy.csv")

pytestmark = pytest.mark.traces  # reads ../shared/traces


@pytest.mark.parametrize("name", FILES)
def test_ncu_mutants_meet_the_contract(name: str) -> None:
    data = shared("ncu", name).read_bytes()

    @fuzz_settings(examples=50)
    @given(rng=st.randoms(use_true_random=False))
    def check(rng: random.Random) -> None:
        with tempfile.TemporaryDirectory(prefix="gpuprofile-fuzz-") as folder:
            path = Path(folder) / name
            path.write_bytes(mutate_csv(data, rng))
            assert_contract(path, name)

    check()
