"""The scenario notebooks on the CPU: each runs in under a minute and says what it should.

Hints that need a GPU (kernel launches, host-device syncs) must stay silent on the CPU; their
firing is asserted in tests/gpu/test_scenarios_gpu.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.scenarios import run_scenario


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


def test_launch_bound_small_ops(cache_dir: Path) -> None:
    result = run_scenario("launch_bound_small_ops.ipynb", cache_dir)
    before = result["before"]
    # 10 steps x 100 iterations x (mul, add, tanh): the tiny ops are all there...
    assert before["ops"]["aten::tanh"] == 1000
    assert before["ops"]["aten::mul"] == 1000
    # ...but a CPU launches no kernels, so there is no launch overhead to report.
    assert "launch-overhead" not in before["hints"]


def test_item_in_loop(cache_dir: Path) -> None:
    result = run_scenario("item_in_loop.ipynb", cache_dir)
    assert result["before"]["ops"]["aten::item"] == 30
    assert result["after"]["ops"].get("aten::item", 0) == 0
    # Nothing is asynchronous on a CPU: .item() waits for nothing.
    assert "sync-stall" not in result["before"]["hints"]


def test_dataloader_bound(cache_dir: Path) -> None:
    result = run_scenario("dataloader_bound.ipynb", cache_dir)
    before = result["before"]["hints"]["data-loading"]
    # 320 samples x 1 ms of sleep in __getitem__ on the main thread: at least 0.3 s of loading.
    assert before["gain_ns"] >= 300_000_000
    assert before["gain_ns"] <= result["before"]["wall_ns"]
    after = result["after"]["hints"].get("data-loading")
    assert after is None or after["gain_ns"] < before["gain_ns"] / 2


def test_attention_scaling(cache_dir: Path) -> None:
    result = run_scenario("attention_scaling.ipynb", cache_dir)
    hint = result["before"]["hints"]["attention-unfused"]
    assert "L=512" in hint["title"]
    assert "scaled_dot_product_attention" in " ".join(hint["fix"]) + hint["code"]
    assert "attention-unfused" not in result["after"]["hints"]


def test_elementwise_chain(cache_dir: Path) -> None:
    result = run_scenario("elementwise_chain.ipynb", cache_dir)
    assert result["before"]["hardware"] == "calibrated"
    hint = result["before"]["hints"]["memory-bound"]
    assert hint["gain_ns"] > 0
    assert any(name in hint["explanation"] for name in ("aten::mul", "aten::add", "aten::sigmoid"))
