"""A profile with a baseline in JupyterLab: the baseline panel shows before/after bars, the
kernels that moved with their deltas, and the hints marked fixed or new, with trace names as
text. Two Kineto runs built by the test (tests/helpers/baseline_pair.py): the numbers the panel
must show are computed here from their events."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from widget_page import WIDGET, notebook_json, open_notebook

from gpuprofile.units import format_delta_time, format_time
from helpers.baseline_pair import run_events, write_pair
from helpers.hostile_trace import HOSTILE

pytestmark = pytest.mark.ui

US = 1000
PANEL = ".gpuprofile .gp-baseline"

CELL = """\
import gpuprofile

after = gpuprofile.load({after!r}, baseline={before!r})
print("GPUPROFILE_READY")
after
"""
REVERSED = """\
gpuprofile.load({before!r}, baseline={after!r})
"""


def _wall_ns(events: list[dict]) -> float:
    return (max(e["ts"] + e["dur"] for e in events) - min(e["ts"] for e in events)) * US


def _kernel_ns(events: list[dict], name: str) -> float:
    return sum(e["dur"] for e in events if e["cat"] == "kernel" and e["name"] == name) * US


def test_baseline_panel_shows_deltas_and_marks(
    page, jupyterlab: str, notebook_dir: Path, artifacts_dir: Path
) -> None:
    before, after = write_pair(notebook_dir)
    paths = {"before": str(before), "after": str(after)}
    name = "baseline.ipynb"
    (notebook_dir / name).write_text(
        json.dumps(notebook_json(CELL.format(**paths), REVERSED.format(**paths)))
    )
    open_notebook(page, jupyterlab, name, marker="GPUPROFILE_READY", widgets=2)
    page.wait_for_function(f"() => document.querySelectorAll('{PANEL}').length === 2")
    panels = page.locator(PANEL)
    first, second = panels.nth(0), panels.nth(1)
    # The pageable copy of "before" is gone in "after": fixed; the other way round: new.
    assert (first.get_attribute("data-fixed"), first.get_attribute("data-new")) == ("1", "0")
    assert (second.get_attribute("data-fixed"), second.get_attribute("data-new")) == ("0", "1")
    assert "pageable copy" in first.locator('li[data-mark="fixed"]').first.inner_text()
    assert "pageable copy" in second.locator('li[data-mark="new"]').first.inner_text()

    old = run_events(pinned=False, hostile_us=50)
    new = run_events(pinned=True, hostile_us=80, extra=True)
    wall = first.locator('tr[data-bar="wall_ns"] td').all_text_contents()
    assert wall[2:5] == [
        format_time(_wall_ns(old)),
        format_time(_wall_ns(new)),
        format_delta_time(_wall_ns(new) - _wall_ns(old)),
    ]
    # The hostile kernel moved most (+30 us, tied with the added one, and the longer of the
    # two); its name is text.
    row = first.locator('tr[data-delta-row="kernels:0"] td').all_text_contents()
    assert row[0] == HOSTILE
    delta = _kernel_ns(new, HOSTILE) - _kernel_ns(old, HOSTILE)
    assert row[1:4] == [
        format_time(_kernel_ns(old, HOSTILE)),
        format_time(_kernel_ns(new, HOSTILE)),
        format_delta_time(delta),
    ]
    added = first.locator('tr[data-delta-row="kernels:1"] td').all_text_contents()
    assert added[0].startswith("added_kernel") and "only in b" in added[0]
    assert page.evaluate("() => document.querySelectorAll('img[src=\"x\"]').length") == 0
    assert page.locator(WIDGET).count() == 2
    first.screenshot(path=str(artifacts_dir / "baseline-panel.png"))
