"""A real GPU trace (A100 training step, ~75k events, CPU threads and 4 CUDA streams) in the widget.

The notebook is written by the test into the served temporary copy (not the repository); the
trace is read from ../shared/traces, and the test skips when that is absent.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prerequisites import SHARED_TRACES, require_trace

pytestmark = [pytest.mark.ui, pytest.mark.traces]

TRACE = SHARED_TRACES / "kineto" / "hta_a100_train_rank3_of8_async_cpu_to_gpu.json.gz"
TIMELINE = ".gpuprofile .gp-timeline"
CANVAS = ".gpuprofile .gp-timeline canvas"
AXIS_H = 24

SOURCE = """\
import json

import gpuprofile
from gpuprofile.widget.timeline import timeline_data

p = gpuprofile.load({trace!r})
report = p.report()
keys = ('ops', 'runtime', 'kernels', 'memcpy', 'memset')
counts = {{k: sum(r['counts'][k] for r in report['ranks']) for k in keys}}
counts['lanes'] = len(timeline_data(p.trace).lanes)
print('GPUPROFILE_COUNTS', json.dumps(counts))
p
"""


def _notebook(source: str) -> dict:
    return {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "id": "trace",
                "metadata": {},
                "outputs": [],
                "source": source,
            }
        ],
        "metadata": {
            "kernelspec": {
                "display_name": "Python 3 (ipykernel)",
                "language": "python",
                "name": "python3",
            }
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def test_gpu_trace_widget(page, run_notebook, notebook_dir: Path, artifacts_dir: Path) -> None:
    require_trace(TRACE)
    (notebook_dir / "trace.ipynb").write_text(
        json.dumps(_notebook(SOURCE.format(trace=str(TRACE))))
    )
    expected = run_notebook("trace.ipynb")

    root = page.locator('.gpuprofile[data-gpuprofile="ready"]').first
    timeline = page.locator(TIMELINE).first
    for key in ("ops", "kernels", "memcpy", "memset"):
        assert int(root.get_attribute(f"data-{key}")) == expected[key], key
    assert expected["kernels"] > 0 and expected["memcpy"] > 0
    # Every op, runtime call, kernel, copy and memset is one decoded row of the GPT1 table.
    total = sum(expected[k] for k in ("ops", "runtime", "kernels", "memcpy", "memset"))
    assert int(timeline.get_attribute("data-events")) == total
    assert int(timeline.get_attribute("data-lanes")) == expected["lanes"]
    # Drawing every event at the full view stays interactive.
    draw_ms = float(timeline.get_attribute("data-draw-ms"))
    print(f"full-view draw of {total} events: {draw_ms} ms")
    assert draw_ms < 250

    root.scroll_into_view_if_needed()
    root.screenshot(path=str(artifacts_dir / "trace-widget.png"))

    # Zoom far in over the middle of the plot; the view narrows each time and stays in [0, span].
    canvas = page.locator(CANVAS).first
    box = canvas.bounding_box()
    assert box
    page.mouse.move(box["x"] + box["width"] * 0.55, box["y"] + AXIS_H + 10)
    widths = []
    for _ in range(6):
        start = float(timeline.get_attribute("data-view-start-ns"))
        end = float(timeline.get_attribute("data-view-end-ns"))
        widths.append(end - start)
        page.mouse.wheel(0, -500)
        page.wait_for_function(
            "([sel, w]) => { const d = document.querySelector(sel).dataset;"
            " return Number(d.viewEndNs) - Number(d.viewStartNs) < w; }",
            arg=[TIMELINE, end - start],
        )
    start = float(timeline.get_attribute("data-view-start-ns"))
    end = float(timeline.get_attribute("data-view-end-ns"))
    assert start >= 0 and end - start < widths[0] / 100
    page.wait_for_timeout(100)  # one frame
    root.screenshot(path=str(artifacts_dir / "trace-widget-zoomed.png"))
