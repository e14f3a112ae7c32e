"""The hand-written-code hints on GPU traces: Kineto documents built here (times in us, so a
document time t is t * 1000 ns), where the test draws every op, launch, sync and kernel, and on
torch's own module events (a ``with_stack`` CPU capture)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from gpuprofile.analyses import idle
from gpuprofile.analyses.code_patterns import Occurrence, code_patterns
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.detectors import elementwise_chain, mask_routing, python_loop
from gpuprofile.analyses.frames import SourceLine, Sources
from gpuprofile.analyses.thresholds import ACHIEVABLE_ROOF_SHARE
from gpuprofile.hardware.model import UNKNOWN, Hardware
from gpuprofile.importers.kineto import load_kineto
from helpers.kineto_docs import cpu_op, document, kernel, runtime, write

US = 1000
EXPERTS = 4
ITERATION = 100  # us per expert's iteration
# Per iteration, the outermost ops that read the mask on the host: (name, start, dur) from the
# iteration's start: `if mask.any()` (is_nonzero), x[mask] and out[mask] = ... (a nonzero each).
SYNC_LEAVES = (("aten::is_nonzero", 13, 20), ("aten::nonzero", 41, 15), ("aten::nonzero", 66, 15))
CHAIN = (("aten::pow", 10), ("aten::mean", 20), ("aten::add", 30), ("aten::rsqrt", 40))
CHAIN += (("aten::mul", 50),)


def annotation(name: str, ts: float, dur: float) -> dict[str, Any]:
    return {**cpu_op(name, ts, dur), "cat": "user_annotation"}


def launched(name: str, ts: float, dur: float, corr: int, kernel_us: float) -> list[dict]:
    """An op that launches one kernel, which runs right after its launch."""
    return [
        cpu_op(name, ts, dur),
        runtime("cudaLaunchKernel", ts + 1, 2, corr=corr),
        kernel(f"{name}_kernel", ts + 3, kernel_us, corr=corr),
    ]


def moe_events() -> list[dict]:
    events = [annotation("nn.Module: Net.moe (MoE)", 0, EXPERTS * ITERATION)]
    corr = 1
    for e in range(EXPERTS):
        b = e * ITERATION + 1
        events += launched("aten::eq", b, 5, corr, 2)
        events += launched("aten::any", b + 6, 5, corr + 1, 2)
        corr += 2
        events += [
            cpu_op("aten::is_nonzero", b + 13, 20),
            cpu_op("aten::item", b + 14, 18),
            cpu_op("aten::_local_scalar_dense", b + 15, 16),
            runtime("cudaStreamSynchronize", b + 16, 14, corr=0),
            cpu_op("aten::index", b + 40, 20),
            cpu_op("aten::nonzero", b + 41, 15),
            runtime("cudaStreamSynchronize", b + 42, 12, corr=0),
            cpu_op("aten::index_put_", b + 65, 20),
            cpu_op("aten::nonzero", b + 66, 15),
            runtime("cudaStreamSynchronize", b + 67, 12, corr=0),
        ]
    return events


def analyse(tmp_path: Path, events: list[dict]) -> Analysis:
    return Analysis(load_kineto(write(tmp_path / "trace.json", document(events))), UNKNOWN)


def test_routing_on_a_gpu_rank_counts_the_host_wait_less_the_sync_stalls(tmp_path: Path) -> None:
    analysis = analyse(tmp_path, moe_events())
    [hint] = mask_routing.detect(analysis)
    assert hint.numbers["syncs_per_call"] == EXPERTS * len(SYNC_LEAVES)
    sync_ns = EXPERTS * sum(dur for _, _, dur in SYNC_LEAVES) * US
    assert hint.numbers["sync_ns"] == sync_ns
    assert (
        hint.title
        == f"Mask routing in Net.moe (MoE): {EXPERTS * len(SYNC_LEAVES)} host syncs per call"
    )
    # The GPU idle of cause synchronization inside the sync ops is the sync-stall finding's.
    gaps = analysis.idle_gaps
    gaps = gaps[gaps["cause"] == idle.SYNCHRONIZATION]
    stall = 0
    for e in range(EXPERTS):
        for _, start, dur in SYNC_LEAVES:
            lo, hi = (e * ITERATION + 1 + start) * US, (e * ITERATION + 1 + start + dur) * US
            overlap = np.minimum(gaps["end_ns"], hi) - np.maximum(gaps["start_ns"], lo)
            stall += int(overlap.clip(lower=0).sum())
    assert stall > 0  # the document's syncs leave the GPU idle
    assert hint.numbers["claimed_by_sync_stall_ns"] == stall
    assert hint.gain_ns == sync_ns - stall


def test_the_loop_on_a_gpu_rank_leaves_routing_and_launch_gaps_out(tmp_path: Path) -> None:
    analysis = analyse(tmp_path, moe_events())
    [hint] = python_loop.detect(analysis)
    assert hint.numbers["iterations"] == EXPERTS
    assert hint.numbers["ops_per_iteration"] == 5  # eq, any, is_nonzero, index, index_put_
    # From the first eq to the last index_put_'s end; no backward in this document.
    span = ((EXPERTS - 1) * ITERATION + 1 + 65 + 20 - 1) * US
    assert hint.numbers["loop_ns"] == span
    sync_ns = EXPERTS * sum(dur for _, _, dur in SYNC_LEAVES) * US
    gaps = analysis.idle_gaps
    gaps = gaps[gaps["cause"] == idle.HOST_LAUNCH_BOUND]
    launch = int(
        (np.minimum(gaps["end_ns"], US + span) - np.maximum(gaps["start_ns"], US))
        .clip(lower=0)
        .sum()
    )
    assert launch > 0  # the document's launches leave the GPU idle between eq and any
    assert hint.numbers["claimed_by_other_findings_ns"] == sync_ns + launch
    assert hint.gain_ns == (span - sync_ns - launch) * (EXPERTS - 1) // EXPERTS


def test_a_chain_on_a_gpu_rank_is_timed_by_its_kernels(tmp_path: Path) -> None:
    events = [annotation("nn.Module: Net.norm (Norm)", 0, 200)]
    for i, (name, kernel_us) in enumerate(CHAIN):
        events += launched(name, 1 + 30 * i, 8, 100 + i, kernel_us)
    [hint] = elementwise_chain.detect(analyse(tmp_path, events))
    assert hint.title == f"Hand-written RMSNorm in Net.norm (Norm): {len(CHAIN)} ops (x1)"
    kernel_us = [k for _, k in CHAIN]
    assert hint.numbers["chain_ns"] == sum(kernel_us) * US
    # One fused kernel is taken to cost the costliest one: the rest is the gain.
    assert hint.gain_ns == (sum(kernel_us) - max(kernel_us)) * US
    assert "GPU kernel time" in hint.gain_method
    assert hint.confidence == "medium"


def test_torch_module_events_name_the_loops_too(tmp_path: Path) -> None:
    # torch's own nn.Module events (with_stack), no ranges of the test's: paths are chains of
    # Class_N links, and the per-expert calls read alike by their class.
    import torch

    from helpers import researcher_model as rm

    block, x = rm.make()
    optimizer = torch.optim.SGD(block.parameters(), lr=0.01)
    rm.training_step(block, x, optimizer)
    activities = [torch.profiler.ProfilerActivity.CPU]
    with torch.profiler.profile(activities=activities, with_stack=True) as prof:
        rm.training_step(block, x, optimizer)
    prof.export_chrome_trace(str(tmp_path / "stack.json"))
    analysis = Analysis(load_kineto(tmp_path / "stack.json"), UNKNOWN)
    loops = {h.subject.split(":")[0]: h for h in python_loop.detect(analysis)}
    assert sorted(loops) == ["LoopAttention", "LoopMoE"]
    assert "Block_0.LoopAttention_0 (LoopAttention)" in loops["LoopAttention"].title
    assert loops["LoopAttention"].numbers["iterations"] == rm.HEADS
    assert loops["LoopMoE"].numbers["iterations"] == rm.routed_experts(block, x)
    [norm] = elementwise_chain.detect(analysis)
    assert norm.numbers["calls"] == 2


def test_a_chain_counts_each_op_up_to_its_roof_time(tmp_path: Path) -> None:
    # With known roofs, the memory-bound finding claims an op's time beyond its bytes at the
    # achievable share of DRAM bandwidth; the chain claims at most that much of each op.
    n = 1 << 20
    shapes = {"Input Dims": [[n], [n]], "Input type": ["float", "float"]}
    events = [annotation("nn.Module: Net.norm (Norm)", 0, 200)]
    for i, (name, kernel_us) in enumerate(CHAIN):
        op, launch, run = launched(name, 1 + 30 * i, 8, 100 + i, kernel_us)
        events += [{**op, "args": {**op["args"], **shapes}}, launch, run]
    hardware = Hardware(
        name="test", source="user", peak_flops={"fp32": 1e15}, dram_bytes_per_s=1e12
    )
    trace = load_kineto(write(tmp_path / "trace.json", document(events)))
    analysis = Analysis(trace, hardware)
    [hint] = elementwise_chain.detect(analysis)
    costs = analysis.op_costs
    ops = trace.ops
    kept = []
    for name, kernel_us in CHAIN:
        op_id = int(ops["id"][ops["name"] == name].iloc[0])
        roof_ns = (
            costs.loc[op_id, "bytes"] / (hardware.dram_bytes_per_s * ACHIEVABLE_ROOF_SHARE) * 1e9
        )
        kept.append(min(kernel_us * US, roof_ns))
    assert min(kept) < max(kernel_us for _, kernel_us in CHAIN) * US  # the roof bites
    assert hint.gain_ns == int(sum(kept) - max(kept))
    assert hint.numbers["chain_ns"] == sum(k for _, k in CHAIN) * US  # measured, uncapped


def test_degenerate_calls_give_findings_or_nothing_never_an_error(tmp_path: Path) -> None:
    # A call with no path or class, ops of no duration, a call with nothing inside, a call
    # nested in an op, and autograd numbers no torch writes.
    events = [annotation("nn.Module: ", 0, 100), annotation("nn.Module: empty ()", 0, 0)]
    events += [cpu_op("aten::add", 1 + i, 0, **{"Sequence number": 2**62}) for i in range(8)]
    events += [cpu_op("aten::nonzero", 10 + i, 0) for i in range(4)]
    events += [cpu_op("aten::linear", 20, 30), annotation("nn.Module: inner (X)", 21, 10)]
    events += [cpu_op(f"aten::{op}", 22 + i, 1) for i, op in enumerate(("pow", "mean", "rsqrt"))]
    analysis = analyse(tmp_path, events)
    loops = {h.subject: h for h in python_loop.detect(analysis)}
    # Eight adds of no duration each, from 1 us to 8 us: a 7 us span, 7/8 of it given back.
    adds = loops["?: aten::add"]
    assert adds.numbers["iterations"] == 8 and adds.gain_ns == 7 * US * 7 // 8
    assert adds.title == "Python loop of 8 iterations in ? (1 call)"
    assert elementwise_chain.detect(analysis) == []  # three ops: no chain
    [routing] = mask_routing.detect(analysis)  # four nonzeros: reported for the pattern
    assert routing.numbers["syncs_per_call"] == 4
    assert routing.title.startswith("Mask routing in ?: 4 ops per call")


def test_with_stacks_a_loop_runs_the_same_lines(tmp_path: Path) -> None:
    # Four sigmoids in a row: a loop when one line ran them all, four lines written out one
    # after another when each has its own. The lines are the test's, given as Sources.
    events = [annotation("nn.Module: Net.gates (Gates)", 0, 100)]
    events += [cpu_op("aten::sigmoid", 1 + 20 * i, 10) for i in range(4)]
    analysis = analyse(tmp_path, events)
    rows = np.flatnonzero((analysis.trace.ops["name"] == "aten::sigmoid").to_numpy())
    lines = (
        SourceLine("model.py", 10, "forward"),
        *(SourceLine("model.py", 20 + i, "f") for i in range(4)),
    )

    def loops(line_of_each: list[int]) -> tuple[Occurrence, ...]:
        source = np.full(len(analysis.trace.ops), -1, np.int32)
        source[rows] = line_of_each
        sources = Sources(lines, source, np.zeros(0, np.int32))
        return code_patterns(analysis, analysis.modules, sources).loops

    [loop] = loops([0, 0, 0, 0])
    assert loop.repeats == 4 and loop.line == lines[0]
    assert loops([1, 2, 3, 4]) == ()
