"""Detectors: one module each, each a pure function of an Analysis returning Hints; none
imports another. Running them all, and leaving out what two of them say twice, is done here."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import replace

from gpuprofile.analyses import idle
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.hints import Hint, rank_prefix, ranked

# Module names under gpuprofile.analyses.detectors, each defining detect(analysis) -> list[Hint].
DETECTORS = (
    "gpu_idle",
    "launch_overhead",
    "roofline_bound",
    "tensor_cores",
    "attention",
    "sync_stall",
    "allocator_churn",
    "pageable_copy",
    "data_loading",
    "low_occupancy",
    "communication",
)


def detector(name: str) -> Callable[[Analysis], list[Hint]]:
    module = importlib.import_module(f"gpuprofile.analyses.detectors.{name}")
    detect: Callable[[Analysis], list[Hint]] = module.detect
    return detect


def run_detectors(analysis: Analysis) -> list[Hint]:
    """Every detector's hints, ranked by gain, each said once, per-rank titles naming the rank
    in a multi-rank trace."""
    ranks = analysis.trace.ranks
    hints = [hint for name in DETECTORS for hint in detector(name)(analysis)]
    return ranked(_with_rank(hint, ranks) for hint in without_repeats(hints))


def _with_rank(hint: Hint, ranks: list[int]) -> Hint:
    """In a multi-rank trace every per-rank title says which rank it is about: added here, for
    every detector, so none writes it itself."""
    prefix = rank_prefix(ranks, hint.rank) if hint.rank is not None else ""
    return replace(hint, title=prefix + hint.title) if prefix else hint


# The detector whose hint is about one cause of idle time, with its own evidence and fix.
SPECIFIC_KIND = {
    idle.SYNCHRONIZATION: "sync-stall",
    idle.DATA_LOADING: "data-loading",
    idle.HOST_DEVICE_COPY: "pageable-copy",
    idle.HOST_LAUNCH_BOUND: "launch-overhead",
    idle.COLLECTIVE_WAIT: "communication",
}
# The idle hint repeats a specific one when its dominant cause holds this share of its gain.
REPEATS_FROM = 0.5


def without_repeats(hints: list[Hint]) -> list[Hint]:
    """A rank's idle hint whose dominant cause has its own hint there (the DataLoader's, the
    sync stalls') and holds most of the idle gain says the same thing twice, ranked twice: it
    is left out, and its breakdown of the idle time by cause goes into that hint's text."""
    # Per (rank, kind) the specific hint with the most gain (communication has two: the GPU
    # collectives' and the CPU ones').
    specific: dict[tuple[int | None, str], int] = {}
    for i, h in enumerate(hints):
        key = (h.rank, h.kind)
        if key not in specific or h.gain_ns > hints[specific[key]].gain_ns:
            specific[key] = i
    out = list(hints)
    repeated = set()
    for i, hint in enumerate(hints):
        if hint.kind != "gpu-idle":
            continue
        cause = str(hint.numbers.get("dominant_cause"))
        at = specific.get((hint.rank, SPECIFIC_KIND.get(cause, "")))
        if at is None or int(hint.numbers.get(f"{cause}_ns", 0)) < REPEATS_FROM * hint.gain_ns:
            continue
        repeated.add(i)
        out[at] = replace(out[at], explanation=f"{out[at].explanation} {hint.explanation}")
    return [h for i, h in enumerate(out) if i not in repeated]
