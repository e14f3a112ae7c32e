"""The sweep's widget: each metric's plot as report/sweep_layout.py lays it out, drawn by
js/sweep_widget.js, and the sweep's text. The page (Sweep.save_html) draws the same layouts as
SVG."""

from __future__ import annotations

from typing import Any

import anywidget
import msgspec
import traitlets

from gpuprofile.report.html_plots import PALETTE
from gpuprofile.report.sweep_layout import SweepPlot
from gpuprofile.widget.widget import built


class SweepWidget(anywidget.AnyWidget):
    _esm = built("sweep_widget.js")

    # One SweepPlot (as plain JSON) per metric measured: time, FLOPs, peak memory.
    plots: traitlets.List[dict[str, Any]] = traitlets.List().tag(sync=True)
    palette: traitlets.List[str] = traitlets.List().tag(sync=True)
    text = traitlets.Unicode("").tag(sync=True)


def sweep_widget(plots: list[SweepPlot], text: str) -> SweepWidget:
    widget = SweepWidget()
    widget.set_state({"plots": msgspec.to_builtins(plots), "palette": list(PALETTE), "text": text})
    return widget
