"""What the widget's ``summary`` trait carries beside the report's JSON (widget/widget.py): typed
here, in the report layer, so that schema_gen writes them into js/model/report_types.d.ts from
the same Python the widget sends, and the JS reading them is checked against it."""

from __future__ import annotations

from typing import TypedDict

from gpuprofile.report.diff_text import StepNoise
from gpuprofile.report.memory_layout import MemoryLayout
from gpuprofile.report.module_layout import ModuleLayout
from gpuprofile.report.roofline_layout import RooflineLayout


class SummaryExtras(TypedDict, total=False):
    """Beside the report: its text; the roofline chart and the module tree laid out (None: no
    module rows, no view); the baseline's step verdict. A timeline alone (no report) carries
    only ``text``. The widget sends it through ``msgspec.to_builtins`` (the layout's
    dataclasses become dicts)."""

    text: str
    roofline_layout: RooflineLayout
    module_layout: ModuleLayout | None
    memory_layout: MemoryLayout | None  # None: no rank recorded memory
    step_noise: StepNoise | None
    workload_line: str | None  # report/workload_text.py's line; None: a report without one
