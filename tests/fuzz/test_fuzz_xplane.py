"""Mutants of the shared JAX XPlane protobufs (helpers/mutants_xplane.py: bytes flipped, the
file cut short, length prefixes broken, wire types changed, fields repeated), each of which
gives a result or a clear error (issue 16)."""

from __future__ import annotations

import importlib.util

import pytest

from helpers.mutants_judge import assert_mutants, shared
from helpers.mutants_xplane import mutate_xplane
from helpers.prerequisites import missing

FILES = ("tracelens_mi300x_jax08_gemm.xplane.pb", "tracelens_jax_te_fused_attn.xplane.pb")

pytestmark = pytest.mark.traces  # reads ../shared/traces


@pytest.mark.parametrize("name", FILES)
def test_xplane_mutants_meet_the_contract(name: str) -> None:
    if importlib.util.find_spec("jaxlib") is None:
        missing("XPlane is read with jaxlib: pip install 'gpuprofile[jax]'")
    data = shared("jax", name).read_bytes()
    assert_mutants(lambda rng: mutate_xplane(data, rng), name, name, examples=15)
