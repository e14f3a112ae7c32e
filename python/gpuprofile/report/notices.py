"""What a reader must know before trusting a report's numbers, one line each, shown first by
every view: the code raised, only some steps were recorded, recorded windows were dropped,
part of the capture failed."""

from __future__ import annotations

from typing import Any

from gpuprofile.trace.model import Trace

# Windows named one by one in the steps notice before the rest are summed up.
NAMED_WINDOWS = 6


def notices(trace: Trace, *, partial: bool) -> list[dict[str, str]]:
    """[{"kind": "partial" | "steps" | "dropped" | "incomplete", "text"}], in that order."""
    out = []
    if partial:
        out.append(
            {
                "kind": "partial",
                "text": "the profiled code raised before it finished; this covers only what ran.",
            }
        )
    if (steps := _steps_text(trace.meta)) is not None:
        out.append({"kind": "steps", "text": steps})
    if dropped := trace.meta.get("dropped"):
        out.append(
            {
                "kind": "dropped",
                "text": f"{_events(dropped.get('events'))}{dropped['chunks']} recorded windows "
                "dropped, unread, once the windows kept held more than --max-events "
                f"{dropped.get('max_events', '?')} events; this covers only the windows kept "
                "before.",
            }
        )
    out.extend({"kind": "incomplete", "text": e} for e in trace.meta.get("capture_errors", []))
    return out


def _steps_text(meta: dict[str, Any]) -> str | None:
    """Which steps a --steps capture recorded, numbered from 0 as torch's ProfilerStep#N."""
    steps = meta.get("steps") or {}
    schedule = steps.get("schedule")
    if not schedule:
        return None
    count = int(steps.get("count", 0))
    if count == 0:
        return (
            "no step was marked, so no window was recorded: call gpuprofile.step() once per "
            "step, or step an optimizer (each optimizer.step() marks one)."
        )
    before = schedule["wait"] + schedule["warmup"]
    cycle = before + schedule["active"]
    ranges: list[tuple[int, int]] = []
    tail = False
    for entry in meta.get("chunks", []):
        if entry.get("step") is None:
            continue
        last = int(entry["step"]) - 1  # the step count when the window was handed over
        first = (last // cycle) * cycle + before if last >= 0 else 0
        if first <= last:
            ranges.append((first, last))
        else:
            tail = True  # the profiler stopped before a window's first step: the cell's end
    recorded = sum(last - first + 1 for first, last in ranges)
    named = ", ".join(f"#{a}" if a == b else f"#{a}-{b}" for a, b in ranges[:NAMED_WINDOWS])
    if len(ranges) > NAMED_WINDOWS:
        named += f" and {len(ranges) - NAMED_WINDOWS} more"
    windows = f"{len(ranges)} window" + ("s" if len(ranges) != 1 else "")
    where = f" in {windows} ({named}; numbered from 0, as ProfilerStep#N)" if ranges else ""
    text = f"recorded {recorded} of {count} steps{where}"
    if not ranges and count <= before:
        wait, warmup = schedule["wait"], schedule["warmup"]
        text += f": a window starts after {before} steps (wait {wait}, warmup {warmup})"
    if tail:
        text += ", and the cell's end after its last step"
    return text + "; wall and GPU times cover what was recorded, not the time between windows."


def _events(count: int | None) -> str:
    return "" if count is None else f"{count} events in "
