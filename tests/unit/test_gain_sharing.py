"""Gains that never double count (issue 26, point 5): the findings pipeline gives each
nanosecond of a rank's time back once. The hints here are built by hand with the time each
claims; the expected gains are worked out in the comments."""

from __future__ import annotations

import numpy as np

from gpuprofile.analyses.claims import Claim, Ledger
from gpuprofile.analyses.detectors import findings, shared_gains
from gpuprofile.analyses.hints import Hint


def _hint(kind: str, gain: int, blocks: list[tuple[int, int]] | None, rank: int = 0) -> Hint:
    claim = (
        None
        if blocks is None
        else Claim(np.array([a for a, _ in blocks]), np.array([b for _, b in blocks]))
    )
    return Hint(
        kind=kind,
        title=f"{kind} finding",
        gain_ns=gain,
        gain_method="By hand.",
        confidence="medium",
        explanation=f"The {kind} text.",
        numbers={},
        fix=(),
        rank=rank,
        subject=kind,
        basis_ns=1_000,
        claim=claim,
    )


def test_claim_arithmetic() -> None:
    a = Claim(np.array([0, 50, 200]), np.array([100, 150, 300]))  # [0, 150) and [200, 300)
    b = Claim(np.array([100]), np.array([250]))
    assert a.length_ns == 250
    assert a.overlap_ns(b) == 50 + 50  # [100, 150) and [200, 250)
    rest = a.minus(b)
    assert list(zip(rest.starts.tolist(), rest.ends.tolist())) == [(0, 100), (250, 300)]
    assert a.union(b).length_ns == 300


def test_ledger_shares_time() -> None:
    ledger = Ledger()
    first = Claim(np.array([0]), np.array([100]))
    assert ledger.take(first, 60) == 60  # 0.6 of each ns of [0, 100)
    # Another finding on [50, 150) at 0.8 a ns: 0.4 is left on [50, 100), all of [100, 150).
    assert ledger.take(Claim(np.array([50]), np.array([150])), 80) == 20 + 40
    # A third on [0, 100): nothing left on [50, 100), 0.4 on [0, 50).
    assert ledger.take(first, 100) == 20


def test_the_larger_keeps_its_time_and_the_smaller_says_who_holds_it() -> None:
    copies = _hint("pageable-copy", 84, [(0, 100)])
    churn = _hint("allocator-churn", 90, [(0, 100)])  # 0.9 of each ns: 0.1 left for copies
    out = {h.kind: h for h in shared_gains([copies, churn])}
    assert out["allocator-churn"].gain_ns == 90
    assert out["pageable-copy"].gain_ns == 10
    assert '"allocator-churn finding" already counts' in out["pageable-copy"].explanation


def test_a_named_pattern_comes_before_the_ops_far_below_their_roof() -> None:
    # Unfused attention names what fusing removes; memory-bound sums every slow op. The
    # attention finding keeps its softmax time though its gain is the smaller.
    attention = _hint("attention-unfused", 84, [(0, 100)])
    memory = _hint("memory-bound", 90, [(0, 100)])
    out = {h.kind: h for h in shared_gains([attention, memory])}
    assert out["attention-unfused"].gain_ns == 84
    assert out["memory-bound"].gain_ns == 16


def test_split_time_is_kept_by_both() -> None:
    chain = _hint("unfused-elementwise", 30, [(0, 100)])
    memory = _hint("memory-bound", 60, [(0, 100)])
    assert [h.gain_ns for h in shared_gains([chain, memory])] == [30, 60]


def test_a_finding_whose_time_is_all_taken_is_folded_in() -> None:
    sync = _hint("sync-stall", 100, [(0, 100)])
    launch = _hint("launch-overhead", 50, [(20, 70)])
    out = shared_gains([launch, sync])
    assert [h.kind for h in out] == ["sync-stall"]
    assert 'The finding "launch-overhead finding" claims the same time' in out[0].explanation
    assert "The launch-overhead text." in out[0].explanation


def test_general_idle_comes_after_its_causes() -> None:
    # GPU idle claims the sync gaps and more; its gain is larger, yet the sync finding keeps
    # its own time and the idle finding keeps what is left: 100 + 50 - 100.
    idle = _hint("gpu-idle", 150, [(0, 150)])
    sync = _hint("sync-stall", 100, [(0, 100)])
    out = {h.kind: h for h in shared_gains([idle, sync])}
    assert out["sync-stall"].gain_ns == 100
    assert out["gpu-idle"].gain_ns == 50


def test_ranks_and_unclaimed_findings_stand_apart() -> None:
    on_zero = _hint("sync-stall", 100, [(0, 100)], rank=0)
    on_one = _hint("sync-stall", 100, [(0, 100)], rank=1)
    job = _hint("straggler", 500, None)
    out = shared_gains([on_zero, on_one, job])
    assert [h.gain_ns for h in out] == [100, 100, 500]


def test_gains_sum_within_the_claims_through_the_whole_pipeline() -> None:
    hints = [
        _hint("memory-bound", 90, [(0, 100)]),
        _hint("attention-unfused", 84, [(0, 100)]),
        _hint("sync-stall", 40, [(100, 140)]),
        _hint("gpu-idle", 60, [(100, 160)]),
    ]
    out = findings(hints, [0])
    # [0, 100) gives back 100 at most, [100, 160) 60: 160 in all.
    assert sum(h.gain_ns for h in out) <= 160
    assert {h.kind: h.gain_ns for h in out} == {
        "memory-bound": 16,
        "attention-unfused": 84,
        "sync-stall": 40,
        "gpu-idle": 20,
    }
