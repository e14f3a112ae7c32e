"""The one findings pipeline (analyses/detectors/__init__.py): every finding has a key, a key
is said once per rank, and only one key met on several distinct ranks is folded into a job
finding. Real CPU captures made here (hand-written attention, SDPA's math path) provoke two
findings of one kind by construction; hints built by hand pin the folding rules.
"""

from __future__ import annotations

import ast
import importlib
import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import gpuprofile
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.detectors import DETECTORS, findings, run_detectors
from gpuprofile.analyses.hints import Hint
from gpuprofile.hardware.model import UNKNOWN
from gpuprofile.importers.kineto import load_kineto

LENGTH = 256  # sequence length: at least thresholds.MIN_ATTENTION_KEYS, so both patterns count


def attention_capture(path: Path, *, math_calls: int, rank: int | None = None) -> Path:
    """A CPU torch.profiler capture of one hand-written attention (matmul -> softmax -> matmul)
    and ``math_calls`` SDPA calls pinned to the math path; with a rank, the trace says it is
    that rank of a two-rank job, as torch.distributed's traces do."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.profiler import ProfilerActivity, profile

    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, LENGTH, 32) for _ in range(3))
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        torch.softmax(scores, dim=-1) @ v
        with sdpa_kernel(SDPBackend.MATH):
            for _ in range(math_calls):
                F.scaled_dot_product_attention(q, k, v)
    prof.export_chrome_trace(str(path))
    if rank is not None:
        doc = json.loads(path.read_text())
        doc["distributedInfo"] = {"backend": "gloo", "rank": rank, "world_size": 2}
        path.write_text(json.dumps(doc))
    return path


def attention_hints(hints: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [h for h in hints if h["kind"] == "attention-unfused"]


def test_hand_written_attention_and_the_sdpa_math_path_are_two_findings(tmp_path: Path) -> None:
    # The bug of issue 24: folded by kind alone, these two became one finding titled
    # "SDPA math path at L=512 (x3) on 2 of 1 ranks, worst rank 0".
    path = attention_capture(tmp_path / "trace.json", math_calls=3)
    said = [h for h in run_detectors(Analysis(load_kineto(path), UNKNOWN))]
    attention = [h for h in said if h.kind == "attention-unfused"]
    assert len(attention) == 2, [h.title for h in said]
    assert len({h.key for h in attention}) == 2
    assert {h.title for h in attention} == {
        f"Unfused attention at L={LENGTH} (x1)",
        f"SDPA math path at L={LENGTH} (x3)",
    }
    assert all(h.rank == 0 for h in attention)
    # The report a user reads says the same.
    report = attention_hints(gpuprofile.load(path).report()["hints"])
    assert sorted(h["title"] for h in report) == sorted(h.title for h in attention)
    assert not any("ranks" in h["title"] for h in report)


def test_attention_that_a_fix_would_barely_shorten_is_no_finding(tmp_path: Path) -> None:
    # The same hand-written attention beside matmuls thousands of times its work: what fusing
    # removes (its scaling and softmax, ~10^5 elements) is far under a hundredth of the wall,
    # whatever the machine's speed, so the threshold table's entry keeps it out.
    import torch
    from torch.profiler import ProfilerActivity, profile

    from gpuprofile.analyses.thresholds import MIN_GAIN_SHARE

    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 1, LENGTH, 32) for _ in range(3))
    a = torch.randn(1024, 1024)

    def attention() -> torch.Tensor:
        return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1) @ v

    attention()  # warm: first calls pay one-time costs the fix would not remove
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        attention()
        for _ in range(10):
            a = a @ a / 1024
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    analysis = Analysis(load_kineto(path), UNKNOWN)
    # The pattern is there: the attention's own ops were recorded with their shapes.
    names = analysis.trace.ops["name"].astype(str)
    assert (names == "aten::softmax").sum() == 1
    said = [h for h in run_detectors(analysis) if h.kind == "attention-unfused"]
    assert said == [], [(h.title, h.gain_ns, analysis.wall_ns(0)) for h in said]
    assert MIN_GAIN_SHARE["attention-unfused"] > 0


def test_one_key_on_two_ranks_folds_and_another_of_its_kind_stays(tmp_path: Path) -> None:
    # Both ranks wrote attention by hand (one key on two ranks); only rank 0 also ran SDPA's
    # math path (another key of the same kind, on one rank).
    attention_capture(tmp_path / "rank0.json", math_calls=2, rank=0)
    attention_capture(tmp_path / "rank1.json", math_calls=0, rank=1)
    report = attention_hints(gpuprofile.load(tmp_path).report()["hints"])
    assert len(report) == 2, [h["title"] for h in report]
    [job] = [h for h in report if h["rank"] is None]
    assert job["title"].startswith(f"Unfused attention at L={LENGTH} (x1) on 2 of 2 ranks")
    assert job["title"].endswith(f"worst rank {job['numbers']['worst_rank']}")
    assert job["numbers"]["ranks"] == 2
    [math_path] = [h for h in report if h["rank"] == 0]
    assert math_path["title"] == f"Rank 0: SDPA math path at L={LENGTH} (x2)"


def hint(kind: str, subject: str, rank: int | None, gain: int, basis: int = 10_000) -> Hint:
    return Hint(
        kind=kind,
        subject=subject,
        title=f"{subject} finding",
        gain_ns=gain,
        basis_ns=basis,
        gain_method="Measured.",
        confidence="medium",
        explanation=f"{subject} on rank {rank}.",
        numbers={"gain_ns": gain},
        fix=("Fix it.",),
        rank=rank,
    )


def test_the_same_key_on_two_distinct_ranks_is_one_job_finding() -> None:
    said = findings(
        [
            hint("communication", "GPU collectives", 0, 300),
            hint("communication", "GPU collectives", 2, 500),
        ],
        [0, 1, 2],
    )
    [job] = said
    assert job.rank is None
    assert job.title == "GPU collectives finding on 2 of 3 ranks, worst rank 2"
    assert job.gain_ns == 500  # the worst rank's: ranks run side by side
    assert job.explanation.startswith("Rank 2: GPU collectives on rank 2.")
    assert job.numbers["ranks"] == 2 and job.numbers["worst_rank"] == 2
    assert job.severity == "medium"  # 500 of 10,000 ns: 5%, between 2% and 10%


@pytest.mark.parametrize(
    ("gain", "basis", "severity"),
    [(1000, 10_000, "high"), (999, 10_000, "medium"), (200, 10_000, "medium"),
     (199, 10_000, "low"), (5, 0, "low")],
)  # fmt: skip
def test_the_pipeline_sets_severity_from_the_gains_share(
    gain: int, basis: int, severity: str
) -> None:
    # Detectors leave severity unset; a tenth of the basis is high, a fiftieth medium.
    raw = hint("sync-stall", "synchronizing calls", 0, gain, basis)
    assert raw.severity == ""
    [said] = findings([raw], [0])
    assert said.severity == severity


def test_two_keys_of_one_kind_on_one_rank_stay_two() -> None:
    kernels = hint("tensor-cores-unused", "fp32 kernels by name", 1, 900)
    matmuls = hint("tensor-cores-unused", "fp32 matmuls", 1, 80)
    said = findings([kernels, matmuls], [1])
    assert [(h.title, h.rank, h.gain_ns) for h in said] == [
        ("fp32 kernels by name finding", 1, 900),
        ("fp32 matmuls finding", 1, 80),
    ]
    # On a job's rank the titles name the rank; still two, none folded.
    said = findings([kernels, matmuls], [0, 1])
    assert [(h.title, h.rank) for h in said] == [
        ("Rank 1: fp32 kernels by name finding", 1),
        ("Rank 1: fp32 matmuls finding", 1),
    ]


def test_one_key_on_one_rank_twice_is_said_once() -> None:
    smaller = hint("pageable-copy", "pageable copies", 0, 100)
    larger = hint("pageable-copy", "pageable copies", 0, 250)
    said = findings([smaller, larger], [0, 1])
    assert [(h.title, h.rank, h.gain_ns) for h in said] == [
        ("Rank 0: pageable copies finding", 0, 250)
    ]


@pytest.mark.parametrize("ranks", [[0], [0, 1, 2, 3]])
def test_a_finding_of_the_whole_run_is_neither_labelled_nor_folded(ranks: list[int]) -> None:
    job = hint("straggler", "rank 3", None, 700)
    assert findings([job], ranks) == [replace(job, severity="medium")]  # 7%


def test_the_subject_stays_out_of_the_report() -> None:
    # The report's JSON keeps its keys (tests/traces/test_reader_fingerprints.py).
    out = hint("sync-stall", "synchronizing calls", 0, 10).to_dict()
    assert "subject" not in out and "key" not in out and "basis_ns" not in out


@pytest.mark.parametrize("name", DETECTORS)
def test_every_finding_a_detector_makes_names_its_subject_and_basis(name: str) -> None:
    # Each Hint a detector builds says what it is about and what its gain is a share of, and
    # leaves severity to the pipeline.
    module = importlib.import_module(f"gpuprofile.analyses.detectors.{name}")
    tree = ast.parse(Path(str(module.__file__)).read_text())
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Hint"
    ]
    assert calls
    for call in calls:
        given = {k.arg for k in call.keywords}
        assert {"kind", "subject", "basis_ns"} <= given, (name, call.lineno)
        assert "severity" not in given, (name, call.lineno)


@pytest.mark.parametrize(("cause", "idle_pct", "said"), [
    ("host-launch-bound", 84.0, True),
    ("host-launch-bound", 30.0, False),  # the GPU is busy most of its window
    ("synchronization", 84.0, False),  # faster kernels shorten the waits of a sync
])  # fmt: skip
def test_gpu_work_findings_on_a_host_bound_rank_say_the_wall_waits_for_the_host(
    cause: str, idle_pct: float, said: bool
) -> None:
    idle = replace(
        hint("gpu-idle", "GPU idle time", 0, 100),
        numbers={"dominant_cause": cause, "idle_pct": idle_pct},
    )
    kernels = [hint("memory-bound", "ops far below their roof", 0, 50),
               hint("compute-bound", "ops far below their roof", 1, 50)]  # fmt: skip
    out = {(h.kind, h.rank): h for h in findings([idle, *kernels], [0, 1])}
    noted = f"idle {idle_pct:.0f}% of its window, waiting for the host to launch work"
    assert (noted in out[("memory-bound", 0)].explanation) is said
    assert "waiting for the host" not in out[("compute-bound", 1)].explanation  # another GPU
    assert out[("memory-bound", 0)].gain_ns == 50  # the gain stays as measured
