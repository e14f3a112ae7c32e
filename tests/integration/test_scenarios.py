"""The scenario notebooks on the CPU: each runs in under a minute and says what it should.

Hints that need a GPU (kernel launches, host-device syncs) must stay silent on the CPU; their
firing is asserted in tests/gpu/test_scenarios_gpu.py. Each after cell is diffed against its
before cell (``--baseline``): the step verdict is read back and recomputed here from the
ProfilerStep#N ops of both profiles.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from helpers.scenarios import run_scenario


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


def assert_step_verdict(result: dict[str, Any], recorded: int) -> tuple[float, float]:
    """The diff's step summary agrees with the two profiles' own ProfilerStep#N ops: `recorded`
    steps a side (the notebook's ``--steps W,N``), medians and their ratio as numpy computes them,
    and an interval around the ratio. Returns the interval."""
    before = np.asarray(result["before"]["steps"], dtype=float)
    after = np.asarray(result["after"]["steps"], dtype=float)
    assert len(before) == len(after) == recorded
    step = result["step_ns"]
    assert step["count"] == {"a": recorded, "b": recorded}
    assert step["source"] == {"a": "host ProfilerStep ranges", "b": "host ProfilerStep ranges"}
    assert step["a"] == pytest.approx(np.median(before), rel=1e-9)
    assert step["b"] == pytest.approx(np.median(after), rel=1e-9)
    ratio = float(np.median(after) / np.median(before))
    assert step["ratio"] == pytest.approx(ratio, rel=1e-9)
    assert step["interval"] is not None
    lo, hi = step["interval"]
    assert lo <= ratio <= hi
    return lo, hi


def test_launch_bound_small_ops(cache_dir: Path) -> None:
    result = run_scenario("launch_bound_small_ops.ipynb", cache_dir)
    before = result["before"]
    # 20 recorded steps x 100 iterations x (mul, add, tanh): the tiny ops are all there...
    assert before["ops"]["aten::tanh"] == 2000
    assert before["ops"]["aten::mul"] == 2000
    # ...but a CPU launches no kernels, so there is no launch overhead to report.
    assert "launch-overhead" not in before["hints"]
    # Both cells run the same eager ops on a CPU: no direction to assert.
    assert_step_verdict(result, 20)


def test_item_in_loop(cache_dir: Path) -> None:
    result = run_scenario("item_in_loop.ipynb", cache_dir)
    assert result["before"]["ops"]["aten::item"] == 25
    assert result["after"]["ops"].get("aten::item", 0) == 0
    # Nothing is asynchronous on a CPU: .item() waits for nothing.
    assert "sync-stall" not in result["before"]["hints"]
    assert_step_verdict(result, 25)


def test_dataloader_bound(cache_dir: Path) -> None:
    result = run_scenario("dataloader_bound.ipynb", cache_dir)
    before = result["before"]["hints"]["data-loading"]
    # 18 recorded steps x 16 samples x 1 ms of sleep in __getitem__ on the main thread.
    assert before["gain_ns"] >= 18 * 16 * 1_000_000
    assert before["gain_ns"] <= result["before"]["wall_ns"]
    after = result["after"]["hints"].get("data-loading")
    assert after is None or after["gain_ns"] < before["gain_ns"] / 2
    # Workers sleep while the model trains, on a CPU too: faster beyond noise.
    _, hi = assert_step_verdict(result, 18)
    assert hi < 1


def test_attention_scaling(cache_dir: Path) -> None:
    result = run_scenario("attention_scaling.ipynb", cache_dir)
    hint = result["before"]["hints"]["attention-unfused"]
    assert "L=512" in hint["title"]
    assert "scaled_dot_product_attention" in " ".join(hint["fix"]) + hint["code"]
    assert "attention-unfused" not in result["after"]["hints"]
    # The fused CPU kernel does not write the score matrix out: faster beyond noise.
    _, hi = assert_step_verdict(result, 12)
    assert hi < 1
    # The sweep: both matmuls and the softmax do work in proportion to L x L, so the module's
    # FLOPs grow as L^2 exactly; its peak memory lies between q's L and the scores' L^2.
    fits = {(f["subject"], f["metric"]): f for f in result["sweep"]["fits"]}
    assert abs(fits[("Attention", "flops")]["exponent"] - 2.0) < 1e-6
    assert 1.0 < fits[("Attention", "peak_bytes")]["exponent"] <= 2.0
    time = fits[("total", "time")]
    assert time["interval"] is not None and time["samples"] == 12


def test_elementwise_chain(cache_dir: Path) -> None:
    result = run_scenario("elementwise_chain.ipynb", cache_dir)
    assert result["before"]["hardware"] == "calibrated"
    hint = result["before"]["hints"]["memory-bound"]
    assert hint["gain_ns"] > 0
    assert any(name in hint["explanation"] for name in ("aten::mul", "aten::add", "aten::sigmoid"))
    # Nothing is compiled on a CPU: the same chain twice, no direction to assert.
    assert_step_verdict(result, 8)
