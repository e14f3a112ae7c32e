"""torch.compile on shared GPU traces: Inductor's kernel names split into their fused ops (the
splits written here by hand), and the compiled region each kernel ran in, found from the raw
JSON (a kernel's launch, by correlation id, inside a region's range)."""

from __future__ import annotations

from typing import Any

import pytest

from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.inductor_names import parse_kernel_name
from gpuprofile.importers.kineto import load_kineto
from gpuprofile.units import format_time
from helpers.prerequisites import require_trace
from traces.conftest import KINETO, read_json, trace_events

TRITON = "tracelens_mi300x_torch_compile_triton.json.gz"
XDIT = "tracelens_mi300x_xdit_sd3.5_large_inference.json.gz"
HTA = "hta_a100_triton_kernel.json.gz"

# Kernel names of the shared traces, split by hand: ATen op names keep their underscores.
BY_HAND = {
    "triton_red_fused_add_mean_mul_pow_rsqrt_0": (
        "reduction",
        ("add", "mean", "mul", "pow", "rsqrt"),
    ),
    "triton_red_fused__unsafe_view_add_mean_mul_pow_rsqrt_1": (
        "reduction",
        ("_unsafe_view", "add", "mean", "mul", "pow", "rsqrt"),
    ),
    "triton_poi_fused__unsafe_view_mul_silu_2": ("pointwise", ("_unsafe_view", "mul", "silu")),
    "triton_poi_fused_add_cos_sin_0": ("pointwise", ("add", "cos", "sin")),
    "triton_per_fused__to_copy_add_addmm_mean_mul_pow_rsqrt_transpose_view_8": (
        "persistent reduction",
        ("_to_copy", "add", "addmm", "mean", "mul", "pow", "rsqrt", "transpose", "view"),
    ),
    "triton_poi_fused__scaled_dot_product_flash_attention_cat_transpose_view_10": (
        "pointwise",
        ("_scaled_dot_product_flash_attention", "cat", "transpose", "view"),
    ),
    "triton_red_fused_add_addmm_mul_native_layer_norm_split_unsqueeze_view_16": (
        "reduction",
        ("add", "addmm", "mul", "native_layer_norm", "split", "unsqueeze", "view"),
    ),
    "triton_poi_fused_arange_cat_cos_div_exp_mul_sin_unsqueeze_0": (
        "pointwise",
        ("arange", "cat", "cos", "div", "exp", "mul", "sin", "unsqueeze"),
    ),
}


def events_of(name: str) -> list[dict[str, Any]]:
    """The trace's complete events, times as Decimal microseconds (every digit kept)."""
    doc = read_json(require_trace(KINETO / name), exact=True)
    return [e for e in trace_events(doc) if e.get("ph") == "X"]


@pytest.mark.parametrize("name", [TRITON, XDIT, HTA])
def test_kernel_names_split_as_by_hand(name: str) -> None:
    names = {e["name"] for e in events_of(name) if e.get("cat") == "kernel"}
    inductor = sorted(n for n in names if n.startswith("triton_"))
    assert inductor
    for kernel in inductor:
        parsed = parse_kernel_name(kernel)
        assert parsed is not None and parsed.backend == "triton"
        # The ops, joined again, are the name's middle: nothing lost or added.
        middle = kernel.split("_fused_", 1)[1].rsplit("_", 1)[0]
        assert "_".join(parsed.ops) == middle
        # Inductor sorts them: a wrong split shows as an order broken.
        assert list(parsed.ops) == sorted(parsed.ops)
        if kernel in BY_HAND:
            assert (parsed.kind, parsed.ops) == BY_HAND[kernel]
    assert parse_kernel_name("aten::mm") is None
    assert parse_kernel_name("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs") is None


@pytest.mark.parametrize("name", [TRITON, XDIT])
def test_kernels_in_their_compiled_region(name: str) -> None:
    events = events_of(name)
    regions = sorted(
        (e["ts"], e["ts"] + e["dur"])
        for e in events
        if e["name"].startswith("Torch-Compiled Region: ")
    )
    launches = {
        e["args"]["correlation"]: e["ts"]
        for e in events
        if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})
    }
    expected = []
    for kernel in events:
        if kernel.get("cat") != "kernel":
            continue
        at = launches.get(kernel["args"].get("correlation"))
        inside = [i for i, (a, b) in enumerate(regions) if at is not None and a <= at <= b]
        if inside:
            expected.append((kernel["ts"], kernel["name"], inside[-1]))
    analysis = Analysis(load_kineto(KINETO / name))
    compiled = analysis.compiled
    assert len(compiled.regions) == len(regions)
    rows = compiled.kernels[compiled.kernels["table"] == "kernels"]
    found = [
        (str(n), int(r))
        for _, n, r in sorted(zip(rows["start_ns"], rows["name"], rows["region"], strict=True))
        if r >= 0
    ]
    # Same kernels in time order, each in the same region (both count regions in time order).
    assert found == [(n, r) for _, n, r in sorted(expected)] and found
    # The compile notice says their GPU time apart from the host time of the graphs' calls.
    from gpuprofile.report.build import plain_report

    inside = {(t, n) for t, n, _ in expected}
    kernels = [k for k in events if k.get("cat") == "kernel"]
    gpu_us = sum(k["dur"] for k in kernels if (k["ts"], k["name"]) in inside)
    [text] = [n["text"] for n in plain_report(analysis)["notices"] if n["kind"] == "compile"]
    assert "on the host" in text
    assert f"their kernels {format_time(int(gpu_us * 1000))} on the GPU" in text
    # Every Inductor kernel in the trace is among them, with its fused ops.
    triton = sum(1 for e in events if e.get("cat") == "kernel" and e["name"].startswith("triton_"))
    kinds = [k for k, t in zip(compiled.kinds, compiled.kernels["table"]) if t == "kernels"]
    assert sum(k != "extern" for k in kinds) == triton


def test_a_region_without_graph_calls_is_timed_by_its_own_span() -> None:
    # HTA's Triton trace has a compiled region but no CompiledFunction range inside it: the
    # notice gives the region's span from the raw JSON, not "ran 0 ns".
    from gpuprofile.report.build import plain_report

    raw = [e for e in events_of(HTA) if str(e.get("name", "")).startswith("Torch-Compiled Region")]
    assert raw and not [e for e in events_of(HTA) if e.get("name") == "CompiledFunction"]
    span_us = sum(float(e["dur"]) for e in raw)
    report = plain_report(Analysis(load_kineto(require_trace(KINETO / HTA))))
    [text] = [n["text"] for n in report["notices"] if n["kind"] == "compile"]
    assert f"{len(raw)} compiled region call took {span_us / 1000:.2f} ms" in text
    assert "ran 0 ns" not in text


def test_an_unclosed_step_does_not_stretch_the_wall() -> None:
    """HTA's Triton trace: ProfilerStep#1 is written ending 13 s after the profiler's own span
    (its Trace event) and every other event. The wall is the raw span of the events with that
    step cut at the Trace's end; the host time outside the one kernel is torch.compile calling
    its graph, so the fix is CUDA graphs, not data loading."""
    from gpuprofile.analyses.detectors import host_outside_gpu

    events = events_of(HTA)
    [span] = [e for e in events if e.get("cat") == "Trace"]
    span_end = span["ts"] + span["dur"]
    timeline = [e for e in events if e.get("cat") != "Trace"]
    assert max(e["ts"] + e["dur"] for e in timeline) - span_end > 10_000_000  # 10 s past
    first = min(e["ts"] for e in timeline)
    ends = [min(e["ts"] + e["dur"], span_end) for e in timeline]
    wall_us = max(ends) - first
    analysis = Analysis(load_kineto(require_trace(KINETO / HTA)))
    assert analysis.wall_ns(0) == pytest.approx(float(wall_us) * 1000, abs=1)
    [hint] = host_outside_gpu.detect(analysis)
    assert "reduce-overhead" in hint.fix[0] and "DataLoader" not in " ".join(hint.fix)
    assert hint.basis_ns == analysis.wall_ns(0)
