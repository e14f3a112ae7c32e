"""Detectors: one module each, each a pure function of an Analysis returning Hints."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from gpuprofile.analyses.hints import Hint, rank_prefix, ranked

if TYPE_CHECKING:
    from gpuprofile.analyses.context import Analysis

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
    from gpuprofile.analyses.detectors.gpu_idle import without_repeats

    ranks = analysis.trace.ranks
    hints = [hint for name in DETECTORS for hint in detector(name)(analysis)]
    return ranked(_with_rank(hint, ranks) for hint in without_repeats(hints))


def _with_rank(hint: Hint, ranks: list[int]) -> Hint:
    """In a multi-rank trace every per-rank title says which rank it is about: added here, for
    every detector, so none writes it itself."""
    prefix = rank_prefix(ranks, hint.rank) if hint.rank is not None else ""
    return replace(hint, title=prefix + hint.title) if prefix else hint
