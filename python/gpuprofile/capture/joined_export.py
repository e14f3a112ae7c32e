"""A --steps capture's --export: its kept windows, and the sampler's readings, as one Chrome
trace.

The windows' files share a time base (one process, one Kineto clock), so one file holding the
first file's header and every file's events, in order, is a valid trace that Perfetto and HTA
open. Each event is copied as the bytes torch wrote (never decoded), the readings follow as
counter events, and a "gpuprofile" entry (``StepsEntry``) says where each window lies and which
steps were recorded, so that ``gpuprofile.load`` gives back the same profile: windows, and a
STEPS notice. Written once, to a temporary name first, then renamed: a failure leaves no
half-written file.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import pandas as pd

from gpuprofile.capture.counter_export import counter_events, replace_whole
from gpuprofile.importers.source import read_trace_bytes
from gpuprofile.importers.windows import RecordedWindow
from gpuprofile.trace.meta import Steps, StepsEntry

_DOCUMENT = msgspec.json.Decoder(dict[str, msgspec.Raw])
_EVENTS = msgspec.json.Decoder(list[msgspec.Raw])


def write_joined(
    recorded: Sequence[RecordedWindow],
    path: Path,
    steps: Steps | None,
    counters: pd.DataFrame,
    origin_ns: int,
) -> None:
    """Write the windows' events, then the counters (``time_ns`` from ``origin_ns``), to
    ``path`` (gzip-compressed for a .gz name)."""
    docs = [_DOCUMENT.decode(read_trace_bytes(r.path)) for r in recorded]
    events = [event for doc in docs for event in _EVENTS.decode(doc["traceEvents"])]
    base = (
        msgspec.json.decode(docs[0]["baseTimeNanoseconds"])
        if "baseTimeNanoseconds" in docs[0]
        else 0
    )
    events += [msgspec.Raw(e) for e in counter_events(counters, origin_ns, int(base or 0))]
    entry = StepsEntry(steps=steps, windows=tuple(r.window for r in recorded))
    joined: dict[str, Any] = {}
    for key, value in docs[0].items():
        if key == "traceEvents":
            joined["gpuprofile"] = entry
        joined[key] = events if key == "traceEvents" else value
    replace_whole(path, msgspec.json.encode(joined))
