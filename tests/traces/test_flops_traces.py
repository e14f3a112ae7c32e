"""FLOPs and the roofline on real GPU traces, checked against the raw JSON read here."""

from __future__ import annotations

import gzip
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gpuprofile.analyses.context import Analysis
from gpuprofile.hardware.model import Hardware
from gpuprofile.importers.kineto import load_kineto
from gpuprofile.trace.model import NO_ID
from helpers.prerequisites import SHARED_TRACES, require_trace

QWEN = SHARED_TRACES / "kineto" / "tracelens_h100_qwen1.5_0.5b_inference.json.gz"
SD35 = SHARED_TRACES / "kineto" / "tracelens_mi300x_xdit_sd3.5_large_inference.json.gz"
# Datasheet-like roofs; the checks below do not depend on their values.
GPU = Hardware(
    "test", "user", {"bf16": 9.9e14, "fp16": 9.9e14, "tf32": 4.9e14, "fp32": 6.7e13,
                     "fp64": 3.4e13}, dram_bytes_per_s=3.35e12,
)  # fmt: skip


def raw_ops(path: Path, name: str) -> list[dict[str, Any]]:
    raw = path.read_bytes()
    doc = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    return [e for e in doc["traceEvents"] if e.get("cat") == "cpu_op" and e["name"] == name]


def gemm_flops(name: str, dims: list[list[int]]) -> int:
    (m, k), (_, n) = dims[1:3] if name == "aten::addmm" else dims[:2]
    return 2 * m * k * n


@pytest.fixture(scope="module")
def qwen() -> Analysis:
    return Analysis(load_kineto(require_trace(QWEN)), GPU)


@pytest.mark.parametrize("name", ["aten::mm", "aten::addmm"])
def test_matmul_flops_are_2mnk_of_the_recorded_dims(qwen: Analysis, name: str) -> None:
    events = raw_ops(QWEN, name)
    assert events
    # Nothing above an mm or addmm in this trace has a formula: each counts on its own.
    expected = sum(gemm_flops(name, e["args"]["Input Dims"]) for e in events)
    costs = qwen.op_costs[qwen.op_costs["name"] == name]
    assert costs["counted"].all() and (costs["flops_source"] == "computed").all()
    assert costs["flops"].sum() == expected
    points = qwen.roofline.points
    mine = points[(points["level"] == "op") & (points["name"] == name)]
    assert len(mine)
    for shapes, count, flops in zip(mine["shapes"], mine["count"], mine["flops"]):
        assert flops == count * gemm_flops(name, json.loads(shapes))
    assert (mine["bound"] != "unknown").all() and mine["tensor_cores"].all()


def test_attention_flops_and_the_flash_layout(qwen: Analysis) -> None:
    events = raw_ops(QWEN, "aten::_scaled_dot_product_flash_attention")
    expected = 0
    causal = 0
    for e in events:
        (b, h, s_q, d), (_, _, s_k, _) = e["args"]["Input Dims"][:2]
        # is_causal (the op's 5th input): each query row i sees its first i + 1 keys only.
        if e["args"]["Concrete Inputs"][4] == "True":
            causal += 1
            scores = sum(min(i + 1, s_k) for i in range(s_q))
        else:
            scores = s_q * s_k
        expected += 2 * (2 * b * h * scores * d)  # QK^T and PV
    assert causal, "the case is one: Qwen's attention is causal"
    costs = qwen.op_costs
    sdpa = costs[costs["name"] == "aten::_scaled_dot_product_flash_attention"]
    assert sdpa["counted"].all()
    assert sdpa["flops"].sum() == pytest.approx(expected, rel=1e-12)
    # Its child takes [batch, seq, heads, dim]; its FLOPs must come out the same.
    flash = costs[costs["name"] == "aten::_flash_attention_forward"]
    assert len(flash) == len(sdpa) and not flash["counted"].any()
    assert np.array_equal(flash["flops"].to_numpy(), costs.loc[flash["counted_at"], "flops"])


def test_coverage_and_conservation(qwen: Analysis) -> None:
    roofline = qwen.roofline
    assert 0 < roofline.coverage <= 1
    points = roofline.points
    ops, kernels = points[points["level"] == "op"], points[points["level"] == "kernel"]
    # The same known kernels, grouped two ways.
    assert kernels["flops"].sum() == pytest.approx(ops["flops"].sum(), rel=1e-9)
    assert kernels["time_ns"].sum() == qwen.trace.kernels["dur_ns"].sum()
    assert points["key"].is_unique


def test_out_variant_matmuls_of_a_compiled_graph() -> None:
    # Inductor calls mm.out(self, mat2, *, out): the out tensor is written, not read.
    trace = load_kineto(require_trace(SD35))
    costs = Analysis(trace, GPU).op_costs
    mm = costs[costs["name"] == "aten::mm"]
    expected_flops = expected_bytes = 0
    events = raw_ops(SD35, "aten::mm")
    for e in events:
        dims, types = e["args"]["Input Dims"], e["args"]["Input type"]
        assert set(types[:2]) == {"c10::BFloat16"}
        (m, k), (_, n) = dims[:2]
        expected_flops += 2 * m * k * n
        expected_bytes += (m * k + k * n + m * n) * 2
    assert len(mm) == len(events) and any(len(e["args"]["Input Dims"]) == 3 for e in events)
    assert mm["flops"].sum() == expected_flops
    assert mm["bytes"].sum() == expected_bytes


def test_every_kineto_trace(kineto_path: Path) -> None:
    analysis = Analysis(load_kineto(kineto_path), GPU)
    costs, kernels, roofline = analysis.op_costs, analysis.kernel_costs, analysis.roofline
    # A counted op has no counted ancestor.
    parent = analysis.trace.ops.set_index("id")["parent"]
    counted = costs.index[costs["counted"].to_numpy()]
    ancestors = parent.reindex(counted).to_numpy()
    while (alive := ancestors != NO_ID).any():
        assert not costs.loc[ancestors[alive], "counted"].any()
        up = parent.reindex(ancestors).fillna(NO_ID).to_numpy().astype(np.int64)
        ancestors = np.where(alive, up, NO_ID)
    # Kernels share out exactly their op's FLOPs.
    known = kernels[np.isfinite(kernels["flops"].to_numpy())]
    shared = defaultdict(float)
    for op, flops in zip(known["cost_op_id"], known["flops"]):
        shared[op] += flops
    for op, flops in shared.items():
        assert flops == pytest.approx(costs.loc[op, "flops"], rel=1e-9)
    points = roofline.points
    assert points["key"].is_unique
    assert set(points["bound"]) <= {"memory", "compute", "unknown"}
    assert (points["saved_ns"].dropna() >= 0).all()
    assert math.isnan(roofline.coverage) or 0 <= roofline.coverage <= 1
