"""A job of 8 ranks in the widget (DLRM on 8 V100s, ../shared/traces): 8 rank groups on one
time axis, the rank x step view with the straggler marked, a click on a rank (in that view or
on its group's header) focusing the timeline on it, and a click on an NCCL kernel listing the
same all-reduce on every rank, linked across ranks. Expected values come from the kernel's
own report and matched collectives, printed by the cell."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from widget_page import (
    AXIS_H,
    DETAILS_TITLE,
    TIMELINE,
    hover_find,
    notebook_json,
    open_notebook,
    plot,
    printed,
    wait_data,
)

from helpers.prerequisites import SHARED_TRACES, require_trace

pytestmark = pytest.mark.ui

DLRM = SHARED_TRACES / "kineto-distributed" / "param_dlrm_8xV100"
ALLREDUCE = "ncclKernel_AllReduce"

CELL = """\
import json
import gpuprofile

job = gpuprofile.load({job!r})
report = job.report()
d = report["distributed"]
c = job.analysis.collectives
names = job.trace.kernels["name"].astype(str)
allreduce = set(job.trace.kernels["id"][names.str.startswith({name!r})].tolist())
mine = c[(c["table"] == "kernels") & c["event_id"].isin(allreduce)]
print("GPUPROFILE_JOB", json.dumps({{
    "ranks": [r["rank"] for r in report["ranks"]],
    "steps": len(d["steps"]),
    "straggler": d["stragglers"][0]["rank"],
    "instance_ranks": sorted(set(mine.groupby("instance").size().tolist())),
    "last_ranks": sorted(set(mine[mine["last"]]["rank"].tolist())),
}}))
job
"""


@pytest.fixture(scope="module")
def expected(module_page, jupyterlab: str, notebook_dir: Path) -> dict:
    require_trace(DLRM)
    cell = CELL.format(job=str(DLRM), name=ALLREDUCE)
    (notebook_dir / "job_ranks.ipynb").write_text(json.dumps(notebook_json(cell)))
    outputs = open_notebook(module_page, jupyterlab, "job_ranks.ipynb", marker="GPUPROFILE_JOB")
    found: dict = printed(outputs, "GPUPROFILE_JOB")
    return found


def test_ranks_focus_and_matched_collectives(module_page, expected: dict, artifacts_dir) -> None:
    page = module_page
    ranks = expected["ranks"]
    assert len(ranks) == 8
    # 8 rank groups on one timeline, all expanded (8 is not past the collapse threshold).
    wait_data(page, TIMELINE, "data-ranks", "v === '8'")
    assert page.locator(TIMELINE).first.get_attribute("data-collapsed-ranks") == "0"

    # The rank x step view: a row per rank, a column per step and the mean, the straggler marked.
    view = page.locator(".gpuprofile .gp-ranks").first
    view.scroll_into_view_if_needed()
    rows = view.locator("tbody tr")
    assert rows.count() == 8
    assert rows.first.locator("td").count() == expected["steps"] + 1
    straggler = expected["straggler"]
    marked = view.locator("tr.gp-ranks-is-straggler")
    assert marked.count() == 1 and marked.get_attribute("data-rank") == str(straggler)
    assert f"straggler: rank {straggler}" in view.locator(".gp-ranks-straggler").inner_text()
    assert page.locator(TIMELINE).first.get_attribute("data-straggler") == str(straggler)
    view.screenshot(path=str(artifacts_dir / "job-ranks-steps.png"))

    # A click on a rank in the view focuses the timeline on it: the 7 others collapse.
    view.locator('button.gp-ranks-rank[data-rank="5"]').click()
    wait_data(page, TIMELINE, "data-focused-rank", "v === '5'")
    assert page.locator(TIMELINE).first.get_attribute("data-collapsed-ranks") == "7"
    assert "gp-ranks-focused" in (view.locator('tr[data-rank="5"]').get_attribute("class") or "")
    p = plot(page)
    page.screenshot(path=str(artifacts_dir / "job-ranks-focused.png"))
    # Its group's header is now at the top of the plot: a click there shows every rank again.
    page.mouse.click(p.x + 120, p.y + AXIS_H + 10)
    wait_data(page, TIMELINE, "data-focused-rank", "v === ''")
    assert page.locator(TIMELINE).first.get_attribute("data-collapsed-ranks") == "0"

    # Focus rank 0 from its header (the plot's first row, scrolled to the top), then find an
    # all-reduce there.
    page.evaluate("() => { document.querySelector('.gpuprofile .gp-scroller').scrollTop = 0; }")
    page.mouse.click(p.x + 120, p.y + AXIS_H + 10)
    wait_data(page, TIMELINE, "data-focused-rank", "v === '0'")
    search = page.locator(".gpuprofile .gp-search-input").first
    search.fill(ALLREDUCE)
    wait_data(page, TIMELINE, "data-search-count", "v !== '0'")
    search.press("Enter")
    wait_data(page, TIMELINE, "data-selected-id", "v !== ''")
    page.keyboard.press("Escape")  # clear the selection: the click below makes it again
    p = plot(page)
    xs = [p.x_of_fraction(f) for f in (0.5, 0.45, 0.55, 0.4, 0.6)]
    hit = hover_find(page, p, xs, lambda text: ALLREDUCE in text)
    assert hit, "no all-reduce kernel under the pointer after the search zoomed to one"
    page.mouse.click(hit[0], hit[1])
    # The details list the same all-reduce on every rank, with the last to arrive marked.
    assert ALLREDUCE in page.locator(DETAILS_TITLE).first.inner_text()
    n = wait_data(page, TIMELINE, "data-collective-ranks", "v !== null && v !== '0'")
    assert [int(n)] == expected["instance_ranks"] == [8]
    last = page.locator(TIMELINE).first.get_attribute("data-collective-last")
    assert int(last) in expected["last_ranks"]
    listed = page.locator(".gpuprofile .gp-details-collective button")
    assert listed.count() == 8
    assert listed.locator("text=(last)").count() == 1
    assert f"rank {last} (last)" in page.locator(".gpuprofile .gp-details-last").inner_text()
    # Links drawn across ranks: one to the last rank's kernel from each of the 7 others.
    assert int(page.locator(TIMELINE).first.get_attribute("data-flows") or 0) >= 7
    page.screenshot(path=str(artifacts_dir / "job-ranks-collective.png"))
