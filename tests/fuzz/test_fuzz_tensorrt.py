"""Mutants of the shared trtexec exports (a layer profile, its engine graph, metadata and
times, read together as one engine): one file of the set mutated (helpers/mutants.py works on
any JSON document), the engine read through its profile; each gives a result or a clear error
(issue 16)."""

from __future__ import annotations

import json
import random
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers.mutants import mutate
from helpers.mutants_judge import assert_contract, fuzz_settings, shared

ENGINES = ("trex_a100_resnet_fp16", "trex_mobilenet_qat")

pytestmark = pytest.mark.traces  # reads ../shared/traces


@pytest.mark.parametrize("engine", ENGINES)
def test_tensorrt_mutants_meet_the_contract(engine: str) -> None:
    files = sorted(shared("tensorrt").glob(f"{engine}.*"))
    assert files, f"no exports of {engine}"

    @fuzz_settings(examples=20)
    @given(rng=st.randoms(use_true_random=False))
    def check(rng: random.Random) -> None:
        with tempfile.TemporaryDirectory(prefix="gpuprofile-fuzz-") as folder:
            copies = [Path(shutil.copyfile(f, Path(folder) / f.name)) for f in files]
            # The times file (110 KB of gzip) stays whole: decoding, mutating and packing it
            # again would take most of this file's budget for one importer path.
            target = rng.choice([c for c in copies if c.suffix == ".json"])
            target.write_bytes(mutate(json.loads(target.read_bytes()), rng))
            assert_contract(Path(folder) / f"{engine}.profile.json", target.name)

    check()
