"""The scenario notebooks on a GPU: the hint each one is about fires, and its fix removes it;
the after cell's diff against its baseline has steps enough for a noise interval."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from helpers.scenarios import run_scenario


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.mark.parametrize(
    ("notebook", "kind"),
    [
        ("launch_bound_small_ops.ipynb", "launch-overhead"),
        ("item_in_loop.ipynb", "sync-stall"),
        ("dataloader_bound.ipynb", "data-loading"),
        ("attention_scaling.ipynb", "attention-unfused"),
        # The hand-written block: its loops over heads and experts, and the mask routing whose
        # syncs wait for the GPU there (not run yet on a GPU when this was written).
        ("custom_block.ipynb", "python-loop"),
        ("custom_block.ipynb", "data-dependent-routing"),
        pytest.param(
            "elementwise_chain.ipynb",
            "memory-bound",
            # Seen on an H200: each op of the unfused chain runs at 100-111% of the DRAM roof
            # (4M floats sit in its 60 MB L2), so no op is memory-bound below its roof; the
            # waste is the chain's extra round trips, which no detector names yet (a fusion
            # finding). Expected to fail on Hopper and newer only (the one kind seen), and not
            # strict there: elsewhere the hint must fire.
            marks=pytest.mark.xfail(
                torch.cuda.is_available() and torch.cuda.get_device_capability() >= (9, 0),
                reason="ops at the DRAM roof on an H200: no fusion finding yet",
            ),
        ),
    ],
)
def test_the_hint_fires_and_the_fix_shrinks_it(notebook: str, kind: str, cache_dir: Path) -> None:
    result = run_scenario(notebook, cache_dir)
    found = {k: h["gain_ns"] for k, h in result["before"]["hints"].items()}
    assert kind in found, f"{notebook}: no {kind} finding; the findings and their gains: {found}"
    before = result["before"]["hints"][kind]
    assert before["gain_ns"] > 0
    after = result["after"]["hints"].get(kind)
    assert after is None or after["gain_ns"] < before["gain_ns"] / 2
    # Every notebook records 8 or more steps a side (--steps): enough for an interval.
    step = result["step_ns"]
    assert step is not None
    assert min(step["count"]["a"], step["count"]["b"]) >= 3
    assert step["interval"] is not None
