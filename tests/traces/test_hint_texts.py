"""Every detector on shared Kineto traces (and a synthetic job): each hint names its gain's
method in sentences, has the confidence hints.py's rules give its evidence, and its texts hold
no Python reprs. Plus the kernel-evidence hints against figures read here with json/gzip.
"""

from __future__ import annotations

import re
from decimal import Decimal
from functools import cache
from typing import Any

import pytest

from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.detectors import run_detectors, tensor_cores
from gpuprofile.analyses.hints import Hint
from gpuprofile.hardware.model import Hardware
from gpuprofile.importers.kineto import load_kineto
from helpers.prerequisites import SHARED_TRACES, require_trace
from helpers.synthetic import synthetic_trace

pytestmark = pytest.mark.traces

KINETO = SHARED_TRACES / "kineto"
FIXTURES = (
    "tracelens_h100_bert_small_inference.json.gz",
    "tracelens_h100_owlv2_large_inference.json.gz",
    "tracelens_mi300x_vllm_cudagraph_decode_execution.json.gz",
    "hta_a100_alexnet_critical_path.pt.trace.json.gz",
    "hta_a100_cuda_event_sync_multi_stream.json.gz",
    "hta_a100_nccl_2rank_rank0.json.gz",
)
# Python reprs in text a user reads: tuples and lists of strings, dicts, None, object reprs.
# (None as a call's argument, "hook(None, ...)", is code, not a repr.)
REPR = re.compile(r"\('|',\)|\[\(|\['|\{'|': |\bNone\b(?![,)])|\bnan\b|<\w+(\.\w+)* object at")
# A gain_method that rests on a fixed share, unknown roofs or names alone: low confidence.
RULE_OF_THUMB = re.compile(r"\b(half|quarter|unknown|name alone|names alone)\b", re.IGNORECASE)
# Kinds whose gain can be measured time alone (hints.py: "high").
MEASURED_KINDS = {"gpu-idle", "sync-stall", "data-loading", "allocator-churn"}
A100 = Hardware(
    name="a100",
    source="user",
    peak_flops={"fp32": 19.5e12, "tf32": 156e12, "bf16": 312e12},
    dram_bytes_per_s=2e12,
)


@cache
def hints_of(name: str) -> tuple[Hint, ...]:
    return tuple(run_detectors(Analysis(load_kineto(require_trace(KINETO / name)))))


def synthetic_hints() -> tuple[Hint, ...]:
    return tuple(run_detectors(Analysis(synthetic_trace(3000, ranks=2, step=500), A100)))


def check_method_and_confidence(hint: Hint) -> None:
    method = hint.gain_method.strip()
    assert method and method[0].isupper() and method.endswith("."), (hint.kind, method)
    if RULE_OF_THUMB.search(method):
        assert hint.confidence == "low", (hint.kind, method)
    if hint.confidence == "high":
        assert hint.kind in MEASURED_KINDS, hint.kind


def check_texts(hint: Hint) -> None:
    for text in (hint.title, hint.explanation, *hint.fix):
        assert not REPR.search(text), (hint.kind, text)
    # Code may say None or True; never a tuple's or a dict's repr.
    assert not re.search(r"\('|',\)|\{'", hint.code), (hint.kind, hint.code)


@pytest.mark.parametrize("name", FIXTURES)
def test_every_hint_says_its_method_and_evidence(name: str) -> None:
    hints = hints_of(name)
    for hint in hints:
        check_method_and_confidence(hint)
        check_texts(hint)


def test_synthetic_job_hints_say_their_method_and_hold_no_reprs() -> None:
    hints = synthetic_hints()
    assert hints  # ampere_sgemm kernels on tensor-core hardware at least
    for hint in hints:
        check_method_and_confidence(hint)
        check_texts(hint)


def test_owlv2_attention_text_and_snippet() -> None:
    [hint] = [h for h in hints_of(FIXTURES[1]) if h.kind == "attention-unfused"]
    # OWLv2's vision attention adds no mask: the snippet passes none.
    assert "is_causal=True" not in hint.code
    assert re.search(r"the largest holds \d+x5185x5185 scores = [\d.]+ \w?B\)", hint.explanation)


def test_cuda_graph_replay_is_not_told_to_use_graphs() -> None:
    hints = hints_of("tracelens_mi300x_vllm_cudagraph_decode_execution.json.gz")
    assert not [h for h in hints if h.kind == "launch-overhead"]
    for hint in hints:
        assert "reduce-overhead" not in hint.code + " ".join(hint.fix)


# --- fp32 SIMT kernels by name on a V100 capture without shapes ----------------------------


def simt_fp32(name: str) -> bool:
    """fp32 GEMM/convolution on the vector units, by cuBLAS/cuDNN naming, written here anew."""
    lowered = name.lower()
    families = ("sgemm" in lowered, "scudnn" in lowered, "winograd" in lowered and "float" in name)
    tensor = ("884", "1688", "tensorop", "xmma", "hmma", "f16", "bf16", "__half")
    return any(families) and not any(t in lowered for t in tensor)


def test_fp32_simt_kernels_on_v100_by_name(traces: Any) -> None:
    path = require_trace(KINETO / "hta_v100_32gb_ns_resolution.pt.trace.json.gz")
    doc = traces.read_json(path)
    assert not any("Input Dims" in e.get("args", {}) for e in doc["traceEvents"])  # no shapes
    kernels = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]
    named = [e for e in kernels if simt_fp32(e["name"])]
    time_ns = sum(Decimal(str(e["dur"])) * 1000 for e in named)
    analysis = Analysis(load_kineto(path))
    peaks = analysis.hardware.peak_flops
    assert "fp16" in peaks and "tf32" not in peaks  # V100: fp16 tensor cores only
    [hint] = tensor_cores.detect(analysis)
    assert hint.numbers["kernels"] == len(named)
    assert hint.numbers["time_ns"] == pytest.approx(float(time_ns), abs=len(named))
    expected = float(time_ns) * (1 - peaks["fp32"] / peaks["fp16"])
    assert hint.gain_ns == pytest.approx(expected, abs=len(named) + 1)
    assert hint.numbers["tensor_core_precision"] == "fp16"
    assert hint.confidence == "low"
    assert "GradScaler" in hint.code


# A finding folded across ranks says on how many distinct ranks of how many it was met.
FOLDED = re.compile(r" on (\d+) of (\d+) ranks, worst rank \d+$")


@pytest.mark.parametrize("name", (*FIXTURES, "hta_v100_16gb_train_rank1_of2.json.gz"))
def test_each_finding_is_said_once_and_folds_count_distinct_ranks(name: str) -> None:
    # The V100 trace is one rank with two tensor-core findings (fp32 kernels by name, fp32
    # matmuls by shape): folded by kind alone they were one, "on 2 of 1 ranks".
    hints = hints_of(name)
    assert all(h.subject for h in hints), [h.kind for h in hints if not h.subject]
    assert len({(h.key, h.rank) for h in hints}) == len(hints), [h.title for h in hints]
    for hint in hints:
        folded = FOLDED.search(hint.title)
        if folded:
            assert 2 <= int(folded[1]) <= int(folded[2]), hint.title
