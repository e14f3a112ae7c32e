"""While a %%gpuprofile cell computes, its widget is already on screen and its live panel moves:
elapsed time and the sampler's readings (process CPU %, RSS) change in the page while the cell is
still running; when it ends, the same widget shows the profile.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from widget_page import (
    AXIS_H,
    HEADER_H,
    TIMELINE,
    focus_plot,
    notebook_json,
    plot,
    start_notebook,
    view,
)

pytestmark = pytest.mark.ui

LIVE = ".gpuprofile .gp-live"
CELL = """\
%%gpuprofile --interval 0.1
import time
import torch
x = torch.randn(256, 256)
end = time.time() + 6
while time.time() < end:
    x = torch.tanh(x @ x / 256)
print("GPUPROFILE_CELL_DONE")
"""


def _start(page, jupyterlab: str, path: Path, cell: str) -> None:
    """Write a notebook of the cell, open it and start running it; do not wait for it."""
    path.write_text(json.dumps(notebook_json("%load_ext gpuprofile", cell)))
    start_notebook(page, jupyterlab, path.name)


def _live_state(page) -> dict:
    return page.evaluate(
        """(sel) => {
            const el = document.querySelector(sel);
            if (!el) return null;
            const readings = {};
            for (const r of el.querySelectorAll('[data-reading]')) {
                readings[r.dataset.reading] = Number(r.dataset.value);
            }
            return {running: el.dataset.liveRunning, elapsed: Number(el.dataset.elapsedS),
                    readings,
                    done: [...document.querySelectorAll('.jp-OutputArea-output')]
                        .some(o => o.textContent.includes('GPUPROFILE_CELL_DONE'))};
        }""",
        LIVE,
    )


def test_live_panel_moves_while_the_cell_runs(
    page, jupyterlab: str, notebook_dir: Path, artifacts_dir: Path
) -> None:
    _start(page, jupyterlab, notebook_dir / "live.ipynb", CELL)
    page.wait_for_function(
        "(sel) => { const el = document.querySelector(sel);"
        " return el && el.dataset.liveRunning === 'true' && Number(el.dataset.elapsedS) > 0; }",
        arg=LIVE,
        timeout=60_000,
    )
    seen = []
    deadline = time.monotonic() + 4
    while time.monotonic() < deadline:
        state = _live_state(page)
        if state["done"] or state["running"] != "true":
            break
        seen.append(state)
        time.sleep(0.4)
    page.locator(".gpuprofile").first.screenshot(path=str(artifacts_dir / "live-running.png"))
    # Several readings taken while the cell was still computing, and they moved.
    assert len(seen) >= 3, seen
    elapsed = [s["elapsed"] for s in seen]
    assert elapsed == sorted(elapsed) and elapsed[-1] > elapsed[0], elapsed
    # A CPU share needs a span to be measured over: it may be missing from the first reading,
    # and once shown it stays.
    cpu_key = "process CPU (100% = 1 core)@-1"
    first_cpu = next(i for i, s in enumerate(seen) if cpu_key in s["readings"])
    assert first_cpu <= 1 and len(seen) - first_cpu >= 3, seen
    cpu = [s["readings"].get(cpu_key) for s in seen[first_cpu:]]
    rss = [s["readings"].get("process RSS@-1") for s in seen]
    assert all(v is not None for v in cpu + rss), seen[-1]["readings"]
    assert len(set(cpu)) > 1 or len(set(rss)) > 1, (cpu, rss)
    # The loop keeps a core busy: the process CPU share reads well above idle.
    assert max(cpu) > 50, cpu
    # No GPU here: the panel says NVML is not sampled and why.
    assert "nvml" in page.locator(LIVE).first.inner_text().lower()

    # The cell ends: the same widget becomes the profile (one widget, now with its timeline).
    page.wait_for_function(
        "(sel) => document.querySelector(sel).dataset.liveRunning === 'false'",
        arg=LIVE,
        timeout=60_000,
    )
    page.wait_for_function(
        "() => Number(document.querySelector('.gpuprofile .gp-timeline')?.dataset.events) > 0",
        timeout=60_000,
    )
    assert page.locator(".gpuprofile").count() == 1
    assert int(page.locator(".gpuprofile").first.get_attribute("data-ops")) > 0
    # Built and shown: the panel no longer says the profile is being built.
    page.wait_for_function(
        "(sel) => document.querySelector(sel).dataset.liveBuilding === 'false'",
        arg=LIVE,
        timeout=30_000,
    )
    # The cell's run time and the report's wall differ (the profiler's start and stop): each
    # says what it is, side by side.
    elapsed = page.locator(f"{LIVE} .gp-live-elapsed").first
    assert "profiler start and stop included" in elapsed.inner_text()
    # The cell makes no step: the panel does not count "0 steps".
    assert page.locator(f"{LIVE} .gp-live-steps").count() == 0
    assert "first to last recorded event" in elapsed.get_attribute("title")
    wall = page.locator('.gpuprofile .gp-stat[data-stat="wall"]').first
    assert "first to last event" in wall.inner_text()
    assert "profiler" in wall.get_attribute("title")
    page.locator(".gpuprofile").first.screenshot(path=str(artifacts_dir / "live-finished.png"))


# The test, not the machine's speed, says when the cell has run long enough: the cell makes steps
# until the test, having seen the refills it checks, writes the stop file ({stop}); it prints how
# many steps it made, the count the widget must show. A loaded machine only makes it run longer.
STEPS_CELL = """\
%%gpuprofile --steps 0,1 --interval 0.1
import os
import time
import torch
import gpuprofile
x = torch.randn(128, 128)
made = 0
give_up = time.time() + 240
while made < 4 or (not os.path.exists({stop!r}) and time.time() < give_up):
    end = time.time() + 0.5
    while time.time() < end:
        x = torch.tanh(x @ x / 128)
    gpuprofile.step()
    made += 1
print(f"GPUPROFILE_CELL_DONE steps={{made}}")
"""


# The selected event as the details pane names it: its title, and its duration and start from
# the timings line ("dur · from start to end"). Ids change from one refill to the next, the
# event's name and times do not; its end is left out: while the cell runs the pane shows the
# timeline table's duration (float32), once it ends the trace's own.
_SELECTED = """() => {
    const id = document.querySelector('.gpuprofile .gp-timeline')?.dataset.selectedId;
    const pane = document.querySelector('.gpuprofile .gp-details');
    if (!id || id === '-1' || !pane || pane.hidden) return null;
    const timings = [...pane.querySelectorAll('.gp-details-line')]
        .map((l) => l.textContent.match(/^(.+ · from .+) to /)).find(Boolean);
    return {title: pane.querySelector('.gp-details-title').textContent, timings: timings?.[1]};
}"""


def test_timeline_grows_step_by_step(
    page, jupyterlab: str, notebook_dir: Path, artifacts_dir: Path
) -> None:
    stop = notebook_dir / "steps.stop"
    stop.unlink(missing_ok=True)
    _start(page, jupyterlab, notebook_dir / "steps.ipynb", STEPS_CELL.format(stop=str(stop)))
    page.wait_for_function(
        "(sel) => document.querySelector(sel)?.dataset.liveRunning === 'true'",
        arg=LIVE,
        timeout=60_000,
    )
    counts: list[tuple[int, int]] = []  # (events on the timeline, steps) while running
    zoomed: tuple[tuple[float, float], int] | None = None  # (view, events) once zoomed in
    kept_views: list[tuple[float, float]] = []  # the view after each later refill
    # (events, whole data?, selected id) after a refill
    kept_selections: list[tuple[int, str | None, str | None]] = []
    selected_before: str | None = None
    shown_before: dict | None = None  # the details pane of the selection, at the last refill
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        state = page.evaluate(
            """(sel) => ({
                running: document.querySelector(sel)?.dataset.liveRunning,
                steps: Number(document.querySelector(sel)?.dataset.steps),
                events: Number(document.querySelector('.gpuprofile .gp-timeline')
                    ?.dataset.events || 0),
            })""",
            LIVE,
        )
        if state["running"] != "true":
            break
        counts.append((state["events"], state["steps"]))
        # One user action per poll, so refills keep being watched; a refill that replaced the
        # timeline mid-action leaves it undone, and it is tried again at the next poll.
        if zoomed is None and state["events"] > 0:
            # A user zooms in while the cell runs: later refills must not undo it.
            box = plot(page)
            focus_plot(page, box)
            page.mouse.move(box.x_of_fraction(0.5), box.y + AXIS_H + HEADER_H + 10)
            whole = view(page)
            for _ in range(3):
                page.keyboard.press("w")
            if view(page) != whole:
                zoomed = (view(page), state["events"])
                # The widget's element, marked: a view drawn afresh would not carry the mark.
                page.evaluate("() => { document.querySelector('.gpuprofile').dataset.seen = 'y'; }")
        elif zoomed is not None and not selected_before:
            # ... and selects an event, which later refills must keep selected.
            box = plot(page)
            page.mouse.click(box.x_of_fraction(0.5), box.y + AXIS_H + HEADER_H + 10)
            selected = page.locator(TIMELINE).first.get_attribute("data-selected-id")
            if selected not in (None, "", "-1"):
                selected_before, zoomed = selected, (zoomed[0], state["events"])
        elif selected_before and state["events"] > zoomed[1]:  # type: ignore[index]
            kept_views.append(view(page))
            complete = page.locator(TIMELINE).first.get_attribute("data-complete")
            selected = page.locator(TIMELINE).first.get_attribute("data-selected-id")
            kept_selections.append((state["events"], complete, selected))
            shown_before = page.evaluate(_SELECTED)
        seen_enough = (
            len({e for e, _ in counts if e > 0}) >= 2
            and max(s for _, s in counts) >= 3
            and len(kept_selections) >= 2
        )
        if seen_enough and not stop.exists():
            stop.write_text("")
        time.sleep(0.25)
    page.locator(".gpuprofile").first.screenshot(path=str(artifacts_dir / "live-steps.png"))
    events = [e for e, _ in counts]
    # Recorded windows reached the timeline while the cell ran, more of them as it went on.
    assert len({e for e in events if e > 0}) >= 2, counts
    assert events == sorted(events), counts
    assert max(s for _, s in counts) >= 3, counts
    assert zoomed is not None and kept_views, counts
    assert all(v == zoomed[0] for v in kept_views), (zoomed[0], kept_views)
    assert selected_before, "the click selected no event"
    # Every refill crosses whole (live.LIVE_DETAIL_THRESHOLD: the busy kernel could not answer
    # for the detail of an overview, past DETAIL_THRESHOLD events as on a slow machine) and
    # finds the selected event again; ids change between refills, so only "an event (not a
    # merged box) is selected" is compared.
    assert len(kept_selections) >= 2, kept_selections
    assert all(complete == "true" for _, complete, _ in kept_selections), kept_selections
    kept = [selected not in (None, "", "-1") for _, _, selected in kept_selections]
    assert all(kept), kept_selections
    page.wait_for_function(
        "(sel) => document.querySelector(sel).dataset.liveBuilding === 'false'"
        " && document.querySelector(sel).dataset.liveRunning === 'false'",
        arg=LIVE,
        timeout=60_000,
    )
    done = page.locator(".jp-OutputArea-output", has_text="GPUPROFILE_CELL_DONE").first
    made = done.inner_text().split("steps=")[1].split()[0]
    assert page.locator(LIVE).first.get_attribute("data-steps") == made
    # The report names the steps the windows recorded.
    steps_notice = page.locator('.gpuprofile .gp-notice[data-notice="steps"]').first
    assert steps_notice.inner_text().startswith("STEPS: recorded ")
    # The cell ended and its widget was filled with the profile: the same view on the page (not
    # a new one), still at the user's zoom, with the same event selected.
    assert page.locator(".gpuprofile").count() == 1
    assert page.locator(".gpuprofile").first.get_attribute("data-seen") == "y"
    assert shown_before and shown_before["timings"], shown_before
    # Its details come once the kernel, free again, answers for them.
    deadline = time.monotonic() + 30
    while (shown_after := page.evaluate(_SELECTED)) != shown_before and time.monotonic() < deadline:
        time.sleep(0.25)
    assert shown_after == shown_before
    assert view(page) == zoomed[0], (zoomed[0], view(page))
