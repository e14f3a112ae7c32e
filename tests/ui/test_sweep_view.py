"""%%gpuprofile --sweep in JupyterLab: the sweep's widget draws each metric's plot (points and
fitted lines) with the text, and the static copy beside it stays hidden while it shows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from widget_page import notebook_json, start_notebook

pytestmark = pytest.mark.ui

CELLS = [
    "%load_ext gpuprofile",
    "import torch\nclass Square(torch.nn.Module):\n"
    "    def forward(self, x):\n        return x @ x\nsquare = Square()",
    "%%gpuprofile --sweep N=16,32,64 --repeat 2 --warmup 0\nsquare(torch.ones(N, N))",
]


def test_a_sweep_cell_draws_its_plots(
    page, jupyterlab: str, notebook_dir: Path, artifacts_dir: Path
) -> None:
    (notebook_dir / "sweep.ipynb").write_text(json.dumps(notebook_json(*CELLS)))
    start_notebook(page, jupyterlab, "sweep.ipynb")
    root = page.locator(".gpuprofile-sweep-live").first
    root.wait_for(timeout=120_000)
    charts = root.locator("svg.gp-sweep-chart")
    assert charts.count() == int(root.get_attribute("data-plots") or 0) == 2  # time, FLOPs
    flops = root.locator('svg[data-metric="flops"]')
    # The step and the Square module, each a point per value and a fitted line.
    square = flops.locator('g.gp-sweep-series[data-subject="Square"]')
    assert square.locator("circle.point").count() == 3
    assert square.locator("line").count() >= 1
    assert "Square grows as" in root.inner_text() and "N^3.0" in root.inner_text()
    static = page.locator(".gpuprofile-sweep-static")
    assert static.count() == 1 and not static.is_visible()
    page.screenshot(path=str(artifacts_dir / "sweep-widget.png"), full_page=True)
