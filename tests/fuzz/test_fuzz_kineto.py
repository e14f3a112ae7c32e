"""Mutants of small shared Kineto traces (helpers/mutants.py: keys deleted, types changed,
values swapped, extremes, repeated events, hostile names, truncation, raw tokens) each give a
result or a clear error (issue 16)."""

from __future__ import annotations

import gzip
import json
from functools import cache
from typing import Any

import pytest

from helpers.mutants import mutate
from helpers.mutants_judge import assert_mutants, shared

TRACES = (
    "kineto_docs_h100_cuda_sync_before_fix.json",
    "hta_a100_triton_kernel.json.gz",
    "hta_mi250_rocm6_minitoy_train.json.gz",
)

pytestmark = pytest.mark.traces  # reads ../shared/traces


@cache
def _doc(name: str) -> Any:
    raw = shared("kineto", name).read_bytes()
    return json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)


@pytest.mark.parametrize("name", TRACES)
def test_kineto_mutants_meet_the_contract(name: str) -> None:
    doc = _doc(name)
    assert_mutants(lambda rng: mutate(doc, rng), "mutant.json", name, examples=50)
