"""The Kineto reader's extent stage: how many timeline events a file torch wrote holds,
and when they start and end, without reading it into a Trace (the capture's recorder asks
this of each window it writes)."""

from __future__ import annotations

from pathlib import Path

import msgspec
import numpy as np

from gpuprofile.importers.kineto.decode import nesting_limit
from gpuprofile.importers.kineto.format import table_of
from gpuprofile.importers.kineto.gather import exact_ns_of
from gpuprofile.importers.source import read_trace_bytes


class _Stamp(msgspec.Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str = ""
    ts: int | float | None = None
    dur: int | float | None = None


class _Stamps(msgspec.Struct, gc=False):
    traceEvents: list[_Stamp]
    baseTimeNanoseconds: int | None = None


_STAMPS_DECODER = msgspec.json.Decoder(_Stamps)


def scan_extent(path: Path) -> tuple[int, int, int] | None:
    """(timeline events, start, end) of a Kineto file torch wrote, start and end absolute ns:
    the first start and the last end of the events the importer puts into tables (so start is
    the Trace's origin_ns); None when it has none. Decodes only those fields: a fraction of
    reading the file."""
    with nesting_limit():
        doc = _STAMPS_DECODER.decode(read_trace_bytes(path))
    stamped = [e for e in doc.traceEvents if e.ts is not None and table_of(e.ph, e.cat, e.name)]
    if not stamped:
        return None
    # As the importer does: ts and dur each to whole nanoseconds, then added.
    ts = exact_ns_of(np.array([float(e.ts) for e in stamped]))  # type: ignore[arg-type]
    dur = exact_ns_of(np.array([float(e.dur or 0) if e.ph == "X" else 0.0 for e in stamped]))
    base = doc.baseTimeNanoseconds or 0
    events = sum(e.ph == "X" for e in stamped)
    return events, base + int(ts.min()), base + int((ts + dur).max())
