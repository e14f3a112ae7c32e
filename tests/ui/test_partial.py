"""A %%gpuprofile cell that raises: the error shows as usual and the widget says PARTIAL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from widget_page import WIDGET, notebook_json, start_notebook

pytestmark = pytest.mark.ui

CELLS = [
    "%load_ext gpuprofile",
    "%%gpuprofile\nimport torch\ntotal = torch.ones(1000).cumsum(0)\n"
    "raise ValueError('boom in the profiled cell')",
]


def test_a_raising_cell_shows_a_partial_profile_and_its_error(
    page, jupyterlab: str, notebook_dir: Path, artifacts_dir: Path
) -> None:
    (notebook_dir / "partial.ipynb").write_text(json.dumps(notebook_json(*CELLS)))
    start_notebook(page, jupyterlab, "partial.ipynb")
    widget = page.locator(WIDGET).first
    widget.wait_for(timeout=90_000)
    page.wait_for_function(
        "() => [...document.querySelectorAll('.jp-OutputArea-output')]"
        ".some(o => o.textContent.includes('boom in the profiled cell'))",
        timeout=30_000,
    )
    assert widget.get_attribute("data-partial") == "true"
    assert int(widget.get_attribute("data-ops") or 0) > 0
    banner = widget.locator('.gp-notice[data-notice="partial"]')
    assert banner.is_visible() and "PARTIAL" in banner.inner_text()
    outputs = "\n".join(page.locator(".jp-OutputArea-output").all_text_contents())
    assert "ValueError" in outputs and "raise ValueError" in outputs
    page.screenshot(path=str(artifacts_dir / "partial-widget.png"), full_page=True)


OOM_CELLS = [
    "%load_ext gpuprofile",
    "import torch\n"
    "class Block(torch.nn.Module):\n"
    "    def forward(self, q):\n"
    "        scores = (q @ q.transpose(-1, -2)).softmax(-1)\n"
    "        torch.empty(1 << 60, dtype=torch.uint8)  # the CPU allocator refuses this\n"
    "        return scores @ q\n"
    "class Model(torch.nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.block = Block()\n"
    "    def forward(self, q):\n"
    "        return self.block(q)\n"
    "model = Model()",
    "%%gpuprofile --memory\nwith torch.no_grad():\n    model(torch.randn(1, 2, 256, 8))",
]


def test_an_out_of_memory_cell_shows_its_post_mortem(
    page, jupyterlab: str, notebook_dir: Path, artifacts_dir: Path
) -> None:
    (notebook_dir / "oom.ipynb").write_text(json.dumps(notebook_json(*OOM_CELLS)))
    start_notebook(page, jupyterlab, "oom.ipynb")
    widget = page.locator(WIDGET).first
    widget.wait_for(timeout=90_000)
    panel = widget.locator('.gp-memory-panel[data-oom="yes"]')
    panel.wait_for(timeout=90_000)
    assert widget.get_attribute("data-partial") == "true"
    text = panel.inner_text()
    # The request the cell's code made (1 << 60 bytes), and the score matrix it had made: one
    # 1 x 2 x 256 x 256 float block, 524 kB, that SDPA would never materialise.
    assert "Out of memory" in text and "It asked for 1153 PB" in text
    assert "frees 524 kB: use torch.nn.functional.scaled_dot_product_attention" in text
    assert int(panel.get_attribute("data-areas") or 0) >= 1
    assert panel.locator("polygon[data-category]").count() >= 1
    page.screenshot(path=str(artifacts_dir / "oom-widget.png"), full_page=True)
