"""Run code under torch.profiler (CPU, and CUDA where present) and read the result as a Trace
(read_back.py), with the sampler's readings as counters and, with --steps, window by window
(chunk_reader.py)."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import msgspec
import torch
from torch.profiler import ProfilerActivity
from torch.profiler import profile as torch_profile

from gpuprofile.capture import steps as step_state
from gpuprofile.capture.chunk_reader import (
    ChunkReader,
    OnChunk,
    WindowSteps,
    schedule_meta,
    torch_schedule_of,
)
from gpuprofile.capture.counter_export import CounterExportError, append_counters
from gpuprofile.capture.counters import with_samples
from gpuprofile.capture.guard import deferred_interrupt, profiler_running, refuse_other_profilers
from gpuprofile.capture.joined_export import write_joined
from gpuprofile.capture.kineto_chatter import KinetoChatter
from gpuprofile.capture.read_back import empty_capture, note_error, read_back
from gpuprofile.capture.sampler import Sampler
from gpuprofile.capture.sources import Reading, default_sources
from gpuprofile.capture.steps import StepCounter, StepSchedule, check_steps
from gpuprofile.errors import GpuprofileError, ProfilerBusyError
from gpuprofile.hardware.model import Hardware
from gpuprofile.result import Profile
from gpuprofile.trace.model import Trace

# Readings as they come, with the sources that give nothing and why (for live views).
LiveSample = Callable[[int, list[Reading], dict[str, str]], None]
# Upper bound of the default --max-events: a kept event costs the kernel about 1.5 KB (tables,
# names, report and widget data: 1.47 KB measured over 139k events of a CPU capture), and the
# live view holds a second copy while the cell runs; 2 KB each, 5 M events is some 10 GB.
MAX_EVENTS_CAP = 5_000_000
BYTES_PER_EVENT = 2048


@dataclass(frozen=True)
class CaptureOptions:
    record_shapes: bool = True
    profile_memory: bool = False
    with_stack: bool = False
    export: str | None = None
    # Seconds between gauge readings (NVML, psutil, torch.cuda); None: no sampler thread.
    interval_s: float | None = 0.1
    # (wait, active, repeat): a torch.profiler schedule, each recorded window read as a chunk.
    steps: StepSchedule | None = None
    # Timeline events kept across chunks before later chunks are dropped; None: machine default.
    max_events: int | None = None

    def __post_init__(self) -> None:
        # Checked before the block runs: a minutes-long cell must not end in an error the
        # options already held.
        if self.export is not None:
            folder = Path(self.export).parent
            if not folder.is_dir():
                raise ValueError(f"export {self.export}: there is no folder {folder}")
            if not os.access(folder, os.W_OK):
                raise ValueError(f"export {self.export}: folder {folder} is not writable")
        if self.max_events is not None:
            if self.steps is None:
                raise ValueError(
                    f"max_events {self.max_events} applies to steps (whole windows are "
                    "dropped); without steps every event is recorded"
                )
            if self.max_events < 1:
                raise ValueError(f"max_events {self.max_events}: must be positive")


def default_max_events() -> int:
    """min(5 M, available memory / ~2 KB per event), at least 100 k."""
    import psutil

    available = int(psutil.virtual_memory().available)
    return max(100_000, min(MAX_EVENTS_CAP, available // BYTES_PER_EVENT))


@contextlib.contextmanager
def profile(
    *,
    record_shapes: bool = True,
    profile_memory: bool = False,
    with_stack: bool = False,
    export: str | os.PathLike[str] | None = None,
    hardware: Hardware | None = None,
    interval: float | None = 0.1,
    steps: tuple[int, ...] | None = None,
    max_events: int | None = None,
) -> Iterator[Profile]:
    """Profile the block: ``with gpuprofile.profile() as p: ...``, then ``p.report()``.

    ``interval``: seconds between gauge samples (GPU utilization, memory, power, process CPU
    and memory) recorded as the trace's counters; None or 0 records none. ``export``: also
    write the capture as a Chrome trace there (Perfetto, HTA), the samples as counter tracks.

    If the block raises, the profile is still made from what ran (``p.partial`` is True) and
    the exception propagates unchanged.

    ``steps=(wait, active, repeat)``: record only some steps (``gpuprofile.step()`` or
    ``optimizer.step()`` mark them): skip ``wait``, warm up 1, record ``active``; ``repeat``
    times (0: until the block ends). Each recorded window is read as soon as it ends, while the
    block still runs. ``max_events``: once the chunks kept hold more timeline events than this,
    later chunks are dropped and counted (default: min(5 M, available memory / 2 KB)).
    """
    options = CaptureOptions(
        record_shapes=record_shapes,
        profile_memory=profile_memory,
        with_stack=with_stack,
        export=os.fspath(export) if export is not None else None,
        interval_s=interval or None,
        steps=check_steps(tuple(steps)) if steps is not None else None,
        max_events=max_events,
    )
    result = Profile(hardware=hardware)
    with capture(options, result):
        yield result


@contextlib.contextmanager
def capture(
    options: CaptureOptions,
    result: Profile,
    on_sample: LiveSample | None = None,
    *,
    on_step: Callable[[int], None] | None = None,
    on_chunk: OnChunk | None = None,
    on_recording: Callable[[bool], None] | None = None,
) -> Iterator[None]:
    """Run the block under the profiler (and the sampler); fill ``result`` when it ends.
    ``on_sample(time_ns, readings, missing)`` is called from the sampler's thread as readings
    come, with the sources that give nothing and why; ``on_step(count)`` at each step;
    ``on_chunk(window)`` with each recorded window as it is written, and
    ``on_recording(bool)`` as one starts and stops recording (``options.steps``)."""
    if profiler_running():
        raise ProfilerBusyError.running()
    cuda = torch.cuda.is_available()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    chunks = (
        ChunkReader(options.export, options.max_events or default_max_events(), on_chunk)
        if options.steps is not None
        else None
    )
    prof = torch_profile(
        activities=activities,
        record_shapes=options.record_shapes,
        profile_memory=options.profile_memory,
        with_stack=options.with_stack,
        schedule=torch_schedule_of(options.steps) if options.steps is not None else None,
        on_trace_ready=chunks.ready if chunks is not None else None,
    )
    chatter = KinetoChatter()
    counter = StepCounter(
        advance=WindowSteps(prof, chatter, on_recording) if chunks is not None else None,
        on_step=on_step,
    )
    if chunks is not None:
        chunks.counter = counter
    events = (
        (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
        if cuda
        else None
    )
    sampler = (
        Sampler(default_sources(), interval_s=options.interval_s)
        if options.interval_s is not None
        else None
    )
    if sampler is not None and on_sample is not None:
        sampler.on_sample = lambda time_ns, readings: on_sample(time_ns, readings, sampler.missing)
    started_ns = time.time_ns()
    if sampler is not None:
        sampler.start()
    try:
        with chatter.dropped():
            prof.start()
        try:
            step_state.begin(counter)
        except BaseException:
            prof.stop()
            raise
    except BaseException:
        if sampler is not None:
            sampler.stop()
        chatter.close()
        raise
    if events is not None:
        events[0].record()
    finished = False
    try:
        with refuse_other_profilers():
            yield
        finished = True
    finally:
        # A Ctrl-C during the teardown would leave torch's profiler half stopped (its Python
        # flag still set, so every later capture is refused) or lose the profile: it waits
        # until the profile is made, then is raised, unless the block is already raising.
        try:
            with deferred_interrupt(raise_after=finished):
                try:
                    step_state.end()
                    if events is not None:
                        events[1].record()
                        # Every kernel the block queued must end before the profiler stops, or it is
                        # lost; the sampler keeps reading while the GPU drains.
                        torch.cuda.synchronize()
                finally:
                    if sampler is not None:
                        sampler.stop()
                    # With a schedule, stopping inside a recorded window delivers that last chunk.
                    with chatter.dropped():
                        stop_error = _stop(prof)
                trace = _made_trace(prof, options, chunks, started_ns, stop_error)
                trace.meta["steps"] = {
                    "count": counter.count,
                    "explicit": counter.explicit,
                    "schedule": schedule_meta(options.steps),
                }
                if events is not None:
                    trace.meta["cuda_event_ns"] = round(events[0].elapsed_time(events[1]) * 1e6)
                if sampler is not None:
                    trace = with_samples(
                        trace,
                        sampler.samples,
                        sampler.missing,
                        interval_s=sampler.interval_s,
                        dropped=sampler.dropped,
                    )
                if options.export is not None:
                    _export(
                        trace,
                        Path(options.export),
                        chunks,
                        sampled=sampler is not None,
                        stopped=stop_error is None,
                    )
                result._finish(trace, partial=not finished or stop_error is not None)
        finally:
            chatter.close()
            if chunks is not None:
                chunks.discard()


def _made_trace(
    prof: torch_profile,
    options: CaptureOptions,
    chunks: ChunkReader | None,
    started_ns: int,
    stop_error: str | None,
) -> Trace:
    """What the stopped profiler recorded: its windows, or its one capture, read back."""
    if chunks is not None:
        trace = chunks.result(started_ns)
    elif stop_error is None:
        trace = read_back(prof, options.export)
    else:  # what torch held is unreadable: exporting it can crash the process
        trace = empty_capture(started_ns)
    if stop_error is not None:
        note_error(trace, stop_error)
    return trace


def _stop(prof: torch_profile) -> str | None:
    """Stop the profiler; None, or what went wrong when torch's own state was left
    inconsistent (a step cut short), so the profile is still made, marked, and the block's own
    exception is not replaced by torch's."""
    try:
        prof.stop()
    except Exception as error:
        return (
            f"torch's profiler failed to stop ({type(error).__name__}: {error}): the events "
            "it held are lost"
        )
    return None


def _export(
    trace: Trace, path: Path, chunks: ChunkReader | None, *, sampled: bool, stopped: bool
) -> None:
    """What --export still needs once torch has written its file: with a schedule, the kept
    windows joined into that one file; the samples, added to it. What cannot be written is
    said in the report, and leaves the file as it was."""

    def failed(what: str, error: Exception) -> None:
        note_error(trace, f"{what}: {error}")

    if chunks is None and not stopped:
        # torch wrote nothing (its stop failed): the samples must not go into an older file.
        failed(f"{path} not written", ValueError("the profiler failed to stop"))
        return
    if chunks is not None:
        if not chunks.kept:
            failed(f"{path} not written", ValueError("no window was recorded"))
            return
        try:
            write_joined(chunks.kept, path, trace.meta["steps"])
        except (OSError, GpuprofileError, msgspec.MsgspecError) as error:
            failed(f"{path} not written", error)
            return
    if sampled:
        try:
            append_counters(path, trace.counters, int(trace.meta["origin_ns"]))
        except (OSError, CounterExportError) as error:
            failed(f"samples not written to {path}", error)
