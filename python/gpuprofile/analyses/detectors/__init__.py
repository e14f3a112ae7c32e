"""Detectors: one module each, each a pure function of an Analysis returning Hints; none
imports another. Each finding has a key (its kind and subject). The one pipeline that runs
them all, says each key once per rank, leaves out what two of them say twice, labels ranks and
folds a finding met on several ranks is here; what is worth reporting and how severe it is
comes from the one table in analyses/thresholds.py."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from gpuprofile.analyses import idle
from gpuprofile.analyses.claims import Claim, Ledger
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.fitting import capability_of, fits_device, fitted
from gpuprofile.analyses.hints import Hint, rank_prefix, ranked
from gpuprofile.analyses.one_off import one_off_ns
from gpuprofile.analyses.thresholds import ONE_OFF_SHARE, severity_for
from gpuprofile.importers.kineto import RANGE_PROFILER
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
    "trt_unfused",
    "trt_dla_fallback",
    "graph_breaks",
    "python_loop",
    "mask_routing",
    "elementwise_chain",
    "layout_conversion",
    "host_outside_gpu",
    "uncoalesced",
    "ddp_buffers",
)


def detector(name: str) -> Callable[[Analysis], list[Hint]]:
    module = importlib.import_module(f"gpuprofile.analyses.detectors.{name}")
    detect: Callable[[Analysis], list[Hint]] = module.detect
    return detect


def run_detectors(analysis: Analysis) -> list[Hint]:
    """Every detector's findings, each with the fixes that fit the workload and the device
    (analyses/fitting.py), through the one pipeline (``findings``)."""
    if range_profiled(analysis):
        return []  # the reader's note says why: no time in the trace is the program's
    workload = analysis.workload
    capability = None
    if workload.device == "cuda":  # ROCm's numbers are gfx versions, not CUDA's capabilities
        trace = analysis.trace
        capability = capability_of([d for r in trace.ranks for d in trace.devices(r)])
    # No optimizer step in the trace (a forward and backward benchmark, an inference, a
    # GPU-only trace): optimizer advice has nothing to act on.
    optimizer_absent = not workload.optimizers
    hints = [
        fitted(hint, workload, capability, optimizer_absent=optimizer_absent)
        for name in DETECTORS
        for hint in detector(name)(analysis)
        if fits_device(hint, workload)
    ]
    return findings(hints, analysis.trace.ranks, one_off_claims(analysis))


def range_profiled(analysis: Analysis) -> bool:
    """Whether CUPTI's range profiler recorded the trace (importers/kineto: its note)."""
    return any(facts.skipped.get(RANGE_PROFILER) for facts in analysis.trace.meta.ranks.values())


def one_off_claims(analysis: Analysis) -> dict[int, Claim]:
    """Per rank whose one-time work the report names first (ONE_OFF_SHARE of its wall or
    more), that work's time: it is the one-off notice's, so no finding gives it back again."""
    out: dict[int, Claim] = {}
    found = analysis.one_off_costs
    for rank in analysis.trace.ranks:
        mine = [o for o in found if o.rank == rank]
        wall = analysis.wall_ns(rank)
        if mine and wall > 0 and one_off_ns(found, rank) >= ONE_OFF_SHARE * wall:
            start = np.array([o.start_ns for o in mine], np.int64)
            out[rank] = Claim(start, start + np.array([o.dur_ns for o in mine], np.int64))
    return out


def findings(
    hints: list[Hint], ranks: list[int], one_off: dict[int, Claim] | None = None
) -> list[Hint]:
    """Detectors' hints as one ranked list: each with its severity, the idle hint that repeats
    a specific one left out, each key said once per rank, per-rank titles naming the rank in a
    multi-rank trace, and a finding met on several ranks of a job said once for the job.
    Severity, and whether a finding is worth reporting at all (which each detector asks of the
    time it measured its gain against), come from the table in analyses/thresholds.py.
    one_off: per rank, the one-time work the report names first (one_off_claims)."""
    host_bound = host_bound_ranks(hints)  # read before the idle hint may be folded away
    said_once = once_per_rank(without_repeats([judged(h) for h in hints]))
    shared = behind_the_host(shared_gains(said_once, one_off or {}), host_bound)
    return ranked(folded([_with_rank(h, ranks) for h in shared], ranks))


# Findings that make GPU work faster: on a rank whose GPU waits for the host to launch work
# most of its window, they shorten the GPU's busy time, not the wall.
GPU_WORK = frozenset(
    (
        "memory-bound",
        "compute-bound",
        "tensor-cores-unused",
        "attention-unfused",
        "low-occupancy",
        "layout-conversion",
        "uncoalesced-access",
        "unfused-elementwise",
    )
)
HOST_BOUND_IDLE_PCT = 50.0


def host_bound_ranks(hints: list[Hint]) -> dict[int | None, float]:
    """{rank: its GPU's idle percent} where the GPU is idle HOST_BOUND_IDLE_PCT of its window
    or more, mostly waiting for the host to launch work (the rank's GPU idle hint says)."""
    return {
        h.rank: float(h.numbers.get("idle_pct", 0))
        for h in hints
        if h.kind == "gpu-idle"
        and h.numbers.get("dominant_cause") == idle.HOST_LAUNCH_BOUND
        and float(h.numbers.get("idle_pct", 0)) >= HOST_BOUND_IDLE_PCT
    }


def behind_the_host(hints: list[Hint], host_bound: dict[int | None, float]) -> list[Hint]:
    """GPU-work findings on a host-bound rank (host_bound_ranks) say that their gain shortens
    the wall only once the GPU is kept busy (the idle and launch findings); their gains are
    left as measured."""
    return [
        replace(
            h,
            explanation=(
                f"{h.explanation} The GPU is idle {host_bound[h.rank]:.0f}% of its window, "
                "waiting for the host to launch work (the GPU idle or launch finding): this gain "
                "shortens the GPU's busy time, and the wall only once the host keeps the GPU "
                "busy."
            ),
        )
        if h.kind in GPU_WORK and h.rank in host_bound
        else h
        for h in hints
    ]


def judged(hint: Hint) -> Hint:
    """The hint with its severity: its gain's share of the time it is measured against."""
    return replace(hint, severity=severity_for(hint.gain_ns, hint.basis_ns))


def once_per_rank(hints: list[Hint]) -> list[Hint]:
    """One finding per key and rank: where two say the same thing about the same subject on
    one rank, the one that claims more gain is kept (its evidence is the larger), in the
    order the detectors gave them."""
    best: dict[tuple[tuple[str, str], int | None], Hint] = {}
    for hint in hints:
        at = (hint.key, hint.rank)
        if at not in best or hint.gain_ns > best[at].gain_ns:
            best[at] = hint
    kept = {id(h) for h in best.values()}
    return [h for h in hints if id(h) in kept]


def folded(hints: list[Hint], ranks: list[int]) -> list[Hint]:
    """Findings of one key on several distinct ranks become one job finding: the worst rank's,
    titled "on N of M ranks, worst rank R", its gain the worst rank's (ranks run side by side,
    so fixing it everywhere gives back about the worst one's time), the others' gains in its
    text. Findings of one kind about different subjects stay apart, on one rank or many."""
    by_key: dict[tuple[str, str], list[Hint]] = {}
    for hint in hints:
        if hint.rank is not None:
            by_key.setdefault(hint.key, []).append(hint)
    out = [h for h in hints if h.rank is None or len({g.rank for g in by_key[h.key]}) < 2]
    for key_hints in by_key.values():
        on_ranks = len({h.rank for h in key_hints})
        if on_ranks < 2:
            continue
        worst = max(key_hints, key=lambda h: h.gain_ns)
        prefix = rank_prefix(ranks, worst.rank) if worst.rank is not None else ""
        others = ", ".join(
            f"rank {h.rank}: {format_time(h.gain_ns)}"
            for h in sorted(key_hints, key=lambda h: -h.gain_ns)
        )
        out.append(
            replace(
                worst,
                title=(
                    f"{worst.title.removeprefix(prefix)} on {on_ranks} of {len(ranks)} "
                    f"ranks, worst rank {worst.rank}"
                ),
                explanation=f"Rank {worst.rank}: {worst.explanation} Per rank: {others}.",
                numbers={**worst.numbers, "ranks": on_ranks, "worst_rank": worst.rank or 0},
                rank=None,
            )
        )
    return out


def _with_rank(hint: Hint, ranks: list[int]) -> Hint:
    """In a multi-rank trace every per-rank title says which rank it is about: added here, for
    every detector, so none writes it itself."""
    prefix = rank_prefix(ranks, hint.rank) if hint.rank is not None else ""
    return replace(hint, title=prefix + hint.title) if prefix else hint


# Findings that sum what others explain, taken after them: the ops far below their roof (a
# fused attention or a fused chain is the fix for the part of them those findings name), and,
# last, the GPU idle whose causes have findings of their own.
GENERAL = {"memory-bound": 1, "compute-bound": 1, "gpu-idle": 2}


def shared_gains(hints: list[Hint], one_off: dict[int, Claim] | None = None) -> list[Hint]:
    """Each nanosecond of a rank's time given back once at most (analyses/claims.py).

    Per rank, findings about one cause or one pattern first (then the GENERAL ones: ops far
    below their roof, and last the GPU idle whose causes have findings of their own), then
    largest gain first, each takes what is left of its claim (claims.Ledger). A finding left
    with less says which finding holds the rest; one left with nothing is folded into the
    finding that holds most of its time, its text kept there. Findings without a claim (about
    the job, not a rank's time, or ones that leave other findings' time out themselves) are
    left as they are. one_off: per rank, one-time work the report names first: it is taken
    before any finding, and a finding that lies wholly in it is left out (the one-off notice
    says it)."""
    order = sorted(
        (i for i, h in enumerate(hints) if h.claim is not None),
        key=lambda i: (GENERAL.get(hints[i].kind, 0), -hints[i].gain_ns),
    )
    out: list[Hint | None] = list(hints)
    ledgers: dict[int | None, Ledger] = {}
    held: dict[int | None, list[tuple[int, Claim]]] = {}
    once_of = one_off or {}
    for rank, seeded in once_of.items():
        ledgers.setdefault(rank, Ledger()).take(seeded, seeded.length_ns)
    for i in order:
        hint = hints[i]
        claim = hint.claim
        assert claim is not None
        gain = ledgers.setdefault(hint.rank, Ledger()).take(claim, hint.gain_ns)
        before = held.setdefault(hint.rank, [])
        once = once_of.get(hint.rank) if hint.rank is not None else None
        if gain < hint.gain_ns and once is not None and claim.overlap_ns(once) > 0:
            if gain <= 0:
                out[i] = None  # one-time work, all of it: the one-off notice's
                continue
            out[i] = _reduced(
                hint,
                gain,
                "one-time work (the first notice names it), which no fix to the steady state "
                "gives back",
            )
            before.append((i, claim))
            continue
        overlaps = [(claim.overlap_ns(c), j) for j, c in before]
        if gain < hint.gain_ns and overlaps and max(overlaps)[0] > 0:
            holding = out[max(overlaps)[1]]
            assert holding is not None
            if gain <= 0:
                out[max(overlaps)[1]] = replace(
                    holding,
                    explanation=f'{holding.explanation} The finding "{hint.title}" claims '
                    f"the same time and is folded in here: {hint.explanation}",
                )
                out[i] = None
                continue
            out[i] = _reduced(hint, gain, f'time the finding "{holding.title}" already counts')
        before.append((i, claim))
    return [h for h in out if h is not None]


def _reduced(hint: Hint, gain: int, where: str) -> Hint:
    """The hint with the part of its gain that no one else holds, saying where the rest is."""
    return judged(
        replace(
            hint,
            gain_ns=gain,
            explanation=f"{hint.explanation} {format_time(hint.gain_ns - gain)} of its "
            f"estimated {format_time(hint.gain_ns)} lies in {where}; its gain is the rest.",
        )
    )


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
