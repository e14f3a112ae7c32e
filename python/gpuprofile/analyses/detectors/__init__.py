"""Detectors: one module each, each a pure function of an Analysis returning Hints; none
imports another. Running them all, and leaving out what two of them say twice, is done here."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import replace

from gpuprofile.analyses import idle
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.hints import Hint, rank_prefix, ranked
from gpuprofile.units import format_time

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
    "straggler",
    "pipeline_bubble",
    "load_imbalance",
    "trt_precision",
    "trt_reformat",
)


def detector(name: str) -> Callable[[Analysis], list[Hint]]:
    module = importlib.import_module(f"gpuprofile.analyses.detectors.{name}")
    detect: Callable[[Analysis], list[Hint]] = module.detect
    return detect


def run_detectors(analysis: Analysis) -> list[Hint]:
    """Every detector's hints, ranked by gain, each said once, per-rank titles naming the rank
    in a multi-rank trace, and a hint met on several ranks of a job said once for the job."""
    ranks = analysis.trace.ranks
    hints = [hint for name in DETECTORS for hint in detector(name)(analysis)]
    return ranked(folded([_with_rank(h, ranks) for h in without_repeats(hints)], ranks))


def folded(hints: list[Hint], ranks: list[int]) -> list[Hint]:
    """Hints of one kind on several ranks become one job hint: the worst rank's, titled "on
    N of M ranks, worst rank R", its gain the worst rank's (ranks run side by side, so fixing
    it everywhere gives back about the worst one's time), the others' gains in its text."""
    by_kind: dict[str, list[Hint]] = {}
    for hint in hints:
        if hint.rank is not None:
            by_kind.setdefault(hint.kind, []).append(hint)
    out = [h for h in hints if h.rank is None or len(by_kind[h.kind]) < 2]
    for kind_hints in by_kind.values():
        if len(kind_hints) < 2:
            continue
        worst = max(kind_hints, key=lambda h: h.gain_ns)
        prefix = rank_prefix(ranks, worst.rank) if worst.rank is not None else ""
        others = ", ".join(
            f"rank {h.rank}: {format_time(h.gain_ns)}"
            for h in sorted(kind_hints, key=lambda h: -h.gain_ns)
        )
        out.append(
            replace(
                worst,
                title=(
                    f"{worst.title.removeprefix(prefix)} on {len(kind_hints)} of {len(ranks)} "
                    f"ranks, worst rank {worst.rank}"
                ),
                explanation=f"Rank {worst.rank}: {worst.explanation} Per rank: {others}.",
                numbers={**worst.numbers, "ranks": len(kind_hints), "worst_rank": worst.rank or 0},
                rank=None,
            )
        )
    return out


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
