"""torch.compile's own counts over a capture: frames and graphs dynamo compiled, the time it
spent compiling, and each graph break with its reason and the user's line.

dynamo keeps them in process-wide tallies (``torch._dynamo.utils.counters``,
``graph_break_reasons``, ``compilation_time_metrics``) that only grow (until
``torch._dynamo.reset()``), so a capture's share is the difference between a snapshot taken
before it and the tallies after. Importing ``torch._dynamo`` costs seconds, so it is read only
when the program imported it itself (it has, whenever it called ``torch.compile``): a program
that first compiles inside the captured block has no snapshot before, and everything is its.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from msgspec.structs import replace

from gpuprofile.trace.meta import Compiled, GraphBreak

_DYNAMO_UTILS = "torch._dynamo.utils"
# dynamo's timer for compiling one frame, outermost (bytecode tracing, AOT and Inductor).
_FRAME_COMPILE = "_compile.compile_inner"


@dataclass(frozen=True)
class Snapshot:
    """dynamo's tallies at one moment (all zero when it was not imported)."""

    frames: int = 0
    graphs: int = 0
    reasons: int = 0  # entries of graph_break_reasons
    compile_timings: int = 0  # entries of compilation_time_metrics[_FRAME_COMPILE]
    break_counts: Counter[str] = field(default_factory=Counter)


def snapshot() -> Snapshot:
    """The tallies now; zero without ``torch._dynamo`` imported (it is not imported here)."""
    utils = sys.modules.get(_DYNAMO_UTILS)
    if utils is None:
        return Snapshot()
    counters = getattr(utils, "counters", {})
    return Snapshot(
        frames=int(counters.get("frames", {}).get("ok", 0)),
        graphs=int(counters.get("stats", {}).get("unique_graphs", 0)),
        reasons=len(getattr(utils, "graph_break_reasons", ())),
        compile_timings=len(getattr(utils, "compilation_time_metrics", {}).get(_FRAME_COMPILE, ())),
        break_counts=Counter(counters.get("graph_break", {})),
    )


def since(before: Snapshot) -> Compiled | None:
    """What dynamo did since ``before``; None when it was never imported or did nothing."""
    utils = sys.modules.get(_DYNAMO_UTILS)
    if utils is None:
        return None
    try:
        return _since(utils, before)
    except Exception:  # a torch whose internals moved: the capture goes on without them
        return None


def _since(utils: Any, before: Snapshot) -> Compiled | None:
    now = snapshot()
    # reset() empties the tallies: where one shrank, what is there now came after the
    # snapshot (a reset followed by as much compiling as before goes unseen).
    if (
        now.frames < before.frames
        or now.reasons < before.reasons
        or now.compile_timings < before.compile_timings
    ):
        before = Snapshot()
    timings = list(utils.compilation_time_metrics.get(_FRAME_COMPILE, ()))
    seconds = float(sum(timings[before.compile_timings :]))
    breaks = _breaks(
        list(utils.graph_break_reasons)[before.reasons :], now.break_counts - before.break_counts
    )
    compiled = Compiled(
        frames=now.frames - before.frames,
        graphs=max(now.graphs - before.graphs, 0),
        compile_ns=round(seconds * 1e9),
        graph_breaks=breaks,
    )
    return compiled if compiled != Compiled() else None


def _breaks(reasons: list[Any], counts: Counter[str]) -> tuple[GraphBreak, ...]:
    """Each distinct break (reason and user line), in the order met: from graph_break_reasons,
    which keep the user's stack; reasons only counters saw (an older torch) without a line."""
    found: dict[tuple[str, str, int], GraphBreak] = {}
    for entry in reasons:
        if not getattr(entry, "graph_break", True):
            continue  # a graph compiled for another reason (the frame's return)
        text = str(getattr(entry, "reason", ""))
        stack = list(getattr(entry, "user_stack", None) or ())
        frame = stack[-1] if stack else None
        one = GraphBreak(
            reason=_first_line(text),
            explanation=_explanation(text),
            file=str(getattr(frame, "filename", "") or ""),
            line=int(getattr(frame, "lineno", 0) or 0),
            function=str(getattr(frame, "name", "") or ""),
        )
        key = (text, one.file, one.line)
        found[key] = replace(found[key], count=found[key].count + 1) if key in found else one
    seen = {_first_line(text) for text, _, _ in found}
    for text, count in counts.items():
        if count > 0 and _first_line(text) not in seen:
            found[(text, "", 0)] = GraphBreak(
                reason=_first_line(text), explanation=_explanation(text), count=count
            )
    return tuple(found.values())


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0].strip() if text.strip() else "unknown reason"


def _explanation(text: str) -> str:
    for line in text.splitlines():
        if line.strip().startswith("Explanation:"):
            return line.strip().removeprefix("Explanation:").strip()
    return ""
