"""A --steps capture's --export: its kept windows as one Chrome trace.

The windows' files share a time base (one process, one Kineto clock), so one file holding the
first file's header and every file's events, in order, is a valid trace that Perfetto and HTA
open. Each event is copied as the bytes torch wrote (never decoded), and a "gpuprofile" entry,
ahead of the events, says where each window lies and which steps were recorded, so that
``gpuprofile.load`` gives back the same profile: windows, and a STEPS notice. Written to a
temporary name first, then renamed: a failure leaves no half-written file.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from gpuprofile.capture.counter_export import replace_whole
from gpuprofile.capture.windows import Window
from gpuprofile.importers.source import read_trace_bytes

_DOCUMENT = msgspec.json.Decoder(dict[str, msgspec.Raw])
_EVENTS = msgspec.json.Decoder(list[msgspec.Raw])


def write_joined(windows: Sequence[Window], path: Path, steps: dict[str, Any]) -> None:
    docs = [_DOCUMENT.decode(read_trace_bytes(w.path)) for w in windows]
    events = [event for doc in docs for event in _EVENTS.decode(doc["traceEvents"])]
    capture = {
        "steps": steps,
        "windows": [
            {"index": w.index, "step": w.step, "start_ns": w.start_ns, "end_ns": w.end_ns}
            for w in windows
        ],
    }
    joined: dict[str, Any] = {}
    for key, value in docs[0].items():
        if key == "traceEvents":
            # Ahead of the events: what follows them must stay plain "key": value pairs, for
            # counter_export to add the samples by rewriting only the tail.
            joined["gpuprofile"] = capture
            joined["traceEvents"] = events
        else:
            joined[key] = value
    replace_whole(path, msgspec.json.encode(joined))
