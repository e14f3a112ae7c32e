"""Reading a --steps capture window by window (a torch.profiler schedule).

torch hands each recorded window to ``on_trace_ready`` on the thread that called
``prof.step()``, the cell's: a window is read there, kept, and shown to ``on_chunk``; the kept
windows are merged once when the capture ends.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from torch.profiler import profile as torch_profile
from torch.profiler import schedule as torch_schedule

from gpuprofile.capture.chunks import merge_chunks, timeline_events, timeline_span
from gpuprofile.capture.guard import deferred_interrupt
from gpuprofile.capture.kineto_chatter import KinetoChatter
from gpuprofile.capture.read_back import empty_capture, read_back
from gpuprofile.capture.steps import WARMUP, StepCounter, StepSchedule
from gpuprofile.trace.model import Trace

# Each recorded window of steps as soon as it is read, on the cell's thread (keep it short).
OnChunk = Callable[[Trace], None]


def step_quietly(prof: torch_profile, chatter: KinetoChatter) -> None:
    # Each window starting afresh is the point of reading chunks (memory stays bounded), so
    # torch's note that a cycle's events are cleared is not news to the user, nor is Kineto's
    # start and stop chatter. An interrupt inside a transition would leave torch's schedule
    # half moved (its stop then fails).
    with (
        chatter.dropped(),
        deferred_interrupt(raise_after=True),
        warnings.catch_warnings(),
    ):
        warnings.filterwarnings("ignore", message="Warning: Profiler clears events")
        prof.step()


def torch_schedule_of(steps: StepSchedule) -> Any:
    wait, active, repeat = steps
    return torch_schedule(wait=wait, warmup=WARMUP, active=active, repeat=repeat)


def schedule_meta(steps: StepSchedule | None) -> dict[str, int] | None:
    if steps is None:
        return None
    wait, active, repeat = steps
    return {"wait": wait, "warmup": WARMUP, "active": active, "repeat": repeat}


class ChunkReader:
    """Reads each recorded window as the profiler hands it over (``on_trace_ready``, on the
    thread that called ``prof.step()``: the cell's) and keeps it; they are merged once, at the
    end, so the cell pays for reading each window and nothing that grows with the run."""

    def __init__(self, export: str | None, max_events: int, on_chunk: OnChunk | None):
        self.export = export
        self.max_events = max_events
        self.on_chunk = on_chunk
        self.counter: StepCounter | None = None
        self.kept: list[Trace] = []
        self.kept_events = 0
        self.index = 0
        self.dropped_chunks = 0
        self.dropped_events = 0
        self.errors: list[str] = []

    def ready(self, prof: torch_profile) -> None:
        index = self.index
        self.index += 1
        # A failure here would surface inside the user's optimizer.step(): record it instead.
        try:
            chunk = read_back(prof, chunk_path(self.export, index), self.export)
        except Exception as error:
            self.errors.append(f"chunk {index}: {type(error).__name__}: {error}")
            return
        events = timeline_events(chunk)
        if self.kept and self.kept_events > self.max_events:
            self.dropped_chunks += 1
            self.dropped_events += events
            return
        start, end = timeline_span(chunk)
        chunk.meta["chunks"] = [
            {
                "index": index,
                # The recorded window, in the chunk's time; the analyses leave out the time
                # between windows, which nothing recorded.
                "start_ns": start,
                "end_ns": end,
                "origin_ns": int(chunk.meta["origin_ns"]),
                "events": events,
                "step": self.counter.count if self.counter is not None else None,
                "read_ns": time.time_ns(),
            }
        ]
        self.kept.append(chunk)
        self.kept_events += events
        if self.on_chunk is not None:
            try:
                self.on_chunk(chunk)
            except Exception as error:
                self.errors.append(f"showing chunk {index}: {type(error).__name__}: {error}")

    def result(self, started_ns: int) -> Trace:
        trace = merge_chunks(self.kept) if self.kept else empty_capture(started_ns)
        if self.dropped_chunks:
            trace.meta["dropped"] = {
                "chunks": self.dropped_chunks,
                "events": self.dropped_events,
                "max_events": self.max_events,
            }
        if self.errors:
            trace.meta["capture_errors"] = [*trace.meta.get("capture_errors", []), *self.errors]
        return trace


def chunk_path(export: str | None, index: int) -> str | None:
    """``run.json`` -> ``run-chunk0.json``: each recorded window in its own Chrome trace."""
    if export is None:
        return None
    path = Path(export)
    stem = path.name.split(".", 1)
    rest = f".{stem[1]}" if len(stem) > 1 else ""
    return str(path.with_name(f"{stem[0]}-chunk{index}{rest}"))
