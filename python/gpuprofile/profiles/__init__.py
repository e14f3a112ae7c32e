"""A Profile: one Trace with its analysis; the report, the text and the widget are renderings of
it. ``profile()`` and ``%%gpuprofile`` make one from a capture, ``load()`` from a file;
``runs.py`` resolves the runs a diff or a baseline names."""

from gpuprofile.profiles.block import last, profile, record, remember
from gpuprofile.profiles.profile import (
    WIDGET_TEXT,
    Profile,
    in_kernel,
    show_outputs,
    snapshot_output,
    widget_output,
    widget_outputs,
)
from gpuprofile.profiles.runs import RunRef, resolve_run, resolve_side

__all__ = [
    "WIDGET_TEXT",
    "Profile",
    "RunRef",
    "in_kernel",
    "last",
    "profile",
    "record",
    "remember",
    "resolve_run",
    "resolve_side",
    "show_outputs",
    "snapshot_output",
    "widget_output",
    "widget_outputs",
]
