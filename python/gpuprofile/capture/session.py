"""Run code under torch.profiler (CPU, and CUDA where present) and read the result as a Trace.

The capture is exported as a Chrome trace and read back by the Kineto importer, so a profile
made here and a trace shared by someone else go through exactly the same analysis.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity
from torch.profiler import profile as torch_profile

from gpuprofile.capture.counters import with_samples
from gpuprofile.capture.sampler import Sampler
from gpuprofile.capture.sources import Reading, default_sources
from gpuprofile.errors import ProfilerBusyError
from gpuprofile.hardware.model import Hardware
from gpuprofile.importers.kineto import load_kineto
from gpuprofile.result import Profile
from gpuprofile.trace.model import Trace

# Readings as they come, with the sources that give nothing and why (for live views).
LiveSample = Callable[[int, list[Reading], dict[str, str]], None]


@dataclass(frozen=True)
class CaptureOptions:
    record_shapes: bool = True
    profile_memory: bool = False
    with_stack: bool = False
    export: str | None = None
    # Seconds between gauge readings (NVML, psutil, torch.cuda); None: no sampler thread.
    interval_s: float | None = 0.1


def profiler_running() -> bool:
    return bool(torch.autograd.profiler._is_profiler_enabled)


@contextlib.contextmanager
def profile(
    *,
    record_shapes: bool = True,
    profile_memory: bool = False,
    with_stack: bool = False,
    export: str | os.PathLike[str] | None = None,
    hardware: Hardware | None = None,
    interval: float | None = 0.1,
) -> Iterator[Profile]:
    """Profile the block: ``with gpuprofile.profile() as p: ...``, then ``p.report()``.

    ``interval``: seconds between gauge samples (GPU utilization, memory, power, process CPU
    and memory) recorded as the trace's counters; None or 0 records none.

    If the block raises, the profile is still made from what ran (``p.partial`` is True) and
    the exception propagates unchanged.
    """
    options = CaptureOptions(
        record_shapes=record_shapes,
        profile_memory=profile_memory,
        with_stack=with_stack,
        export=os.fspath(export) if export is not None else None,
        interval_s=interval or None,
    )
    result = Profile(hardware=hardware)
    with capture(options, result):
        yield result


@contextlib.contextmanager
def capture(
    options: CaptureOptions, result: Profile, on_sample: LiveSample | None = None
) -> Iterator[None]:
    """Run the block under the profiler (and the sampler); fill ``result`` when it ends.
    ``on_sample(time_ns, readings, missing)`` is called from the sampler's thread as readings
    come, with the sources that give nothing and why."""
    if profiler_running():
        raise ProfilerBusyError.running()
    cuda = torch.cuda.is_available()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    prof = torch_profile(
        activities=activities,
        record_shapes=options.record_shapes,
        profile_memory=options.profile_memory,
        with_stack=options.with_stack,
    )
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
    if sampler is not None:
        sampler.start()
    try:
        prof.start()
    except BaseException:
        if sampler is not None:
            sampler.stop()
        raise
    if events is not None:
        events[0].record()
    finished = False
    try:
        yield
        finished = True
    finally:
        try:
            if events is not None:
                events[1].record()
                # Every kernel the block queued must end before the profiler stops, or it is
                # lost; the sampler keeps reading while the GPU drains.
                torch.cuda.synchronize()
        finally:
            if sampler is not None:
                sampler.stop()
            prof.stop()
        trace = _read_back(prof, options)
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
        result._finish(trace, partial=not finished)


def _read_back(prof: torch_profile, options: CaptureOptions) -> Trace:
    if options.export:
        path = Path(options.export)
        prof.export_chrome_trace(str(path))
        trace = load_kineto(path)
    else:
        with tempfile.TemporaryDirectory(prefix="gpuprofile-") as tmp:
            path = Path(tmp) / "capture.pt.trace.json"
            prof.export_chrome_trace(str(path))
            trace = load_kineto(path)
    trace.meta["source"] = {"format": "capture", "path": options.export}
    trace.meta["framework"] = {"torch": torch.__version__}
    return trace
