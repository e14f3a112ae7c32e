"""``gpuprofile.profile()``: a block profiled, recorded in the history; ``last()``."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

from gpuprofile.capture.options import CaptureOptions, options_doc
from gpuprofile.errors import GpuprofileError
from gpuprofile.hardware.model import Hardware
from gpuprofile.profiles.profile import Profile
from gpuprofile.profiles.runs import RunRef, resolve_side
from gpuprofile.store.history import StoredRun, open_history
from gpuprofile.store.origin import Origin, running_origin


@contextlib.contextmanager
def profile(
    *,
    profile_memory: bool = False,
    with_stack: bool = False,
    record_shapes: bool = True,
    modules: bool = True,
    export: str | os.PathLike[str] | None = None,
    hardware: Hardware | None = None,
    interval: float | None = 0.1,
    steps: tuple[int, ...] | None = None,
    max_events: int | None = None,
    distributed: bool = False,
    label: str | None = None,
    keep_trace: bool = False,
    baseline: RunRef | None = None,
) -> Iterator[Profile]:
    """Profile the block (options below are checked before it runs)."""
    from gpuprofile.capture.session import capture

    # Before the block runs: a baseline that cannot be read fails first, not after the work.
    base = resolve_side(baseline) if baseline is not None else None

    options = CaptureOptions(
        profile_memory=profile_memory,
        with_stack=with_stack,
        record_shapes=record_shapes,
        modules=modules,
        export=os.fspath(export) if export is not None else None,
        hardware=hardware,
        interval=interval or 0.0,
        steps=steps,
        max_events=max_events,
        distributed=distributed,
    )
    made: Profile | None = None
    try:
        with capture(options) as recording:
            made = Profile(recording, hardware=options.hardware, baseline=base)
            yield made
    finally:
        # After the capture has ended (also when the block raised): what ran is recorded.
        if made is not None and recording.done:
            record(made, label=label, keep_trace=keep_trace, origin=running_origin())


def record(
    profile: Profile, *, label: str | None, keep_trace: bool, origin: Origin
) -> StoredRun | None:
    """Record a capture in the history, as ``%%gpuprofile`` and ``profile()`` do: a failure
    is one line on stderr, never an error of the profiled code; nothing is recorded when the
    history is off, or on ranks other than 0 of a job (rank 0 records the whole job)."""
    history = open_history()
    if history is None or not _job_leader(profile):
        return None
    try:
        return profile.save(label=label, keep_trace=keep_trace, origin=origin, history=history)
    except GpuprofileError as error:
        print(f"gpuprofile: this run was not recorded in the history: {error}", file=sys.stderr)
        return None


def _job_leader(profile: Profile) -> bool:
    if len(profile._recorded().meta.ranks) > 1:
        return True
    dist = sys.modules.get("torch.distributed")  # only a job has it initialised
    try:
        return dist is None or not dist.is_initialized() or dist.get_rank() == 0
    except (RuntimeError, ValueError):
        return True


profile.__doc__ = f"""Profile the block: ``with gpuprofile.profile() as p: ...``, then
``p.report()``.

If the block raises, the profile is still made from what ran (``p.partial`` is True) and the
exception propagates unchanged. The run is recorded in the history (``p.run``; docs/history.md),
under ``label`` when given, with its trace when ``keep_trace``. The options are checked before
the block runs (``OptionError``):

{options_doc()}
    label: record the run in the history under this name (``gpuprofile diff NAME other``)
    keep_trace: keep the trace in the history too, so ``gpuprofile.show(run)`` brings the
        timeline back
    baseline: the run to compare with (a Profile, a trace path, or a run id, label or
        ``last`` of the history, as ``gpuprofile.diff`` takes), read before the block runs;
        ``p.report()["baseline"]`` is then the diff.
"""


_last: Profile | None = None


def remember(profile: Profile) -> None:
    global _last
    _last = profile


def last() -> Profile:
    """The Profile that the most recent %%gpuprofile cell made."""
    if _last is None:
        raise GpuprofileError("no profile yet: run a cell with %%gpuprofile first")
    return _last
