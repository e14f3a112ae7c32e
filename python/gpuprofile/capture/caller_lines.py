"""The line each Python call was made on, written into the Chrome trace torch exported.

With ``with_stack`` torch names a Python frame ``file(line): function`` where ``line`` is the
function's first line (its ``def``), so every op of a function reads as that one line. torch
knows more: each Python call event of its event tree (``_ExtraFields_PyCall`` and
``_ExtraFields_PyCCall``) has ``caller.line_number``, the line of the caller's frame at the
moment of the call. The export leaves it out. With ``--export`` it is added to each such event's
args in the file as ``"Caller line"`` (CALLER_LINE), which the Kineto importer reads into
``ops.caller_line``, so the file read again keeps it; without, the file is temporary and the
lines go straight into the trace read from it (no second write of the file).

A tree event is matched to its exported event by its start in nanoseconds and its name: torch
writes ``ts`` as microseconds from the file's ``baseTimeNanoseconds`` to the nanosecond, on the
same clock as the tree's ``start_time_ns``. A key two calls share with different lines is left
out. Nothing here may fail a capture: any surprise leaves the file as torch wrote it.
"""

from __future__ import annotations

import gzip
from dataclasses import replace
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from gpuprofile.capture.counter_export import replace_whole
from gpuprofile.trace.model import NO_ID, Trace

CALLER_LINE = "Caller line"
# (start ns, name) -> the caller's line; -1 where two calls of one key disagree.
CallerLines = dict[tuple[int, str], int]


class _Event(msgspec.Struct, gc=False):
    cat: str = ""
    name: str = ""
    ts: msgspec.Raw = msgspec.Raw()


def caller_lines(prof: Any) -> CallerLines:
    """Each Python call of the stopped profiler's event tree, by (start ns, name); {} when
    torch's tree cannot be read."""
    try:
        from torch._C._profiler import _EventType  # torch's own, private: may move

        python_calls = (_EventType.PyCall, _EventType.PyCCall)
        lines: CallerLines = {}
        pending = list(prof.profiler.kineto_results.experimental_event_tree())
        while pending:
            event = pending.pop()
            pending.extend(event.children)
            if event.tag not in python_calls:  # the tag first: extra_fields builds an object
                continue
            key = (int(event.start_time_ns), str(event.name))
            line = int(event.extra_fields.caller.line_number)
            lines[key] = line if lines.get(key, line) == line else -1
        return lines
    except Exception:  # torch's internals move between versions: never fail the capture
        return {}


def add_caller_lines(path: Path, lines: CallerLines) -> int:
    """Write the caller lines into torch's export at ``path`` (``--export``: the file keeps
    them); how many events got one (0 and the file untouched on any failure)."""
    if not lines:
        return 0
    try:
        data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        written, added = with_caller_lines(data, lines)
        if added:
            replace_whole(path, written)
        return added
    except Exception:  # a file torch wrote otherwise than expected: left as it was
        return 0


def with_caller_line_column(trace: Trace, lines: CallerLines) -> Trace:
    """The trace read from torch's export with ``ops.caller_line`` filled in memory: what
    add_caller_lines and reading the file give, without writing the file again."""
    ops = trace.ops
    frames = np.flatnonzero((ops["category"] == "python_function").to_numpy())
    if not lines or not len(frames):
        return trace
    try:
        starts = (ops["start_ns"].to_numpy()[frames] + trace.meta.origin_ns).tolist()
        names = ops["name"].to_numpy()[frames].tolist()
        column = ops["caller_line"].to_numpy().copy()
        column[frames] = [lines.get(key, NO_ID) for key in zip(starts, names, strict=True)]
        return replace(trace, ops=ops.assign(caller_line=column))
    except Exception:  # never fail the capture: the frames keep their def lines
        return trace


def with_caller_lines(data: bytes, lines: CallerLines) -> tuple[bytes, int]:
    """The trace's JSON with ``"Caller line"`` in the args of each python_function event whose
    (start, name) is in ``lines``, and how many got one; ``data`` itself when none. Events are
    copied as raw JSON text: only the matched ones are touched."""
    top = msgspec.json.decode(data, type=dict[str, msgspec.Raw])
    base = msgspec.json.decode(top.get("baseTimeNanoseconds", b"0"))
    base = base if isinstance(base, int) and not isinstance(base, bool) else 0
    raw_events = msgspec.json.decode(top["traceEvents"], type=list[msgspec.Raw])
    events = msgspec.json.decode(top["traceEvents"], type=list[_Event])
    out: list[msgspec.Raw] = raw_events
    added = 0
    for i in [i for i, event in enumerate(events) if event.cat == "python_function"]:
        start = _ns(bytes(events[i].ts))
        line = -1 if start is None else lines.get((base + start, events[i].name), -1)
        if line < 0:
            continue
        spliced = _with_arg(bytes(raw_events[i]), line)
        if spliced is not None:
            out[i] = msgspec.Raw(spliced)
            added += 1
    if not added:
        return data, 0
    top["traceEvents"] = msgspec.Raw(msgspec.json.encode(out))
    return msgspec.json.encode(top), added


def _ns(ts: bytes) -> int | None:
    """A ``ts`` in microseconds as written (``5599973187743.352``) in nanoseconds, exactly."""
    if ts[-4:-3] == b"." and ts.isascii():  # torch's writing: three decimals
        digits = ts.replace(b".", b"", 1)
        if digits.lstrip(b"-").isdigit():
            return int(digits)
    whole, _, fraction = ts.strip().partition(b".")
    if not whole.lstrip(b"-").isdigit() or (fraction and not fraction.isdigit()):
        return None
    if len(fraction) > 3 and fraction[3:].strip(b"0"):
        return None  # finer than a nanosecond: not torch's writing
    ns = abs(int(whole)) * 1000 + int(fraction[:3].ljust(3, b"0") or b"0")
    return -ns if whole.startswith(b"-") else ns


def _with_arg(event: bytes, line: int) -> bytes | None:
    """The event's JSON with the caller line first in its args; None when it has no args
    object to put it in."""
    at = event.find(b'"args"')
    if at < 0:
        return None
    brace = event.find(b"{", at)
    if brace < 0 or event[at + 6 : brace].strip() != b":":
        return None
    rest = event[brace + 1 :]
    separator = b"" if rest.lstrip().startswith(b"}") else b", "
    return event[: brace + 1] + f'"{CALLER_LINE}": {line}'.encode() + separator + rest
