"""The notebook widget: declares state only; data is prepared by timeline.py and encoding.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anywidget
import traitlets

from gpuprofile.widget.encoding import encode_table
from gpuprofile.widget.timeline import KINDS, timeline_data

_STATIC = Path(__file__).parent / "static"


class ProfileWidget(anywidget.AnyWidget):
    _esm = _STATIC / "widget.js"
    _css = _STATIC / "widget.css"

    # The report dict (gpuprofile.report/1) plus "partial" and "text".
    summary = traitlets.Dict().tag(sync=True)
    # Timeline lanes: {"id", "rank", "kind": "cpu"|"gpu", "label", "rows"}.
    lanes: traitlets.List[dict[str, object]] = traitlets.List().tag(sync=True)
    # Symbol table: the "name" column holds indexes into it.
    names = traitlets.List(traitlets.Unicode()).tag(sync=True)
    kinds = traitlets.List(traitlets.Unicode(), default_value=list(KINDS)).tag(sync=True)
    # GPT1 table: start_ns f64, dur_ns f32, name u32, lane u16, row u16, kind u8.
    events = traitlets.Bytes(b"").tag(sync=True)
    span_ns = traitlets.Float(0.0).tag(sync=True)


def make_widget(summary: dict[str, Any], trace: Any) -> ProfileWidget:
    data = timeline_data(trace)
    span = 0.0
    if len(data.columns["start_ns"]):
        span = float((data.columns["start_ns"] + data.columns["dur_ns"]).max())
    return ProfileWidget(
        summary=summary,
        lanes=data.lanes,
        names=data.names,
        events=encode_table(data.columns),
        span_ns=span,
    )
