"""What a reader must know before trusting a report's numbers, one line each, shown first by
every view: the code raised, only some steps were recorded, recorded windows were dropped,
part of the capture failed, the trace holds GPU work launched before it began."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from gpuprofile.analyses.carry_over import CarryOver
from gpuprofile.analyses.compiled import CompiledCode
from gpuprofile.analyses.memory_failure import is_out_of_memory
from gpuprofile.analyses.one_off import OneOff, one_off_ns
from gpuprofile.analyses.thresholds import ONE_OFF_SHARE
from gpuprofile.importers.kineto import PROFILER_MARKERS
from gpuprofile.trace.meta import Dropped, TraceMeta, world_size
from gpuprofile.units import format_count, format_fraction, format_time

# Windows named one by one in the steps notice before the rest are summed up.
NAMED_WINDOWS = 6
# Likewise the missing ranks of a job.
NAMED_RANKS = 8
# Kinds of events not read, one line each, before the rest are summed up in one.
NAMED_KINDS = 8


def notices(meta: TraceMeta) -> list[dict[str, str]]:
    """[{"kind": "partial" | "out-of-memory" | "steps" | "dropped" | "incomplete" | "ranks"
    | "note" | "rejected" | "duplicates" | "unknown" | "skipped", "text"}], in that order
    ("out-of-memory": the code ran out of memory without --memory, which would say more);
    "note": what reading the trace had to decide (``meta.notes``: ranks taken from file order,
    launches an Nsight Compute replay laid end to end); then what reading could not use, summed
    over the ranks, one line per reason: events rejected for a value they need, duplicate
    events, values read as unknown, and events of kinds gpuprofile does not read (the
    profiler's own markers apart)."""
    out = []
    if meta.partial:
        out.append(
            {
                "kind": "partial",
                "text": "the profiled code raised before it finished; this covers only what ran.",
            }
        )
    recorded = meta.source.format == "memory-snapshot" or any(
        facts.profile_memory for facts in meta.ranks.values()
    )
    if is_out_of_memory(meta.failure) and not recorded:
        # With --memory the post-mortem says what was live; without, this says how to get it.
        out.append({
            "kind": "out-of-memory",
            "text": f"the code ran out of memory ({meta.failure}); profile it with --memory "
            "(profile_memory=True) to see what was live and which fix frees the most.",
        })  # fmt: skip
    if (steps := _steps_text(meta)) is not None:
        out.append({"kind": "steps", "text": steps})
    if meta.dropped is not None:
        out.append({"kind": "dropped", "text": _dropped_text(meta.dropped)})
    out.extend({"kind": "incomplete", "text": e} for e in meta.errors)
    if (missing := _missing_ranks_text(meta)) is not None:
        out.append({"kind": "ranks", "text": missing})
    out.extend({"kind": "note", "text": note} for note in meta.notes)
    out.extend(_unread_notices(meta))
    return out


def _unread_notices(meta: TraceMeta) -> list[dict[str, str]]:
    """What reading the trace could not use (``RankMeta`` rejected, duplicates, unknown,
    skipped), summed over the ranks, one line per reason with its count."""
    rejected: Counter[str] = Counter()
    unknown: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    duplicates = 0
    for facts in meta.ranks.values():
        rejected.update(facts.rejected)
        unknown.update(facts.unknown)
        skipped.update({k: n for k, n in facts.skipped.items() if k not in PROFILER_MARKERS})
        duplicates += facts.duplicates
    out = [
        {"kind": "rejected", "text": f"{reason}: {format_count(n)} not read."}
        for reason, n in rejected.items()
    ]
    if duplicates:
        out.append(
            {
                "kind": "duplicates",
                "text": f"{format_count(duplicates, 'duplicate event')} ignored (each equal in "
                "every field read to an earlier event): counted once.",
            }
        )
    out += [
        {"kind": "unknown", "text": f"{format_count(n, 'value')} read as unknown: {reason}."}
        for reason, n in unknown.items()
    ]
    if skipped:
        # One reason (gpuprofile does not use these kinds): one line, each kind with its count.
        kinds = skipped.most_common()
        named = ", ".join(f"{format_count(n)} {kind}" for kind, n in kinds[:NAMED_KINDS])
        if len(kinds) > NAMED_KINDS:
            rest = sum(n for _, n in kinds[NAMED_KINDS:])
            others = format_count(len(kinds) - NAMED_KINDS, "other kind")
            named += f" and {format_count(rest)} of {others}"
        total = format_count(sum(skipped.values()), "event")
        out.append(
            {"kind": "skipped", "text": f"{total} of kinds gpuprofile does not read: {named}."}
        )
    return out


def carry_over_notices(found: Sequence[CarryOver], ranks: int) -> list[dict[str, str]]:
    """[{"kind": "carry-over", "text"}] when the trace holds GPU work launched before recording
    began (analyses/carry_over.py), else [].

    Parameters:
        found: ``carry_over(trace)``.
        ranks: the trace's number of ranks (the ranks concerned are named when above one).
    """
    if not found:
        return []
    events = sum(c.events for c in found)
    busy = sum(c.busy_ns for c in found)
    where = ""
    if ranks > 1:
        named = ", ".join(str(c.rank) for c in found[:NAMED_RANKS])
        if len(found) > NAMED_RANKS:
            named += f" and {len(found) - NAMED_RANKS} more"
        where = f" on {format_count(len(found), 'rank')} of {ranks} ({named})"
    text = (
        f"{format_count(events, 'GPU event')} ({format_time(busy)} of GPU busy time){where} "
        "were launched before recording began: the trace holds them but not their launches "
        "(the warm-up's backlog, still running when the profiler started). The whole-window GPU "
        "figures (window, busy, idle, top kernels) include them, yet no op or launch in the "
        "trace accounts for them; the per-step GPU spans, where the trace marks steps on the GPU, "
        "count only the work within each step."
    )
    return [{"kind": "carry-over", "text": text}]


def _missing_ranks_text(meta: TraceMeta) -> str | None:
    """A job whose traces declare more ranks than it holds: the job view covers those held."""
    world = world_size(meta)
    present = sorted(meta.ranks)
    if world is None or len(present) >= world:
        return None
    missing = [r for r in range(world) if r not in meta.ranks]
    named = ", ".join(map(str, missing[:NAMED_RANKS]))
    if len(missing) > NAMED_RANKS:
        named += f" and {len(missing) - NAMED_RANKS} more"
    return (
        f"{format_count(len(missing), 'rank')} of {world} missing ({named}): stragglers, waits "
        f"and bubbles cover the {format_count(len(present), 'rank')} present."
    )


def _dropped_text(dropped: Dropped) -> str:
    events = "" if dropped.events is None else f"{dropped.events} events in "
    return (
        f"{events}{dropped.windows} recorded windows dropped, unread, once the windows kept "
        f"held more than --max-events {dropped.max_events} events; this covers only the "
        "windows kept before."
    )


def _steps_text(meta: TraceMeta) -> str | None:
    """Which steps a --steps capture recorded, numbered from 0 as torch's ProfilerStep#N."""
    steps = meta.steps
    schedule = steps.schedule if steps is not None else None
    if steps is None or schedule is None:
        return None
    count = steps.count
    if count == 0:
        return (
            "no step was marked, so no window was recorded: call gpuprofile.step() once per "
            "step, or step an optimizer (each optimizer.step() marks one)."
        )
    before = schedule.wait + schedule.warmup
    cycle = before + schedule.active
    ranges: list[tuple[int, int]] = []
    tail = False
    for window in meta.windows:
        if window.step is None:
            continue
        last = window.step - 1  # the step count when the window was handed over
        first = (last // cycle) * cycle + before if last >= 0 else 0
        if first <= last:
            ranges.append((first, last))
        else:
            tail = True  # the profiler stopped before a window's first step: the cell's end
    recorded = sum(last - first + 1 for first, last in ranges)
    named = ", ".join(f"#{a}" if a == b else f"#{a}-{b}" for a, b in ranges[:NAMED_WINDOWS])
    if len(ranges) > NAMED_WINDOWS:
        named += f" and {len(ranges) - NAMED_WINDOWS} more"
    windows = format_count(len(ranges), "window")
    where = f" in {windows} ({named}; numbered from 0, as ProfilerStep#N)" if ranges else ""
    text = f"recorded {recorded} of {count} steps{where}"
    if not ranges and count <= before:
        wait, warmup = schedule.wait, schedule.warmup
        text += f": a window starts after {before} steps (wait {wait}, warmup {warmup})"
    if tail:
        text += ", and the cell's end after its last step"
    return text + "; wall and GPU times cover what was recorded, not the time between windows."


def compile_notices(compiled: CompiledCode, ranks: list[int]) -> list[dict[str, str]]:
    """[{"kind": "compile", "text"}] per rank that ran torch.compile'd code or compiled: how
    long compiling took against how long the compiled graphs ran. A notice, not a hint: the
    compile time is paid once per shape and process, and a capture that holds it (the first
    call) measures the warm-up, not the run; the reader must know it before trusting any share
    of the wall time, and no fix in the program gives it back (a cache does: said here)."""
    if not compiled.present:
        return []
    out = []
    for rank in ranks:
        compiling = compiled.compile_ns.get(rank, 0)
        regions = compiled.regions[compiled.regions["rank"] == rank]
        if not compiling and not len(regions):
            continue
        where = f"rank {rank}: " if len(ranks) > 1 else ""
        counts = ""
        if compiled.meta is not None:
            counts = (
                f" ({format_count(compiled.meta.frames, 'frame')}, "
                f"{format_count(compiled.meta.graphs, 'graph')})"
            )
        run_ns = compiled.run_ns(rank)
        # Host time: calling the graphs, which on a GPU launches their kernels; what those ran
        # on the GPU is said apart, so one figure is not read as the other.
        kernels = compiled.kernels
        mine = kernels[
            (kernels["rank"] == rank) & (kernels["table"] == "kernels") & (kernels["region"] >= 0)
        ]
        gpu_ns = int(mine["dur_ns"].sum())
        ran = (
            f"the compiled graphs' calls took {format_time(run_ns)} on the host in "
            f"{format_count(len(regions), 'compiled region call')}"
            + (f", and their kernels {format_time(gpu_ns)} on the GPU" if gpu_ns else "")
        )
        if not run_ns and len(regions):
            # No graph-call ranges in this trace (older torch): the regions' own span.
            outer = regions[regions["outer"] < 0]
            span = int((outer["end_ns"] - outer["start_ns"]).sum())
            ran = (
                f"{format_count(len(regions), 'compiled region call')} took "
                f"{format_time(span)} (the trace has no graph-call ranges inside them)"
            )
        text = (
            f"{where}torch.compile: compiling took {format_time(compiling)}{counts}; {ran}."
            if compiling
            else f"{where}torch.compile: {ran}; no compiling in this trace (done before it)."
        )
        again = sorted({str(g) for g in regions["graph"] if not str(g).endswith("/0")})
        if again:
            named = ", ".join(again[:NAMED_WINDOWS])
            text += (
                f" Compiled again after a guard failed (a new shape, dtype or Python value): "
                f"{named}; mark the dimensions that change dynamic "
                "(torch._dynamo.mark_dynamic, or torch.compile(dynamic=True))."
            )
        if compiling:
            text += (
                " Compiling is paid once per shape: profile after a warm-up call to see the "
                "run, and keep compiled code between processes with the Inductor cache "
                "(TORCHINDUCTOR_CACHE_DIR)."
            )
        out.append({"kind": "compile", "text": text})
    return out


# One-time pieces named one by one in the one-off notice before the rest are summed up.
NAMED_ONE_OFFS = 3
# What to do about each kind of one-time work (analyses/one_off.py's ``what``), said once each.
_WARM_UP = (
    "warm up before profiling (run a step first, then capture) or leave the first steps out "
    "(--steps W,N)"
)
_ONE_OFF_FIXES = {
    "lazy module loading (first launch)": (
        "set CUDA_MODULE_LOADING=EAGER to load every kernel's module at start, or warm up"
    ),
    "torch.compile compilation": (
        "compile before profiling (one call with the same shapes), or leave the compiling "
        "steps out (--steps W,N)"
    ),
    "JIT compilation": "run the JIT-compiled code once before profiling, or leave those steps out",
    "the profiler's own start": (
        "the profiler's start is no part of the program: read only the steps after it "
        "(--steps W,N, or a warm-up step before the traced ones)"
    ),
}


def one_off_notices(found: Sequence[OneOff], walls: dict[int, int]) -> list[dict[str, str]]:
    """[{"kind": "one-off", "text"}] per rank whose one-time work (analyses/one_off.py) holds
    ONE_OFF_SHARE of its wall or more: what it was, its calls, times and where they ran."""
    out = []
    several = len(walls) > 1
    for rank, wall in walls.items():
        total = one_off_ns(list(found), rank)
        if wall <= 0 or total < ONE_OFF_SHARE * wall:
            continue
        mine = [o for o in found if o.rank == rank]
        said = "; ".join(_one_off(o) for o in mine[:NAMED_ONE_OFFS])
        if len(mine) > NAMED_ONE_OFFS:
            said += f"; and {format_count(len(mine) - NAMED_ONE_OFFS, 'more')}"
        whose = f"rank {rank}'s " if several else "the "
        fixes = "; ".join(dict.fromkeys(_ONE_OFF_FIXES.get(o.what, _WARM_UP) for o in mine))
        text = (
            f"{format_time(total)} ({format_fraction(total / wall, 0)}) of {whose}"
            f"{format_time(wall)} wall is one-time work: {said}. To measure the steady state: "
            f"{fixes}. Every finding below is measured in the same window."
        )
        out.append({"kind": "one-off", "text": text})
    return out


def _one_off(o: OneOff) -> str:
    where = "".join(
        part for part in (f" in {o.op}" if o.op else "", f" at {o.frame}" if o.frame else "")
    )
    return f"{o.what}, {o.call} {format_time(o.dur_ns)}{where}"
