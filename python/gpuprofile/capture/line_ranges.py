"""With ``--stack``, the line of the user's code each op and call ran on.

torch names each Python frame by its function's ``def`` line, and an operator written inline
(``x @ w``, ``a + 1``, ``t[mask]``) makes no Python call torch records, so without more every
op of a function stood on that one line. Here a trace function
(``sys.settrace``, the capture's thread) opens a range named ``gpuprofile.line {N}``
(importers.kineto.capture_ranges.LINE_RANGE) as each line of the user's own code starts, and
closes it as the next line starts or the frame returns or yields. Ranges of one frame follow
each other and a callee's sit inside its caller's, so they nest with torch's events; the
importer gives the ops and calls directly inside one its line (``ops.caller_line``) and drops
the ranges.
A range is torch's ``_RecordFunctionFast`` (category ``cpu_op``; 0.6 us, against 1.5 us for
``_record_function_with_args_enter``): no analysis sees it, the importer drops it first.

Only frames of the user's code are traced: not the standard library, installed packages,
torch, gpuprofile, inductor's generated code, or code compiled from a string (``<...>``, save
terminal IPython's cells). Other frames cost one lookup at their call. Each traced line costs
a range (1 to 2 us on two shared cores; bench/lines.py): the price of exact lines, paid only
with ``--stack``.

A debugger's trace function (``sys.gettrace()``) is left in place, and lines are not traced;
nor are they where torch lacks the private ``_RecordFunctionFast``.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import threading
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

import torch

from gpuprofile.importers.kineto.capture_ranges import LINE_RANGE

# torch's own, private: where a version lacks them, no lines are traced (def lines, as before).
_Range: Any = getattr(torch._C._profiler, "_RecordFunctionFast", None)
# Between a --steps capture's windows nothing records: no range is opened (one opened then has
# no guard, and closing it raises).
_recording: Any = getattr(torch._C._autograd, "_profiler_enabled", None)

Tracer = Callable[[FrameType, str, Any], Any]
# A frame tracer's attribute: its frame's open range, which remove() closes.
_OPEN = "gpuprofile_open_range"


def _library_roots() -> tuple[str, ...]:
    """Folders whose code is not the user's: the interpreter's, installed packages', torch's
    and gpuprofile's own (it may be installed from a checkout, outside site-packages)."""
    paths = sysconfig.get_paths()
    roots = {paths.get(key, "") for key in ("stdlib", "platstdlib", "purelib", "platlib")} | {
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
    }
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # gpuprofile's
    roots |= {os.path.dirname(torch.__file__), package}
    return tuple(sorted(os.path.join(r, "") for r in roots if r))


class LineRanges:
    """The trace function of one capture: ``install()`` after the profiler starts, ``remove()``
    before it stops (never raises: the capture's teardown must go on)."""

    def __init__(self) -> None:
        self._roots = _library_roots()
        self._user: dict[CodeType, bool] = {}
        self._names: dict[int, str] = {}
        self._installed = False
        self._thread = threading.get_ident()

    def install(self) -> None:
        """Trace the capture's thread; frames of the user's code already running (the block
        of ``with gpuprofile.profile()``) are traced from their next line on."""
        if sys.gettrace() is not None or _Range is None or _recording is None:
            return  # a debugger's trace function stays; ops keep their frames' def lines
        self._installed = True
        frame: FrameType | None = sys._getframe(1)
        while frame is not None:
            if self._is_user(frame.f_code):
                frame.f_trace = self._frame_tracer(frame)
                frame.f_trace_lines = True
            frame = frame.f_back
        sys.settrace(self._call)

    def remove(self) -> None:
        """Stop tracing and close the ranges still open, innermost first. A frame closes its
        range as it returns or yields, so the open ones are those of the frames still running:
        the thread's stack (the block's own frames). Their tracers go too, so a later capture
        does not find this one's."""
        if not self._installed or threading.get_ident() != self._thread:
            return
        self._installed = False
        try:
            sys.settrace(None)
            frame: FrameType | None = sys._getframe()
            while frame is not None:
                handle = getattr(frame.f_trace, _OPEN, None)
                if handle is not None:
                    frame.f_trace = None
                    _close(handle)
                frame = frame.f_back
        except Exception:  # never fail the teardown: an open range only ends at the stop
            pass

    def _is_user(self, code: CodeType) -> bool:
        known = self._user.get(code)
        if known is None:
            path = code.co_filename
            known = self._user[code] = (
                not path.startswith(self._roots)
                and "torchinductor_" not in path  # inductor's generated code, in its cache
                and (not path.startswith("<") or path.startswith("<ipython-input-"))
            )
        return known

    def _call(self, frame: FrameType, event: str, arg: Any) -> Tracer | None:
        """sys.settrace's global function: a frame's tracer when it runs the user's code."""
        if event != "call" or not self._is_user(frame.f_code):
            return None
        return self._frame_tracer(frame)

    def _frame_tracer(self, frame: FrameType) -> Tracer:
        """One frame's tracer: a range per line, the last closed as the frame returns."""
        handle: list[Any] = [None]  # the open range of the frame's current line
        names = self._names

        def trace(frame: FrameType, event: str, arg: Any) -> Tracer:
            if event == "line":
                if handle[0] is not None:
                    _close(handle)
                if _recording():
                    line = frame.f_lineno
                    name = names.get(line)
                    if name is None:
                        name = names[line] = f"{LINE_RANGE}{line}"
                    handle[0] = _Range(name)
                    handle[0].__enter__()
            elif event == "return" and handle[0] is not None:  # also unwinding, and at a yield
                _close(handle)
            return trace

        setattr(trace, _OPEN, handle)
        return trace


def _close(handle: list[Any]) -> None:
    """Close the frame's open range. One opened as a window began has no guard: torch raises,
    and there is nothing to close."""
    opened, handle[0] = handle[0], None
    if opened is not None:
        try:  # noqa: SIM105 (once per line: suppress() would cost a context manager more)
            opened.__exit__(None, None, None)
        except RuntimeError:
            pass
