"""The contract every fuzz test asserts, and the hypothesis settings they share (issue 16).

``outcome`` (helpers/mutants.py) loads any trace gpuprofile reads, so the same judge serves the
JSON mutants and the SQLite, CSV and protobuf ones.
"""

from __future__ import annotations

import random
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.mutants import outcome
from helpers.prerequisites import SHARED_TRACES, missing

ALLOWED = ("ok", "error")


def shared(*parts: str) -> Path:
    """A file or folder of ../shared/traces (read in place), or a skip (a failure under
    CI=true) where it is absent."""
    path = SHARED_TRACES.joinpath(*parts)
    if not path.exists():
        missing(f"shared trace not found: {path} (expected ../shared beside the repository)")
    return path


def fuzz_settings(examples: int) -> settings:
    """Deterministic (CI must not flake), nothing written into the repository, no deadline
    (a first import or a cold disk is slow, not wrong); ``examples`` sizes the file's share of
    the fuzz budget (tests/fuzz runs in about a minute in all)."""
    return settings(
        max_examples=examples,
        database=None,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def assert_contract(path: Path, what: str) -> None:
    """A result or a clear error: no crash, no impossible figure, no unsafe text.

    Parameters:
        path: the mutant, written where gpuprofile can read it.
        what: the trace it was made from, for the message.
    """
    with warnings.catch_warnings():
        # numpy's cast warnings are the symptom; the outcome is what is judged.
        warnings.simplefilter("ignore")
        result = outcome(path)
    assert result.kind in ALLOWED, f"mutant of {what}: {result.kind}: {result.detail}"


def assert_mutants(
    make: Callable[[random.Random], bytes], file_name: str, what: str, examples: int
) -> None:
    """Each of ``examples`` mutants meets the contract (``assert_contract``).

    Parameters:
        make: the mutant's bytes from hypothesis's Random (shrunk when one fails).
        file_name: the name it is written under, in a folder of its own.
        what: the trace the mutants are made from, for the message.
        examples: the test's share of the fuzz budget (``fuzz_settings``).
    """

    @fuzz_settings(examples)
    @given(rng=st.randoms(use_true_random=False))
    def check(rng: random.Random) -> None:
        with tempfile.TemporaryDirectory(prefix="gpuprofile-fuzz-") as folder:
            path = Path(folder) / file_name
            path.write_bytes(make(rng))
            assert_contract(path, what)

    check()
