"""Hints for hand-written model code (python-loop, data-dependent-routing, unfused-elementwise)
on real CPU captures of the researcher's block (tests/helpers/researcher_model.py): its module
calls are the test's own ``nn.Module: {path} ({Type})`` ranges, and the expected counts (heads,
experts, the syncs each expert's iteration makes, the norms) come from how the test built it.
The batched block computes the same function and must give none of them."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.detectors import (
    attention,
    elementwise_chain,
    mask_routing,
    python_loop,
    run_detectors,
)
from gpuprofile.analyses.hints import CONFIDENCES, Hint
from gpuprofile.analyses.thresholds import MIN_ATTENTION_KEYS, MIN_GAIN_SHARE
from gpuprofile.hardware.model import UNKNOWN, Hardware
from gpuprofile.importers.kineto import load_kineto
from gpuprofile.report.build import build_report
from gpuprofile.trace.model import Trace
from helpers import researcher_model as rm

KINDS = ("python-loop", "data-dependent-routing", "unfused-elementwise")
# Each expert's iteration: `if mask.any()` reads the mask on the host, `flat[mask]` and
# `out[mask] = ...` turn it into indices (nonzero): three syncs.
SYNCS_PER_EXPERT = 3


def capture(folder: Path, *, batched: bool, tokens: int = rm.TOKENS) -> tuple[Trace, int]:
    """One training step of the block (after one unrecorded step), and how many experts its
    router used."""
    block, x = rm.make(batched=batched, tokens=tokens)
    optimizer = torch.optim.SGD(block.parameters(), lr=0.01)
    rm.training_step(block, x, optimizer)  # warm-up: first-call costs stay out of the trace
    routed = rm.routed_experts(block, x)
    activities = [torch.profiler.ProfilerActivity.CPU]
    profiler = torch.profiler.profile(activities=activities, record_shapes=True)
    with rm.module_ranges(block), profiler as prof:
        rm.training_step(block, x, optimizer)
    path = folder / f"{'batched' if batched else 'loop'}-{tokens}.json"
    prof.export_chrome_trace(str(path))
    return load_kineto(path), routed


@pytest.fixture(scope="module")
def loop(tmp_path_factory: pytest.TempPathFactory) -> tuple[Analysis, int]:
    trace, routed = capture(tmp_path_factory.mktemp("researcher"), batched=False)
    return Analysis(trace, UNKNOWN), routed


@pytest.fixture(scope="module")
def batched(tmp_path_factory: pytest.TempPathFactory) -> Analysis:
    trace, _ = capture(tmp_path_factory.mktemp("researcher"), batched=True)
    return Analysis(trace, UNKNOWN)


def by_subject(hints: list[Hint], prefix: str) -> Hint:
    [hint] = [h for h in hints if h.subject.startswith(prefix)]
    return hint


def test_python_loops_name_the_attention_and_the_expert_loop(loop: tuple[Analysis, int]) -> None:
    analysis, routed = loop
    assert routed == rm.EXPERTS  # the seed routes a token to every expert: no iteration skipped
    hints = python_loop.detect(analysis)
    assert len(hints) == 2
    heads = by_subject(hints, "LoopAttention: ")
    experts = by_subject(hints, "LoopMoE: ")
    assert "Block.attn (LoopAttention)" in heads.title
    assert "Block.moe (LoopMoE)" in experts.title
    assert heads.numbers["iterations"] == rm.HEADS
    assert experts.numbers["iterations"] == rm.EXPERTS
    # The expert's own call is one item of each iteration, named by its class.
    assert "nn.Module (Expert)" in experts.explanation
    assert heads.fix[0].startswith("Batch over the heads") and "transpose" in heads.fix[0]
    assert "scaled_dot_product_attention" in heads.code
    assert experts.fix[0].startswith("Batch over the experts")
    assert "torch.bmm" in experts.code and "argsort" in experts.code
    for hint in (heads, experts):
        assert hint.rank == 0 and hint.confidence == "low"
        loop_ns = int(hint.numbers["loop_ns"])
        assert 0 < hint.gain_ns <= loop_ns * (rm.HEADS - 1) // rm.HEADS


def test_mask_routing_found_from_the_op_pattern_on_a_cpu_trace(loop: tuple[Analysis, int]) -> None:
    analysis, routed = loop
    [hint] = mask_routing.detect(analysis)
    assert hint.subject.startswith("LoopMoE: ")
    assert hint.numbers["calls"] == 1
    assert hint.numbers["syncs_per_call"] == SYNCS_PER_EXPERT * routed
    # A CPU trace: the title says what the code does on a GPU, not that a GPU stalled.
    assert hint.title.endswith("(CPU trace)")
    assert "stall" not in hint.title and "waiting" not in hint.title
    assert "argsort" in hint.code and "bincount" in hint.code
    assert hint.confidence == "low"
    assert MIN_GAIN_SHARE["data-dependent-routing/cpu"] == 0  # reported for the pattern


def test_hand_written_rms_norm_found_in_both_norms(loop: tuple[Analysis, int]) -> None:
    analysis, _ = loop
    [hint] = elementwise_chain.detect(analysis)
    assert hint.title.startswith("Hand-written RMSNorm in Block.norm1, Block.norm2 (HandRMSNorm)")
    assert hint.numbers["calls"] == 2  # norm1 and norm2, one call each
    # x.pow(2).mean(-1) + eps -> rsqrt, times x, times the weight: six ops as written.
    assert hint.numbers["ops"] == 6
    assert "F.rms_norm" in hint.code
    assert 0 < hint.gain_ns < int(hint.numbers["chain_ns"])


def test_the_loop_leaves_the_routing_syncs_to_their_own_finding(
    loop: tuple[Analysis, int],
) -> None:
    analysis, _ = loop
    experts = by_subject(python_loop.detect(analysis), "LoopMoE: ")
    [routing] = mask_routing.detect(analysis)
    # Every sync of the routing runs inside the loop: claimed once, by the routing finding.
    assert experts.numbers["claimed_by_other_findings_ns"] == routing.numbers["sync_ns"]
    loop_ns = int(experts.numbers["loop_ns"])
    claimed = int(routing.numbers["sync_ns"])
    assert experts.gain_ns == (loop_ns - claimed) * (rm.EXPERTS - 1) // rm.EXPERTS


def test_the_batched_block_gives_none_of_them(batched: Analysis) -> None:
    assert python_loop.detect(batched) == []
    assert mask_routing.detect(batched) == []
    assert elementwise_chain.detect(batched) == []


def test_findings_through_the_pipeline_say_their_method_and_owners(
    loop: tuple[Analysis, int],
) -> None:
    analysis, _ = loop
    hints = [h for h in run_detectors(analysis) if h.kind in KINDS]
    assert sorted(h.kind for h in hints) == sorted([*KINDS, "python-loop"])
    assert len({h.key for h in hints}) == len(hints)
    for hint in hints:
        method = hint.gain_method
        assert method[0].isupper() and method.endswith("."), method
        assert hint.confidence in CONFIDENCES and hint.confidence != "high"
        assert hint.severity
    # The report names each finding's modules from its evidence.
    report = build_report(analysis)
    owners = {(h.kind, h.modules[0]): h.modules for h in report.hints if h.kind in KINDS}
    assert owners[("python-loop", "Block.attn")] == ["Block.attn"]
    # The loop's own ops, not the expert calls it makes: the finding is the MoE's.
    assert owners[("python-loop", "Block.moe")] == ["Block.moe"]
    assert owners[("data-dependent-routing", "Block.moe")] == ["Block.moe"]
    [norms] = [m for (kind, _), m in owners.items() if kind == "unfused-elementwise"]
    assert sorted(norms) == ["Block.norm1", "Block.norm2"]  # largest first: either


def test_no_heavy_point_or_top_op_is_left_without_its_module(loop: tuple[Analysis, int]) -> None:
    # Issue 25's last point: every roofline point and top op above a tenth of the wall has
    # the module that owns its time.
    analysis, _ = loop
    report = build_report(analysis)
    [rank] = report.ranks
    heavy_ops = [t for t in rank.top_ops if t.total_ns > rank.wall_ns / 10]
    heavy_points = [p for p in report.roofline.points if p.time_ns > rank.wall_ns / 10]
    # The heaviest top op always: every op of the block's step runs inside one of its modules
    # or in their backward.
    for row in (rank.top_ops[0], *heavy_ops, *heavy_points):
        assert row.modules, row.name


def test_the_head_loop_leaves_unfused_attention_to_its_own_finding(
    tmp_path: Path,
) -> None:
    # Scores of MIN_ATTENTION_KEYS keys: each head's matmul -> softmax -> matmul is hand-written
    # attention, whose ops between the matmuls the attention-unfused finding claims.
    trace, _ = capture(tmp_path, batched=False, tokens=MIN_ATTENTION_KEYS)
    analysis = Analysis(trace, UNKNOWN)
    found = attention.occurrences(analysis, analysis.recorded_inputs)
    assert len(found) == rm.HEADS and not any(o.math for o in found)
    heads = by_subject(python_loop.detect(analysis), "LoopAttention: ")
    assert heads.numbers["iterations"] == rm.HEADS
    attention_ns = sum(o.removable_ns for o in found)
    assert attention_ns > 0
    assert heads.numbers["claimed_by_other_findings_ns"] == attention_ns
    loop_ns = int(heads.numbers["loop_ns"])
    assert heads.gain_ns == (loop_ns - attention_ns) * (rm.HEADS - 1) // rm.HEADS


def test_the_loop_leaves_far_from_roof_ops_to_the_roofline_findings(
    loop: tuple[Analysis, int],
) -> None:
    # Roofs so high that every op with a FLOP count is far below them: the memory- and
    # compute-bound findings claim nearly all of those ops' time, the loop's own ops included.
    analysis, _ = loop
    roofs = Hardware(name="far", source="user", peak_flops={"fp32": 1e18}, dram_bytes_per_s=1e18)
    far = Analysis(analysis.trace, roofs)
    unknown = by_subject(python_loop.detect(analysis), "LoopMoE: ")
    known = by_subject(python_loop.detect(far), "LoopMoE: ")
    assert known.numbers["loop_ns"] == unknown.numbers["loop_ns"]
    # The expert matmuls ran inside the loop: their far-from-roof gain is not claimed again.
    assert (
        known.numbers["claimed_by_other_findings_ns"]
        > unknown.numbers["claimed_by_other_findings_ns"]
    )
    loop_ns = int(known.numbers["loop_ns"])
    claimed = int(known.numbers["claimed_by_other_findings_ns"])
    assert known.gain_ns == max(loop_ns - claimed, 0) * (rm.EXPERTS - 1) // rm.EXPERTS
    # No time claimed twice overall: the findings' gains fit in the rank's wall.
    hints = run_detectors(far)
    assert sum(h.gain_ns for h in hints) <= far.wall_ns(0)
