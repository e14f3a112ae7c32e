"""gpuprofile: where the time goes in AI workloads, in the notebook where you work.

%load_ext gpuprofile          # then %%gpuprofile on a cell
with gpuprofile.profile() as p: ...
gpuprofile.load("trace.json.gz").report()
gpuprofile.diff("before.json.gz", "after.json.gz")   # what changed, b against a
gpuprofile.assert_no_regression(run, baseline, max_regression=0.05)   # CI gate, beyond noise
gpuprofile.runs()             # the history: every profiled run (docs/history.md)
gpuprofile.show("last")       # a recorded run back in the notebook
gpuprofile.step()             # marks a step of the running capture (optimizer steps count alone)
gpuprofile.sweep(fn, [256, 512, 1024], name="L")   # how each module's cost grows with L
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpuprofile.compare import assert_no_regression, diff
from gpuprofile.errors import (
    GpuprofileError,
    OptionError,
    ProfilerBusyError,
    TraceFormatError,
    WorkerError,
)
from gpuprofile.hardware.model import Hardware
from gpuprofile.load import load
from gpuprofile.profiles import Profile, last, profile
from gpuprofile.profiles.sweep import Sweep, sweep
from gpuprofile.report.diff import Diff
from gpuprofile.report.regression import RegressionCheck
from gpuprofile.show import show
from gpuprofile.store.history import StoredRun

if TYPE_CHECKING:
    from gpuprofile.capture.calibrate import calibrate

__version__ = "0.1.0"
__all__ = [
    "Diff",
    "GpuprofileError",
    "Hardware",
    "OptionError",
    "Profile",
    "ProfilerBusyError",
    "RegressionCheck",
    "StoredRun",
    "Sweep",
    "TraceFormatError",
    "WorkerError",
    "assert_no_regression",
    "calibrate",
    "diff",
    "last",
    "load",
    "profile",
    "runs",
    "show",
    "step",
    "sweep",
]


def runs(limit: int | None = 20) -> list[StoredRun]:
    """The runs recorded in the history, newest first (``gpuprofile history``).

    Parameters:
        limit: at most this many; None: all.

    Returns:
        StoredRuns: ``.id``, ``.label``, ``.summary``, ``.hints``, ``.report()``; an empty
        list when nothing was recorded or the history is off (GPUPROFILE_HISTORY=off).
    """
    from gpuprofile.store.history import open_history

    history = open_history()
    return history.runs(limit) if history is not None else []


def step() -> int:
    """Mark a step of the running capture (``%%gpuprofile`` or ``gpuprofile.profile()``).

    The live step count moves and, with ``--steps`` / ``steps=``, the profiler's schedule
    advances. ``optimizer.step()`` counts on its own unless this is called in the same capture,
    so a loop never counts a step twice.

    Returns:
        The steps counted so far; 0 outside a capture, where it does nothing.
    """
    # capture/steps.py imports no torch at import time; reading a trace stays torch-free.
    from gpuprofile.capture.steps import step as mark_step

    return mark_step()


def __getattr__(name: str) -> Any:
    # Only capture/ imports torch; importing gpuprofile to read a trace must not.
    if name == "calibrate":
        from gpuprofile.capture.calibrate import calibrate

        return calibrate
    raise AttributeError(f"module 'gpuprofile' has no attribute {name!r}")


def load_ipython_extension(ipython: Any) -> None:
    from gpuprofile.magic import GpuprofileMagics

    ipython.register_magics(GpuprofileMagics)
