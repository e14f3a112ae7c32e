"""FLOPs and bytes per op and per kernel: against torch.profiler's own counts, and by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.flops import coverage, kernel_costs, op_costs
from gpuprofile.importers.kineto import load_kineto
from gpuprofile.trace.model import NO_ID, Trace
from helpers.kineto_docs import cpu_op, document, kernel, runtime, write

F32, BF16, F16, I64 = "float", "c10::BFloat16", "c10::Half", "long int"


def shaped(name: str, ts: float, dur: float, dims: list, types: list, **extra: Any) -> dict:
    args = {"Input Dims": dims, "Input type": types}
    if "concrete" in extra:
        args["Concrete Inputs"] = extra.pop("concrete")
    return cpu_op(name, ts, dur, **args, **extra)


def costs_of(tmp_path: Path, events: list[dict]) -> tuple[Trace, Any]:
    trace = load_kineto(write(tmp_path / "t.json", document(events)))
    return trace, op_costs(Analysis(trace))


# --- against torch.profiler's own FLOP counts ------------------------------------------------


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> tuple[Trace, Any, dict]:
    """An MLP step (forward and backward), a conv and a bmm, profiled with with_flops=True."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 32))
    conv = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1)
    x = torch.randn(16, 64, requires_grad=True)
    image = torch.randn(2, 3, 16, 16)
    a, b = torch.randn(4, 8, 16), torch.randn(4, 16, 32)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_flops=True) as prof:
        mlp(x).sum().backward()
        conv(image)
        torch.bmm(a, b)
        _ = (a + 1) * a
    path = tmp_path_factory.mktemp("capture") / "trace.json"
    prof.export_chrome_trace(str(path))
    # torch's per-op FLOPs live on the events only, never in the JSON.
    theirs: dict[tuple[str, str], set[int]] = {}
    for event in prof.events():
        if event.flops:
            theirs.setdefault((event.name, json.dumps(event.input_shapes)), set()).add(event.flops)
    trace = load_kineto(path)
    return trace, op_costs(Analysis(trace)), theirs


def ours_by_shapes(costs: Any, name: str) -> dict[str, set[float]]:
    rows = costs[costs["name"] == name]
    found: dict[str, set[float]] = {}
    for shapes, flops in zip(rows["shapes"], rows["flops"]):
        found.setdefault(json.dumps(json.loads(shapes)), set()).add(float(flops))
    return found


@pytest.mark.parametrize("name", ["aten::mm", "aten::addmm", "aten::bmm", "aten::add", "aten::mul"])
def test_flops_equal_the_profilers(capture: tuple[Trace, Any, dict], name: str) -> None:
    _, costs, theirs = capture
    ours = ours_by_shapes(costs, name)
    expected = {shapes: {float(f) for f in v} for (n, shapes), v in theirs.items() if n == name}
    assert expected, f"torch counted no FLOPs for {name}"
    assert ours == expected
    assert (costs.loc[costs["name"] == name, "flops_source"] == "computed").all()


def test_convolution_flops_equal_the_profilers_conv2d(capture: tuple[Trace, Any, dict]) -> None:
    # torch's profiler counts a convolution at aten::conv2d; we count it at the aten::convolution
    # inside it (torch's flop_registry formula), which conv2d has none for.
    trace, costs, theirs = capture
    parents = trace.ops.set_index("id")["parent"]
    convolutions = costs[costs["name"] == "aten::convolution"]
    assert len(convolutions) == 1
    conv2d = costs.loc[int(parents[convolutions.index[0]])]
    assert conv2d["name"] == "aten::conv2d"
    expected = theirs[("aten::conv2d", json.dumps(json.loads(conv2d["shapes"])))]
    assert {float(convolutions["flops"].iloc[0])} == {float(f) for f in expected}
    assert bool(convolutions["counted"].iloc[0])


def test_nested_ops_count_once_at_the_outermost_formula(capture: tuple[Trace, Any, dict]) -> None:
    trace, costs, _ = capture
    parents = trace.ops.set_index("id")["parent"]
    counted = costs[costs["counted"]]
    # No counted op sits inside another counted op.
    for op_id in counted.index:
        parent = int(parents[op_id])
        while parent != NO_ID:
            assert not costs.loc[parent, "counted"]
            parent = int(parents[parent])
    linear = costs[costs["name"] == "aten::linear"]
    assert not linear["counted"].any() and (linear["counted_at"] == NO_ID).all()
    # The copy_ an addmm runs inside is covered by the addmm.
    copies = costs[(costs["name"] == "aten::copy_")]
    inside = copies[copies.index.map(lambda i: costs.loc[int(parents[i]), "name"]) == "aten::addmm"]
    assert len(inside) and not inside["counted"].any()
    assert (inside["counted_at"].to_numpy() == parents[inside.index].to_numpy()).all()


# --- our own formulas, by hand ------------------------------------------------------------------

TRANSCENDENTAL = 4  # the documented cost of one exp/erf/tanh/... evaluation
CASES = [
    # name, dims, types, flops, bytes: each written from the formula, not from our output
    ("aten::add", [[4, 8, 16], [16], []], [F32, F32, "Scalar"], 512, (512 + 16 + 512) * 4),
    ("aten::add_", [[4, 4], [4, 4], []], [F32, F32, "Scalar"], 16, 3 * 16 * 4),
    ("aten::mul", [[1024, 64], [1024, 64]], [BF16, BF16], 65536, 3 * 65536 * 2),
    ("aten::mul", [[8, 4], []], [F32, "double"], 32, 32 * 4 + 8 + 32 * 4),
    ("aten::threshold_backward", [[16, 128], [16, 128], []], [F32, F32, "Scalar"], 2048,
     3 * 2048 * 4),
    ("aten::exp", [[10]], ["double"], 10 * TRANSCENDENTAL, 2 * 10 * 8),
    ("aten::gelu", [[100, 10]], [F16], 1000 * (TRANSCENDENTAL + 4), 2 * 1000 * 2),
    ("aten::silu", [[8, 8]], [F32], 64 * (TRANSCENDENTAL + 1), 2 * 64 * 4),
    ("aten::sum", [[32, 16], []], [F32, ""], 512, (512 + 1) * 4),  # sum(self, dtype): all dims
    ("aten::mean", [[16, 64], [], [], []], [F32, "ScalarList", "Scalar", ""], 1024, 1024 * 4),
    ("aten::max", [[8, 8], [8, 8]], [F32, F32], 64, 3 * 64 * 4),  # max(self, other)
    ("aten::_softmax", [[4, 8, 16], [], []], [F32, "Scalar", "Scalar"], 512 * 8, 2 * 512 * 4),
    ("aten::_softmax_backward_data", [[4, 8], [4, 8], [], []], [F32, F32, "Scalar", "Scalar"],
     32 * 4, 3 * 32 * 4),
    # layer norm: mean 1 + variance 3 + normalize 2 + weight 1 + bias 1 per element
    ("aten::native_layer_norm", [[2, 3, 8], [], [8], [8], []],
     [BF16, "ScalarList", BF16, BF16, "Scalar"], 48 * 8, (48 + 8 + 8 + 48) * 2),
    ("aten::layer_norm", [[2, 3, 8], [], [], [], [], []],
     [BF16, "ScalarList", "", "", "Scalar", "Scalar"], 48 * 6, 2 * 48 * 2),
    # rms norm: square 1 + sum 1 + normalize 1 + weight 1
    ("aten::rms_norm", [[4, 16], [], [16], []], [F32, "ScalarList", F32, "Scalar"], 64 * 4,
     (64 + 16 + 64) * 4),
    # norm backward: input gradient 10 per element, + 3 with a weight; writes dx, dweight, dbias
    ("aten::native_layer_norm_backward", [[2, 3, 8], [2, 3, 8], [], [2, 3, 1], [2, 3, 1], [8],
     [8], []], [F32, F32, "ScalarList", F32, F32, F32, F32, "ScalarList"], 48 * 13,
     (48 + 48 + 6 + 6 + 8 + 8 + 48 + 8 + 8) * 4),
    ("aten::native_batch_norm_backward", [[4, 2, 3, 3], [4, 2, 3, 3], [], [], [], [2], [2], [],
     [], []], [BF16, BF16, "", "", "", F32, F32, "Scalar", "Scalar", "ScalarList"], 72 * 10,
     (72 + 72) * 2 + (2 + 2) * 4 + 72 * 2),
    ("aten::_fused_rms_norm_backward", [[4, 16], [4, 16], [], [4, 1], [16], []],
     [F32, F32, "ScalarList", F32, F32, "ScalarList"], 64 * 9, (64 + 64 + 4 + 16 + 64 + 16) * 4),
    ("aten::native_group_norm", [[2, 4, 3], [4], [4], [], [], [], [], []],
     [F32, F32, F32, "Scalar", "Scalar", "Scalar", "Scalar", "Scalar"], 24 * 8,
     (24 + 4 + 4 + 24) * 4),
    ("aten::copy_", [[4, 4], [4, 4], []], [F32, I64, "Scalar"], 0, 16 * 8 + 16 * 4),
    ("aten::fill_", [[10], []], [F16, "Scalar"], 0, 10 * 2),
    # torch's registry, by hand: 2*M*K*N; bytes: both operands and the output
    ("aten::mm", [[64, 256], [256, 512]], [BF16, BF16], 2 * 64 * 256 * 512,
     (64 * 256 + 256 * 512 + 64 * 512) * 2),
    ("aten::addmm", [[512], [64, 256], [256, 512], [], []], [F32, F32, F32, "Scalar", "Scalar"],
     2 * 64 * 256 * 512, (512 + 64 * 256 + 256 * 512 + 64 * 512) * 4),
    ("aten::bmm", [[3, 8, 16], [3, 16, 4]], [F16, F16], 2 * 3 * 8 * 16 * 4,
     (3 * 8 * 16 + 3 * 16 * 4 + 3 * 8 * 4) * 2),
    # attention: QK^T and PV, 2 * 2*b*h*s_q*s_k*d; bytes: q, k, v and the output
    ("aten::_scaled_dot_product_flash_attention", [[2, 4, 128, 64]] * 3 + [[], [], [], []],
     [BF16] * 3 + ["Scalar"] * 4, 4 * 2 * 4 * 128 * 128 * 64, 4 * 2 * 4 * 128 * 64 * 2),
    # the same attention as ATen passes it to the flash kernel: [batch, seq, heads, dim]
    ("aten::_flash_attention_forward", [[2, 128, 4, 64]] * 3 + [[]] * 12,
     [BF16] * 3 + ["", "", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "", "",
                   "", ""], 4 * 2 * 4 * 128 * 128 * 64, 4 * 2 * 4 * 128 * 64 * 2),
]  # fmt: skip


@pytest.mark.parametrize(("name", "dims", "types", "flops", "nbytes"), CASES)
def test_formula_by_hand(
    tmp_path: Path, name: str, dims: list, types: list, flops: int, nbytes: int
) -> None:
    _, costs = costs_of(tmp_path, [shaped(name, 10, 5, dims, types)])
    row = costs.iloc[0]
    assert row["flops_source"] == "computed", row["unknown_reason"]
    assert row["flops"] == flops
    assert row["bytes"] == nbytes
    assert row["counted"] and row["counted_at"] == row["op_id"]


def test_unknown_ops_say_why(tmp_path: Path) -> None:
    _, costs = costs_of(
        tmp_path,
        [
            shaped("aten::cat", 0, 1, [[[2, 3], [2, 3]], []], ["TensorList", "Scalar"]),
            cpu_op("aten::mm", 2, 1),  # no shapes recorded
            shaped(
                "aten::batch_norm",
                4,
                1,
                [[8, 4, 2, 2], [4], [4], [4], [4], [], [], [], []],
                [F32] * 5 + ["Scalar"] * 4,
            ),
            shaped("aten::mm", 6, 1, [[4, 5], [6, 7]], [F32, F32]),  # inner dims disagree
        ],
    )
    assert costs["flops"].isna().all() and costs["bytes"].isna().all()
    assert (costs["flops_source"] == "unknown").all()
    reasons = costs["unknown_reason"].astype(str).tolist()
    assert reasons[0] == "no formula"
    assert reasons[1] == "no shapes recorded"
    assert "Concrete Inputs" in reasons[2]
    assert reasons[3].startswith("torch's formula rejected")
    assert not costs["counted"].any() and (costs["counted_at"] == NO_ID).all()
    # Known to be a matmul by name, without shapes to check its alignment.
    assert costs["matmul_like"].tolist() == [False, True, False, True]
    assert not costs["dims_aligned"].any() and not costs["tensor_core_eligible"].any()


def test_dtype_and_tensor_core_facts(tmp_path: Path) -> None:
    _, costs = costs_of(
        tmp_path,
        [
            shaped("aten::mm", 0, 1, [[64, 256], [256, 512]], [BF16, BF16]),
            shaped("aten::mm", 2, 1, [[64, 250], [250, 512]], [BF16, BF16]),  # K % 8 != 0
            shaped("aten::mm", 4, 1, [[7, 12], [12, 20]], [F32, F32]),  # fp32: multiples of 4
            shaped("aten::linear", 6, 1, [[3, 5, 64], [24, 64], [24]], [F16, F16, F16]),
            shaped(
                "aten::convolution", 8, 1, [[2, 16, 8, 8], [32, 16, 3, 3], [32]], [F32, F32, F32]
            ),
            shaped("aten::add", 10, 1, [[1024], [1024], []], [F16, F16, "Scalar"]),
            shaped("aten::copy_", 12, 1, [[1000], [1000], []], [F32, I64, "Scalar"]),
            shaped("aten::embedding", 14, 1, [[100, 8], [5]], [I64, BF16]),
        ],
    )
    assert costs["dtype"].astype(str).tolist() == [
        "bf16", "bf16", "fp32", "fp16", "fp32", "fp16", "fp32", "bf16",
    ]  # fmt: skip
    assert costs["matmul_like"].tolist() == [True] * 5 + [False] * 3
    assert costs["dims_aligned"].tolist() == [True, False, True, True, True, False, False, False]
    assert costs["tensor_core_eligible"].tolist() == [True, False, True, True, True] + [False] * 3
    # fp32 matmuls stay on the fp32 units (TF32 is off by default); fp32 convs use TF32.
    assert costs["tensor_core_roof"].astype(str).tolist() == [
        "bf16", "bf16", "", "fp16", "tf32", "", "", "",
    ]  # fmt: skip


def test_measured_flops_win(tmp_path: Path) -> None:
    trace = load_kineto(
        write(
            tmp_path / "t.json", document([shaped("aten::mm", 0, 1, [[4, 8], [8, 2]], [F32] * 2)])
        )
    )
    ops = trace.ops.copy()
    ops["flops"] = [123.0]
    costs = op_costs(Analysis(Trace(ops=ops, meta=trace.meta)))
    assert costs["flops"].tolist() == [123.0]
    assert costs["flops_source"].astype(str).tolist() == ["measured"]


# --- kernels inherit from the op counted at their launcher -------------------------------------


def launch_events() -> list[dict]:
    """aten::linear > aten::addmm (gemm kernel 30 us) > aten::copy_ (copy kernel 10 us);
    linear also launches a kernel outside the addmm (20 us), and an NCCL kernel (100 us) runs."""
    return [
        shaped("aten::linear", 100, 100, [[64, 256], [512, 256], [512]], [F32] * 3),
        shaped(
            "aten::addmm",
            110,
            80,
            [[512], [64, 256], [256, 512], [], []],
            [F32, F32, F32, "Scalar", "Scalar"],
        ),
        shaped("aten::copy_", 120, 10, [[64, 512], [64, 512], []], [F32, F32, "Scalar"]),
        runtime("cudaLaunchKernel", 122, 2, corr=1),
        runtime("cudaLaunchKernel", 150, 2, corr=2),
        runtime("cudaLaunchKernel", 195, 2, corr=3),
        kernel("copy_kernel", 200, 10, corr=1),
        kernel("gemm_kernel", 210, 30, corr=2),
        kernel("relu_kernel", 240, 20, corr=3),
        runtime("cudaLaunchKernel", 290, 2, corr=4),  # outside any op
        kernel("ncclDevKernel_AllReduce_Sum", 300, 100, corr=4),
    ]


def test_kernels_split_their_ops_costs_by_duration(tmp_path: Path) -> None:
    trace, costs = costs_of(tmp_path, launch_events())
    kernels = kernel_costs(trace, costs).set_index("name")
    addmm = costs[costs["name"] == "aten::addmm"].iloc[0]
    flops = 2 * 64 * 256 * 512
    nbytes = (512 + 64 * 256 + 256 * 512 + 64 * 512) * 4
    assert addmm["flops"] == flops and addmm["bytes"] == nbytes
    assert kernels.loc["gemm_kernel", "flops"] == pytest.approx(flops * 30 / 40)
    assert kernels.loc["copy_kernel", "flops"] == pytest.approx(flops * 10 / 40)
    assert kernels.loc["copy_kernel", "bytes"] == pytest.approx(nbytes * 10 / 40)
    assert kernels.loc["copy_kernel", "cost_op_id"] == addmm["op_id"]
    # The copy kernel's launcher is the copy_, its costs the addmm's.
    copy_op = costs[costs["name"] == "aten::copy_"].index[0]
    assert kernels.loc["copy_kernel", "op_id"] == copy_op
    assert kernels.loc["gemm_kernel", "dtype"] == "fp32"
    # linear has no formula and no ancestor with one: its own kernel's FLOPs are unknown.
    assert math.isnan(kernels.loc["relu_kernel", "flops"])
    assert kernels.loc["relu_kernel", "flops_source"] == "unknown"
    assert kernels.loc["relu_kernel", "cost_op_id"] == NO_ID
    # Compute-kernel time with known FLOPs: 40 of 60 us (NCCL is no compute).
    assert coverage(Analysis(trace), costs, kernel_costs(trace, costs)) == pytest.approx(40 / 60)


def test_cpu_only_coverage(tmp_path: Path) -> None:
    # Outermost aten ops: linear (100 us, with a counted addmm of 80 us) and a view (20 us).
    python_wrapper = {
        "ph": "X", "cat": "python_function", "name": "model.py(1): forward", "pid": 100,
        "tid": 1, "ts": 50, "dur": 300, "args": {},
    }  # fmt: skip
    events = [
        python_wrapper,
        *launch_events()[:3],
        shaped("aten::view", 250, 20, [[4, 4], []], [F32, "ScalarList"]),
    ]
    trace, costs = costs_of(tmp_path, events)
    assert trace.kernels.empty
    assert coverage(Analysis(trace), costs, kernel_costs(trace, costs)) == pytest.approx(80 / 120)


def test_empty_trace() -> None:
    trace = Trace()
    costs = op_costs(Analysis(trace))
    kernels = kernel_costs(trace, costs)
    assert costs.empty and kernels.empty
    assert math.isnan(coverage(Analysis(trace), costs, kernels))


# --- with Concrete Inputs ---------------------------------------------------------------------


def test_concrete_inputs_complete_convolution_reduction_and_batch_norm(tmp_path: Path) -> None:
    conv_types = [F32, F32, F32, "ScalarList", "ScalarList", "ScalarList", "Scalar",
                  "ScalarList", "Scalar"]  # fmt: skip
    _, costs = costs_of(
        tmp_path,
        [
            # 2x3x16x16 input, 8x3x3x3 weight, stride 2, padding 1 -> 2x8x8x8 output
            shaped("aten::convolution", 0, 1, [[2, 3, 16, 16], [8, 3, 3, 3], [8]] + [[]] * 6,
                   conv_types,
                   concrete=["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"]),
            # transposed: 1x4x5x5 input, weight 4x2x3x3 (C_in, C_out/groups), stride 2
            shaped("aten::convolution", 2, 1, [[1, 4, 5, 5], [4, 2, 3, 3], []] + [[]] * 6,
                   [F32, F32, "", *conv_types[3:]],
                   concrete=["", "", "", "[2, 2]", "[0, 0]", "[1, 1]", "True", "[0, 0]", "1"]),
            shaped("aten::sum", 4, 1, [[32, 16], [], [], []], [F32, "ScalarList", "Scalar", ""],
                   concrete=["", "[1]", "False", ""]),
            shaped("aten::batch_norm", 6, 1, [[8, 4, 2, 2], [4], [4], [4], [4], [], [], [], []],
                   [F32] * 5 + ["Scalar"] * 4,
                   concrete=["", "", "", "", "", "False", "0.1", "1e-05", "True"]),
            shaped("aten::batch_norm", 8, 1, [[8, 4, 2, 2], [4], [4], [4], [4], [], [], [], []],
                   [F32] * 5 + ["Scalar"] * 4,
                   concrete=["", "", "", "", "", "True", "0.1", "1e-05", "True"]),
        ],
    )  # fmt: skip
    conv, transposed, total, eval_bn, train_bn = (costs.iloc[i] for i in range(5))
    assert conv["flops"] == 2 * (2 * 8 * 8 * 8) * (3 * 3 * 3)  # 2 * outputs * C_in * k*k
    assert conv["bytes"] == (2 * 3 * 16 * 16 + 8 * 3 * 3 * 3 + 8 + 2 * 8 * 8 * 8) * 4
    # (5 - 1) * 2 + 3 = 11: output 1x2x11x11; transposed FLOPs go by input positions
    assert transposed["flops"] == 2 * (1 * 5 * 5) * 4 * 2 * 9
    assert transposed["bytes"] == (4 * 5 * 5 + 4 * 2 * 9 + 2 * 11 * 11) * 4
    assert total["flops"] == 512 and total["bytes"] == (512 + 32) * 4
    # eval: normalize 2 + weight 1 + bias 1; training adds statistics 4
    assert eval_bn["flops"] == 128 * 4 and train_bn["flops"] == 128 * 8
    assert eval_bn["bytes"] == (128 + 4 * 4 + 128) * 4


def test_concrete_inputs_text_is_parsed_when_present(tmp_path: Path) -> None:
    # Whatever the ops table holds, ops recorded with Concrete Inputs still load and cost.
    _, costs = costs_of(
        tmp_path,
        [shaped("aten::mm", 0, 1, [[4, 8], [8, 2]], [F32, F32], concrete=["", ""])],
    )
    assert costs["flops"].tolist() == [2 * 4 * 8 * 2]


def test_index_is_the_op_id(tmp_path: Path) -> None:
    trace, costs = costs_of(tmp_path, launch_events())
    assert costs.index.tolist() == trace.ops["id"].tolist() == costs["op_id"].tolist()
    assert np.array_equal(costs["rank"].to_numpy(), trace.ops["rank"].to_numpy())


def test_kernels_without_ops(tmp_path: Path) -> None:
    trace = load_kineto(write(tmp_path / "t.json", document([kernel("k", 0, 4, corr=1)])))
    costs = op_costs(Analysis(trace))
    kernels = kernel_costs(trace, costs)
    assert len(kernels) == 1 and math.isnan(kernels["flops"].iloc[0])
    assert kernels["flops_source"].tolist() == ["unknown"]
    assert coverage(Analysis(trace), costs, kernels) == 0.0


@pytest.mark.parametrize(
    ("name", "dims", "types", "concrete", "seq_q", "seq_k", "lower_right"),
    [
        # SDPA's flash op: is_causal is its 5th input; [batch, heads, seq, dim]
        ("aten::_scaled_dot_product_flash_attention", [[2, 4, 128, 64]] * 3 + [[]] * 4,
         [BF16] * 3 + ["Scalar"] * 4, ["", "", "", "0.", "True", "False", ""], 128, 128, False),
        # a query shorter than the keys (decoding with a cache), upper-left aligned
        ("aten::_scaled_dot_product_flash_attention", [[2, 4, 16, 64], [2, 4, 128, 64],
         [2, 4, 128, 64]] + [[]] * 4, [BF16] * 3 + ["Scalar"] * 4,
         ["", "", "", "0.", "True", "False", ""], 16, 128, False),
        # memory-efficient attention, [batch, seq, heads, dim], custom_mask_type 2: lower-right
        ("aten::_efficient_attention_forward", [[2, 16, 4, 64], [2, 128, 4, 64],
         [2, 128, 4, 64]] + [[]] * 11, [BF16] * 3 + [""] * 11,
         ["", "", "", "", "", "", "", "", "0.", "2", "False", "", "", ""], 16, 128, True),
    ],
)  # fmt: skip
def test_causal_attention_counts_the_scores_under_its_mask(
    tmp_path: Path,
    name: str,
    dims: list,
    types: list,
    concrete: list,
    seq_q: int,
    seq_k: int,
    lower_right: bool,
) -> None:
    """A causal call computes only the scores its mask keeps: row i of the queries sees i + 1
    keys from the upper-left corner, or seq_k - seq_q + i + 1 from the lower-right. Counted
    here row by row; the full count is torch's 4 * b * h * s_q * s_k * d."""
    b, h, d = 2, 4, 64
    seen = sum(
        min(seq_k, max(0, (seq_k - seq_q + i + 1) if lower_right else i + 1)) for i in range(seq_q)
    )
    _, costs = costs_of(tmp_path, [shaped(name, 10, 5, dims, types, concrete=concrete)])
    row = costs.iloc[0]
    assert row["flops_source"] == "computed", row["unknown_reason"]
    assert row["flops"] == pytest.approx(4 * b * h * d * seen)
    full = 4 * b * h * seq_q * seq_k * d
    assert row["flops"] < full  # the case is one


def test_dims_read_as_recorded_reads_them() -> None:
    """recorded.dims' one-pass reading of an Input Dims entry answers as recorded.is_number_list
    and recorded.shape do: bools, floats, negatives, past MAX_ELEMENTS, nested, not lists."""
    import random

    from gpuprofile.analyses import recorded

    rng = random.Random(1)
    big = recorded.MAX_ELEMENTS
    values = [0, 1, 3, 64, -1, big, big + 1, 2**60, True, False, 1.0, 2.5, float("nan"), "3"]
    entries: list[object] = [None, "x", 3, {"a": 1}, [[1, 2]], [], [2**27, 2**27]]
    entries += [[rng.choice(values) for _ in range(rng.randint(0, 4))] for _ in range(5000)]
    for entry in entries:
        flat = recorded.is_number_list(entry) or entry == []
        assert recorded.dims(entry) == (flat, recorded.shape(entry) if flat else None), entry
