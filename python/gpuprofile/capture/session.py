"""Run code under torch.profiler (CPU, and CUDA where present) and read the result as a Trace.

The capture is exported as a Chrome trace and read back by the Kineto importer, so a profile
made here and a trace shared by someone else go through exactly the same analysis.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity
from torch.profiler import profile as torch_profile

from gpuprofile.errors import ProfilerBusyError
from gpuprofile.hardware.model import Hardware
from gpuprofile.importers.kineto import load_kineto
from gpuprofile.result import Profile
from gpuprofile.trace.model import Trace


@dataclass(frozen=True)
class CaptureOptions:
    record_shapes: bool = True
    profile_memory: bool = False
    with_stack: bool = False
    export: str | None = None


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
) -> Iterator[Profile]:
    """Profile the block: ``with gpuprofile.profile() as p: ...``, then ``p.report()``.

    If the block raises, the profile is still made from what ran (``p.partial`` is True) and
    the exception propagates unchanged.
    """
    options = CaptureOptions(
        record_shapes=record_shapes,
        profile_memory=profile_memory,
        with_stack=with_stack,
        export=os.fspath(export) if export is not None else None,
    )
    result = Profile(hardware=hardware)
    with capture(options, result):
        yield result


@contextlib.contextmanager
def capture(options: CaptureOptions, result: Profile) -> Iterator[None]:
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
    prof.start()
    if events is not None:
        events[0].record()
    finished = False
    try:
        yield
        finished = True
    finally:
        if events is not None:
            events[1].record()
            # Every kernel the block queued must end before the profiler stops, or it is lost.
            torch.cuda.synchronize()
        prof.stop()
        trace = _read_back(prof, options)
        if events is not None:
            trace.meta["cuda_event_ns"] = round(events[0].elapsed_time(events[1]) * 1e6)
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
