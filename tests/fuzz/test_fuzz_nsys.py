"""Mutants of the shared Nsight Systems SQLite exports (helpers/mutants_sqlite.py: NULLs, wrong
types, extremes, rows repeated or deleted, a column or table dropped, the file cut short),
each of which gives a result or a clear error (issue 16)."""

from __future__ import annotations

import random
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers.mutants_judge import assert_contract, fuzz_settings, shared
from helpers.mutants_sqlite import mutate_sqlite

EXPORTS = (
    "pipit_perlmutter_a100_40gb_saxpy_mpi.sqlite",
    "pipit_perlmutter_4xa100_80gb_cloverleaf.sqlite",
)

pytestmark = pytest.mark.traces  # reads ../shared/traces


@pytest.mark.parametrize("name", EXPORTS)
def test_nsys_mutants_meet_the_contract(name: str) -> None:
    export = shared("nsys", name)

    @fuzz_settings(examples=12)
    @given(rng=st.randoms(use_true_random=False))
    def check(rng: random.Random) -> None:
        with tempfile.TemporaryDirectory(prefix="gpuprofile-fuzz-") as folder:
            path = Path(shutil.copyfile(export, Path(folder) / name))
            path.chmod(0o644)  # the shared copy is read-only
            mutate_sqlite(path, rng)
            assert_contract(path, name)

    check()
