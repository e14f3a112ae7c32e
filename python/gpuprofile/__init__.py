"""gpuprofile: where the time goes in AI workloads, in the notebook where you work.

%load_ext gpuprofile          # then %%gpuprofile on a cell
with gpuprofile.profile() as p: ...
gpuprofile.load("trace.json.gz").report()
gpuprofile.diff("before.json.gz", "after.json.gz")   # what changed, b against a
gpuprofile.assert_no_regression(run, baseline, max_regression=0.05)   # CI gate, beyond noise
gpuprofile.step()             # marks a step of the running capture (optimizer steps count alone)
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
from gpuprofile.report.diff import Diff
from gpuprofile.report.regression import RegressionCheck

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
    "TraceFormatError",
    "WorkerError",
    "assert_no_regression",
    "calibrate",
    "diff",
    "last",
    "load",
    "profile",
    "step",
]


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
