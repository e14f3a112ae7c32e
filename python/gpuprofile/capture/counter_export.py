"""The sampler's counters written into the Chrome trace torch exported (``--export``).

Perfetto and chrome://tracing then show them as counter tracks beside the profiler's events,
and gpuprofile reads them back as counters (importers/kineto/). Each sample is a ``"ph": "C"``
event whose name carries its unit ("process CPU [%]"), whose ``id`` is its device when it has
one, and whose ``args.value`` is the reading.

The file can be hundreds of megabytes: the events are inserted before the end of its
``traceEvents`` list by rewriting only the file's tail, not by parsing and writing it again.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
from pathlib import Path

import pandas as pd

from gpuprofile.importers.kineto import counter_name

# The tail of a Kineto file after its traceEvents list: "]" then only simple "key": value
# pairs up to the closing brace (torch 2.x writes `],"traceName": "..." }`).
_STRING = r'"(?:[^"\\]|\\.)*"'
_TAIL = re.compile(
    rb"\]\s*(?:,\s*" + _STRING.encode() + rb'\s*:\s*(?:' + _STRING.encode()
    + rb"|-?[0-9.eE+-]+|true|false|null)\s*)*\}\s*\Z"
)  # fmt: skip
_BASE = re.compile(rb'"baseTimeNanoseconds"\s*:\s*([0-9]+)')
_TAIL_BYTES = 1 << 16


class CounterExportError(Exception):
    """The file does not end as a Kineto trace does; it was left as it was."""


def append_counters(path: Path, counters: pd.DataFrame, origin_ns: int) -> None:
    """Add the counters (``time_ns`` from ``origin_ns``) to the trace file."""
    if counters.empty:
        return
    if path.suffix == ".gz":
        with gzip.open(path, "rb") as compressed:
            raw = compressed.read()
        replace_whole(path, _inserted(raw, counters, origin_ns))
        return
    with path.open("r+b") as file:
        head = file.read(_TAIL_BYTES)
        size = file.seek(0, os.SEEK_END)
        at = max(0, size - _TAIL_BYTES)
        file.seek(at)
        tail = file.read()
        close = _list_end(tail)
        events = _inserted_events(counters, origin_ns, _base_ns(head), _needs_comma(tail[:close]))
        file.seek(at + close)
        try:
            file.write(events + tail[close:])
            file.flush()
        except OSError:
            # Disk full, say: the old tail goes back where it was (no new space needed).
            file.seek(at + close)
            file.write(tail[close:])
            file.truncate(size)
            raise


def replace_whole(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (gzip-compressed for a .gz name) through a temporary file
    renamed over it: a failed write leaves the old file as it was."""
    partial = path.with_name(path.name + ".partial")
    try:
        if path.suffix == ".gz":
            with gzip.open(partial, "wb") as compressed:
                compressed.write(data)
        else:
            partial.write_bytes(data)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def _inserted(raw: bytes, counters: pd.DataFrame, origin_ns: int) -> bytes:
    start = max(0, len(raw) - _TAIL_BYTES)
    close = start + _list_end(raw[start:])
    base = _base_ns(raw[:_TAIL_BYTES])
    events = _inserted_events(counters, origin_ns, base, _needs_comma(raw[:close]))
    return raw[:close] + events + raw[close:]


def _list_end(tail: bytes) -> int:
    """Offset in ``tail`` of the "]" that closes traceEvents."""
    at = len(tail)
    while (at := tail.rfind(b"]", 0, at)) >= 0:
        if _TAIL.match(tail, at):
            return at
    raise CounterExportError("the file does not end with a traceEvents list")


def _needs_comma(before: bytes) -> bool:
    # An empty list ("[" just before) takes no separating comma.
    return not before.rstrip().endswith(b"[")


def _base_ns(head: bytes) -> int:
    found = _BASE.search(head)
    return int(found.group(1)) if found else 0


def counter_events(counters: pd.DataFrame, origin_ns: int, base_ns: int) -> list[bytes]:
    """Each sample as the JSON of one ``"ph": "C"`` event, its ``ts`` in microseconds from
    ``base_ns`` (the file's baseTimeNanoseconds) to the nanosecond."""
    pid = os.getpid()
    lines = []
    for name, unit, device, time_ns, value in zip(
        counters["name"].astype(str),
        counters["unit"].astype(str),
        counters["device"],
        counters["time_ns"],
        counters["value"],
        strict=True,
    ):
        if not math.isfinite(value):  # NaN is not JSON; a missing reading is no sample
            continue
        since_base = origin_ns + int(time_ns) - base_ns
        sign, since_base = ("-" if since_base < 0 else ""), abs(since_base)
        series = f'"id": {int(device)}, ' if device >= 0 else ""
        lines.append(
            f'{{"ph": "C", "cat": "gpuprofile_sample", '
            f'"name": {json.dumps(counter_name(name, unit))}, "pid": {pid}, "tid": 0, '
            f'"ts": {sign}{since_base // 1000}.{since_base % 1000:03d}, {series}'
            f'"args": {{"value": {float(value)!r}}}}}'.encode()
        )
    return lines


def _inserted_events(counters: pd.DataFrame, origin_ns: int, base_ns: int, comma: bool) -> bytes:
    lines = counter_events(counters, origin_ns, base_ns)
    text = b",\n".join(lines)
    return (b",\n" + text + b"\n") if comma and lines else (b"\n" + text + b"\n")
