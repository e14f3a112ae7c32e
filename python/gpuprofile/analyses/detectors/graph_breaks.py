"""Graph breaks: torch.compile split the compiled code, and what lies between runs eagerly.

Read from Analysis.compiled (analyses/compiled.py): the breaks the trace shows (a region that
resumes after a break, nested in the one that broke, and the eager time from that one's last
graph call to it) and, for a capture, dynamo's own count with each break's reason and the
user's line (TraceMeta.compiled). Fires when the eager time between regions is a large enough
share of the rank's wall time less compiling (paid once; a capture of a first call is mostly
compiling) (analyses/thresholds.py). Gain: that time, an upper bound: once
the break is gone the code between still runs, compiled, and the re-entry into dynamo with
its guard checks is what disappears for sure.
"""

from __future__ import annotations

import pandas as pd

from gpuprofile.analyses.claims import Claim
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.frames import SourceLine
from gpuprofile.analyses.hints import MAX_EVIDENCE_EVENTS, Evidence, Hint
from gpuprofile.analyses.modules import NO_MODULE
from gpuprofile.analyses.thresholds import MAX_NAMED_BREAKS, worth_reporting
from gpuprofile.trace.meta import GraphBreak
from gpuprofile.units import format_count, format_time

FIX = (
    "Find every break with its reason and line: torch._dynamo.explain(model)(*inputs), or "
    'run with TORCH_LOGS="graph_breaks".',
    "Compile with fullgraph=True while fixing them: the first break raises, at its line.",
)
# The common causes, by words of dynamo's reason, and what removes each.
BY_REASON = (
    (
        ("print", "logging", "builtin operator"),
        "Printing or logging inside forward breaks the graph: remove it, log outside the "
        "compiled code, or list the function in "
        "torch._dynamo.config.reorderable_logging_functions.",
    ),
    (
        ("item", "data-dependent", "scalar", "tolist"),
        "Reading a tensor's value in Python (.item(), .tolist(), a branch on a tensor) breaks "
        "the graph: keep it a tensor, or set torch._dynamo.config.capture_scalar_outputs = True.",
    ),
    (
        ("jump", "branch", "control flow"),
        "Python control flow on tensor values breaks the graph: use torch.where or torch.cond.",
    ),
    (
        ("numpy", "unsupported", "skip", "call_function", "non-tensor"),
        "A call dynamo cannot trace breaks the graph: use torch ops instead of NumPy or an "
        "untraceable library, or register it with torch.library.custom_op.",
    ),
)
CODE = """explanation = torch._dynamo.explain(model)(*inputs)
print(explanation.graph_break_count)
for reason in explanation.break_reasons:
    print(reason.reason, reason.user_stack[-1])
model = torch.compile(model, fullgraph=True)  # raises at the first break"""


def detect(analysis: Analysis) -> list[Hint]:
    compiled = analysis.compiled
    if not compiled.present:
        return []
    meta_breaks = compiled.meta.graph_breaks if compiled.meta is not None else ()
    out = []
    for rank in analysis.trace.ranks:
        breaks = compiled.breaks[compiled.breaks["rank"] == rank]
        if not len(breaks):
            continue
        eager = int((breaks["end_ns"] - breaks["start_ns"] - breaks["compile_ns"]).sum())
        # Compiling is paid once: the breaks cost the run what is left of its time.
        wall = max(analysis.wall_ns(rank) - compiled.compile_ns.get(rank, 0), 1)
        if not worth_reporting("graph-break", eager, wall):
            continue
        out.append(_hint(analysis, rank, breaks, eager, wall, meta_breaks))
    return out


def _hint(
    analysis: Analysis,
    rank: int,
    breaks: pd.DataFrame,
    eager: int,
    wall: int,
    meta_breaks: tuple[GraphBreak, ...],
) -> Hint:
    # A break is a place in the code: the frame it left and the one resumed after it, whichever
    # of their recompiled graphs ran.
    sites = sorted(
        {
            (str(a).split("/")[0], str(b).split("/")[0])
            for a, b in zip(breaks["before"], breaks["after"], strict=True)
        }
    )
    count = len(meta_breaks) if meta_breaks else len(sites)
    passes = len(breaks)
    if meta_breaks:
        named = "; ".join(_said(b) for b in meta_breaks[:MAX_NAMED_BREAKS])
        more = len(meta_breaks) - MAX_NAMED_BREAKS
        why = f" dynamo's reasons: {named}" + (f"; and {more} more" if more > 0 else "") + "."
    else:
        pairs = ", ".join(f"frame {a} to frame {b}" for a, b in sites[:MAX_NAMED_BREAKS])
        why = (
            f" Regions resumed after a break: {pairs}; the trace does not say why (a capture "
            "by gpuprofile of a program that compiles records dynamo's reasons)."
        )
    modules = sorted(set(breaks["module"]))
    heaviest = breaks.assign(
        dur=breaks["end_ns"] - breaks["start_ns"] - breaks["compile_ns"]
    ).nlargest(MAX_EVIDENCE_EVENTS, "dur")
    windows = tuple(
        (int(a), int(b)) for a, b in sorted(zip(heaviest["start_ns"], heaviest["end_ns"]))
    )
    fixes = tuple(
        text
        for words, text in BY_REASON
        if any(w in (b.reason + " " + b.explanation).lower() for b in meta_breaks for w in words)
    )
    return Hint(
        kind="graph-break",
        subject="graph breaks",
        title=(
            f"torch.compile breaks the graph {format_count(count, 'time')}: "
            f"{format_time(eager)} ran eagerly between compiled regions"
        ),
        basis_ns=wall,
        gain_ns=eager,
        claim=Claim(breaks["start_ns"].to_numpy(), breaks["end_ns"].to_numpy()),
        gain_method=(
            "The time from each compiled region's last graph call to the region resumed after "
            "its break, compiling apart, summed over the calls: an upper bound, as the code "
            "between still runs once compiled."
        ),
        confidence="low",
        explanation=(
            f"dynamo split the compiled code at {format_count(count, 'place')}, met "
            f"{format_count(passes, 'time')} in this trace"
            + (f" (in {', '.join(modules)})" if modules and modules != [NO_MODULE] else "")
            + f": between regions the code ran eagerly for {format_time(eager)} in all, and "
            "every region re-entered dynamo and checked its guards." + why
        ),
        numbers={"graph_breaks": count, "times_met": passes, "eager_ns": eager},
        fix=(*fixes, *FIX),
        code=CODE,
        evidence=(
            Evidence(
                table="ops",
                rank=rank,
                windows=windows,
                label="eager time between compiled regions",
            ),
        ),
        sources=tuple(
            SourceLine(file=b.file, line=b.line, function=b.function) for b in meta_breaks if b.file
        ),
        modules=tuple(m for m in modules if m != NO_MODULE),
        rank=rank,
    )


def _said(one: GraphBreak) -> str:
    where = f" at {one.file.rsplit('/', 1)[-1]}:{one.line}" if one.file else ""
    detail = f" ({one.explanation})" if one.explanation else ""
    return f"{one.reason}{detail}{where}"
