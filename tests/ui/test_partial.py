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
