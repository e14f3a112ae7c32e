"""Mutants of the shared trtexec exports (a layer profile, its engine graph, metadata and
times, read together as one engine): one file of the set mutated (helpers/mutants.py works on
any JSON document), the engine read through its profile; each gives a result or a clear error
(issue 16)."""

from __future__ import annotations

import gzip
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


@pytest.mark.parametrize("engine", ENGINES)
def test_tensorrt_mutants_meet_the_contract(engine: str) -> None:
    files = sorted(shared("tensorrt").glob(f"{engine}.*"))
    assert files, f"no exports of {engine}"

    @fuzz_settings(examples=40)
    @given(rng=st.randoms(use_true_random=False))
    def check(rng: random.Random) -> None:
        with tempfile.TemporaryDirectory(prefix="gpuprofile-fuzz-") as folder:
            copies = [Path(shutil.copyfile(f, Path(folder) / f.name)) for f in files]
            target = rng.choice(copies)
            raw = target.read_bytes()
            gzipped = raw[:2] == b"\x1f\x8b"
            mutant = mutate(json.loads(gzip.decompress(raw) if gzipped else raw), rng)
            target.write_bytes(gzip.compress(mutant, mtime=0) if gzipped else mutant)
            assert_contract(Path(folder) / f"{engine}.profile.json", target.name)

    check()
