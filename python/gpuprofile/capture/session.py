"""Run code under torch.profiler (CPU, and CUDA where present) and read what it recorded as a
Trace: ``capture()`` yields a ``Recording`` that holds the Trace once the block has ended. The
whole capture is read back at the end (read_back.py), or, with steps, window by window
(recorder.py); the sampler's readings become its counters.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import msgspec
import torch
from torch.profiler import ProfilerActivity
from torch.profiler import profile as torch_profile

from gpuprofile.capture import compiled as dynamo_tallies
from gpuprofile.capture import steps as step_state
from gpuprofile.capture.allocator_history import AllocatorHistory
from gpuprofile.capture.calibrate import cpu_name
from gpuprofile.capture.cells import running_cells
from gpuprofile.capture.counter_export import CounterExportError, append_counters
from gpuprofile.capture.distributed import Job
from gpuprofile.capture.guard import deferred_interrupt, profiler_running, refuse_other_profilers
from gpuprofile.capture.joined_export import write_joined
from gpuprofile.capture.kineto_chatter import KinetoChatter
from gpuprofile.capture.line_ranges import LineRanges
from gpuprofile.capture.module_names import ModuleNames
from gpuprofile.capture.modules import ModuleRanges
from gpuprofile.capture.options import CaptureOptions
from gpuprofile.capture.read_back import empty_capture, read_back
from gpuprofile.capture.recorder import (
    OnWindow,
    WindowRecorder,
    WindowSteps,
    schedule_of,
    torch_schedule_of,
)
from gpuprofile.capture.recording import Recording
from gpuprofile.capture.sampler import Sampler
from gpuprofile.capture.sources import default_sources
from gpuprofile.capture.steps import StepCounter
from gpuprofile.capture.tensor_roles import TensorRoles
from gpuprofile.errors import GpuprofileError, OptionError, ProfilerBusyError, failure_text
from gpuprofile.trace.meta import Steps, TensorRole
from gpuprofile.trace.model import Trace
from gpuprofile.trace.samples import Reading, with_samples

# Readings as they come, with the sources that give nothing and why (for live views).
LiveSample = Callable[[int, list[Reading], dict[str, str]], None]
# Upper bound of the default --max-events: a kept event costs the kernel about 1.5 KB (tables,
# names, report and widget data: 1.47 KB measured over 139k events of a CPU capture), and the
# live view holds a second copy while the cell runs; 2 KB each, 5 M events is some 10 GB.
MAX_EVENTS_CAP = 5_000_000
BYTES_PER_EVENT = 2048

T = TypeVar("T")


def default_max_events() -> int:
    """min(5 M, available memory / ~2 KB per event), at least 100 k."""
    import psutil

    available = int(psutil.virtual_memory().available)
    return max(100_000, min(MAX_EVENTS_CAP, available // BYTES_PER_EVENT))


@contextlib.contextmanager
def capture(
    options: CaptureOptions,
    *,
    on_sample: LiveSample | None = None,
    on_step: Callable[[int], None] | None = None,
    on_window: OnWindow | None = None,
    on_recording: Callable[[bool], None] | None = None,
) -> Iterator[Recording]:
    """Run the block under the profiler (and the sampler); the Recording it yields holds the
    Trace once the block has ended, however it ended.

    With ``options.distributed``, every rank of the torch.distributed job runs this; on rank 0
    the Recording holds the job's ranks, on the others their own (distributed.py).

    Parameters:
        options: what to record (``CaptureOptions``).
        on_sample: ``(time_ns, readings, missing)``, from the sampler's thread as readings
            come, with the sources that give nothing and why.
        on_step: ``(count)`` at each step.
        on_window: each recorded window as it is written (with ``options.steps``).
        on_recording: ``(True)`` as a window starts recording, ``(False)`` as it stops.
    """
    job = Job.join() if options.distributed else None
    try:
        if profiler_running():
            raise ProfilerBusyError.running()
        if job is not None and options.export is not None:
            try:
                os.makedirs(options.export, exist_ok=True)
            except OSError as error:
                raise OptionError("export", options.export, str(error)) from None
    except GpuprofileError as error:
        if job is not None:  # the other ranks must not wait for this one
            job.abort(error)
        raise
    export = options.export_file(job.rank if job is not None else None)
    cuda = torch.cuda.is_available()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    schedule = options.schedule
    windows = (
        WindowRecorder(export, options.max_events or default_max_events(), on_window)
        if schedule is not None
        else None
    )
    prof = torch_profile(
        activities=activities,
        record_shapes=options.record_shapes,
        profile_memory=options.profile_memory,
        with_stack=options.with_stack,
        schedule=torch_schedule_of(schedule) if schedule is not None else None,
        on_trace_ready=windows.ready if windows is not None else None,
    )
    chatter = KinetoChatter()
    # With stacks torch names module calls itself; the capture maps its names to paths.
    module_names = (
        ModuleNames(windows=schedule is not None)
        if options.with_stack and options.modules
        else None
    )
    counter = StepCounter(
        advance=(
            WindowSteps(
                prof,
                chatter,
                _then(module_names.recording if module_names else None, on_recording),
            )
            if windows is not None
            else None
        ),
        on_step=_then(module_names.stepped if module_names else None, on_step),
    )
    if windows is not None:
        windows.counter = counter
    sampler = Sampler(default_sources(), interval_s=options.interval) if options.interval else None
    events = (
        (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
        if cuda
        else None
    )
    if sampler is not None and on_sample is not None:
        sampler.on_sample = lambda time_ns, readings: on_sample(time_ns, readings, sampler.missing)
    module_ranges = ModuleRanges() if options.module_ranges else None
    line_ranges = LineRanges() if options.with_stack else None
    tensor_roles = TensorRoles() if options.profile_memory else None
    history = AllocatorHistory() if options.profile_memory and cuda else None
    started_ns = time.time_ns()
    dynamo_before = dynamo_tallies.snapshot()  # torch.compile's tallies, this capture's share
    if sampler is not None:
        sampler.start()
    try:
        with chatter.dropped():
            prof.start()
        try:
            if job is not None:  # every rank records from here on
                job.started()
            step_state.begin(counter)
            if module_ranges is not None:
                module_ranges.install()
            if module_names is not None:
                module_names.install()
            if line_ranges is not None:
                line_ranges.install()
            if tensor_roles is not None:
                tensor_roles.install()
            if history is not None:
                history.start()
        except BaseException:
            if history is not None:
                history.stop()
            if tensor_roles is not None:
                tensor_roles.remove()
            if line_ranges is not None:
                line_ranges.remove()
            if module_names is not None:
                module_names.remove()
            if module_ranges is not None:
                module_ranges.remove()
            prof.stop()
            raise
    except BaseException as error:
        if job is not None:
            job.abort(error)
        if sampler is not None:
            sampler.stop()
        chatter.close()
        raise
    if events is not None:
        events[0].record()
    recording = Recording()
    finished = False
    failure: str | None = None
    try:
        with refuse_other_profilers():
            yield recording
        finished = True
    except BaseException as error:
        # Kept for the memory view's post-mortem (an out-of-memory error names its request).
        failure = failure_text(error)
        raise
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
                        # Every kernel the block queued must end before the profiler stops, or
                        # it is lost; the sampler keeps reading while the GPU drains.
                        torch.cuda.synchronize()
                    if job is not None:  # the ranks wait for each other, recording
                        job.ended(finished=finished)
                finally:
                    roles = _roles(tensor_roles, module_ranges)
                    allocator = history.stop() if history is not None else ()
                    if line_ranges is not None:  # first: the block's lines are innermost
                        line_ranges.remove()
                    if module_names is not None:
                        module_names.remove()
                    if module_ranges is not None:  # before the stop: the ranges left open end
                        module_ranges.remove()
                    if sampler is not None:
                        sampler.stop()
                    # With a schedule, stopping inside a recorded window hands that last
                    # window over.
                    with chatter.dropped():
                        stop_error = _stop(prof)
                trace = _made_trace(prof, export, windows, started_ns, stop_error)
                steps = Steps(
                    count=counter.count, explicit=counter.explicit, schedule=schedule_of(schedule)
                )
                trace = trace.with_meta(
                    steps=steps,
                    partial=not finished or stop_error is not None,
                    framework={
                        "torch": torch.__version__,
                        **({"cuda": torch.version.cuda} if torch.version.cuda else {}),
                    },
                    host=cpu_name(),
                    compiled=dynamo_tallies.since(dynamo_before),
                    cuda_event_ns=(
                        round(events[0].elapsed_time(events[1]) * 1e6) if events else None
                    ),
                    cells=running_cells() if options.with_stack else {},
                    module_names=module_names.names() if module_names is not None else {},
                    failure=failure,
                    tensor_roles=roles,
                    allocator=allocator,
                )
                if history is not None and history.error is not None:
                    trace = trace.with_meta(errors=(*trace.meta.errors, history.error))
                if sampler is not None:
                    trace = with_samples(
                        trace,
                        sampler.samples,
                        sampler.missing,
                        interval_s=sampler.interval_s,
                        dropped=sampler.dropped,
                    )
                if export is not None:
                    trace = _export(trace, Path(export), windows, stopped=stop_error is None)
                if job is not None:
                    trace = job.gathered(trace)
                recording.trace = trace
        finally:
            chatter.close()
            if windows is not None:
                windows.discard()


def _roles(
    tensor_roles: TensorRoles | None, module_ranges: ModuleRanges | None
) -> tuple[TensorRole, ...]:
    """The known tensors' roles, and the hook removed; never raises (the teardown goes on)."""
    if tensor_roles is None:
        return ()
    try:
        return tensor_roles.roles(module_ranges.roots if module_ranges is not None else ())
    except Exception:  # a user's tensor subclass that refuses: the rules classify its blocks
        return ()
    finally:
        tensor_roles.remove()


def _then(
    first: Callable[[T], None] | None, then: Callable[[T], None] | None
) -> Callable[[T], None] | None:
    """A callback that calls ``first``, then ``then`` (the caller's); either may be None."""
    if first is None or then is None:
        return first or then

    def both(value: T) -> None:
        first(value)
        then(value)

    return both


def _made_trace(
    prof: torch_profile,
    export: str | None,
    windows: WindowRecorder | None,
    started_ns: int,
    stop_error: str | None,
) -> Trace:
    """What the stopped profiler recorded: its windows, or its one capture, read back."""
    if windows is not None:
        trace = windows.result(started_ns)
    elif stop_error is None:
        trace = read_back(prof, export)
    else:  # what torch held is unreadable: exporting it can crash the process
        trace = empty_capture(started_ns)
    if stop_error is not None:
        trace = trace.with_meta(errors=(*trace.meta.errors, stop_error))
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


def _export(trace: Trace, path: Path, windows: WindowRecorder | None, *, stopped: bool) -> Trace:
    """What --export still needs once torch has written its file: with a schedule, the kept
    windows and the samples joined into that one file; else the samples, added to torch's
    file. What cannot be written is said in the trace's errors, and leaves the file as it was."""
    problem = None
    if windows is None and not stopped:
        # torch wrote nothing (its stop failed): the samples must not go into an older file.
        problem = f"{path} not written: the profiler failed to stop"
    elif windows is not None and not windows.kept:
        problem = f"{path} not written: no window was recorded"
    elif windows is not None:
        try:
            write_joined(windows.kept, path, trace.meta.steps, trace.counters, trace.meta.origin_ns)
        except (OSError, GpuprofileError, msgspec.MsgspecError) as error:
            problem = f"{path} not written: {error}"
    elif trace.meta.sampling is not None:
        try:
            append_counters(path, trace.counters, trace.meta.origin_ns)
        except (OSError, CounterExportError) as error:
            problem = f"samples not written to {path}: {error}"
    return trace if problem is None else trace.with_meta(errors=(*trace.meta.errors, problem))
