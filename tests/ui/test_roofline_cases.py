"""The roofline panel on two cases the H100 trace of test_panels does not have: roofs so close
that their lines nearly touch, with a point far above the DRAM roof (a trace the test writes,
against roofs it gives); a multi-rank job whose ops recorded no shapes, so no point has a
FLOP count and there is nothing to plot; and DLRM on 8 V100s (../shared/traces), whose heaviest
points are collectives without FLOPs, but whose roofline still shows the kernels it can place.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from widget_page import notebook_json, open_notebook, printed, roof_label_overlaps

from helpers.kineto_docs import cpu_op, document, kernel, runtime, write
from helpers.prerequisites import SHARED_TRACES, require_trace

pytestmark = pytest.mark.ui

DLRM = SHARED_TRACES / "kineto-distributed" / "param_dlrm_8xV100"

CROWDED = """\
import json
import gpuprofile
from gpuprofile.hardware.model import Hardware

# Four compute roofs within 30% of each other, and a DRAM roof of 30 GB/s: the 64x64 matmuls
# (49 KB in 1 us each) run at 49 GB/s, above it (past twice a roof, a figure is taken for a
# wrong roof or count and not plotted: issue 16).
hw = Hardware(name="crowded", source="user", dram_bytes_per_s=30e9,
              peak_flops={{"fp32": 1.0e15, "tf32": 1.1e15, "fp16": 1.2e15, "bf16": 1.3e15}})
p = gpuprofile.load({trace!r}, hardware=hw)
points = p.report()["roofline"]["points"]
over = [i for i, pt in enumerate(points) if pt["roof"] == "dram" and pt["pct_of_roof"] > 100]
print("GPUPROFILE_EXPECT", json.dumps({{"over": over}}))
p
"""

JOB_CELL = """\
import json
import gpuprofile

job = gpuprofile.load({job!r})
report = job.report()
print({marker!r}, json.dumps({{
    "ranks": len(report["ranks"]),
    "points": len(report["roofline"]["points"]),
    "with_flops": sum(1 for pt in report["roofline"]["points"] if pt["flops"]),
}}))
job
"""


def _job_without_shapes(folder: Path) -> Path:
    """Two ranks of a job whose ops recorded no shapes: a gemm and an all-reduce each."""
    folder.mkdir(exist_ok=True)
    for rank in range(2):
        events = [
            cpu_op("aten::mm", 0, 50, ext=1),
            runtime("cudaLaunchKernel", 5, 5, corr=1),
            kernel("gemm", 20, 30, corr=1),
            kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 60, 40, corr=2, stream=9),
        ]
        info = {"backend": "nccl", "rank": rank, "world_size": 2}
        write(folder / f"rank{rank}.json", document(events, distributedInfo=info))
    return folder


@pytest.fixture(scope="module")
def expected(module_page, jupyterlab: str, notebook_dir: Path) -> dict:
    shapes = {"Input Dims": [[64, 64], [64, 64]], "Input type": ["float", "float"]}
    events = [cpu_op("aten::mm", 10 * i, 1, ext=i, **shapes) for i in range(3)]
    trace = write(notebook_dir / "crowded.json", document(events))
    job = _job_without_shapes(notebook_dir / "job")
    cells = [
        CROWDED.format(trace=str(trace)),
        JOB_CELL.format(job=str(job), marker="GPUPROFILE_JOB"),
    ]
    # The shared trace only where it is: the other cases need nothing from ../shared.
    if DLRM.exists():
        cells.append(JOB_CELL.format(job=str(DLRM), marker="GPUPROFILE_DLRM"))
    last = "GPUPROFILE_DLRM" if DLRM.exists() else "GPUPROFILE_JOB"
    (notebook_dir / "roofline_cases.ipynb").write_text(json.dumps(notebook_json(*cells)))
    outputs = open_notebook(
        module_page, jupyterlab, "roofline_cases.ipynb", marker=last, widgets=len(cells)
    )
    return {
        "crowded": printed(outputs, "GPUPROFILE_EXPECT"),
        "job": printed(outputs, "GPUPROFILE_JOB"),
        "dlrm": printed(outputs, "GPUPROFILE_DLRM") if DLRM.exists() else None,
    }


def _roofline(page, k: int):
    return page.locator(".gpuprofile").nth(k).locator(".gp-roofline").first


def test_crowded_roofs_keep_their_labels_apart(module_page, expected: dict, artifacts_dir) -> None:
    roofline = _roofline(module_page, 0)
    roofline.scroll_into_view_if_needed()
    found = roof_label_overlaps(roofline)
    roofline.screenshot(path=str(artifacts_dir / "roofline-crowded.png"))
    # Every op has a FLOP count: the badge says so (not "no FLOP count for 0.0% of the time").
    assert roofline.locator(".gp-rl-coverage").inner_text() == "FLOPs counted for all of the time"
    # DRAM and four compute roofs: all labelled, none over another.
    assert found["count"] >= 5, found
    assert not found["overlaps"], found


def test_a_point_above_the_dram_roof_says_caches_served_it(module_page, expected: dict) -> None:
    (k,) = expected["crowded"]["over"]
    roofline = _roofline(module_page, 0)
    roofline.locator(f'circle[data-point="{k}"]').first.focus()
    module_page.keyboard.press("Enter")
    details = roofline.locator(".gp-rl-details").first
    details.wait_for(state="visible")
    text = details.inner_text()
    assert "above the roof" in text and "caches served part of the traffic" in text, text


def test_a_job_without_flop_counts_has_no_empty_chart(
    module_page, expected: dict, artifacts_dir
) -> None:
    job = expected["job"]
    assert job["ranks"] == 2 and job["points"] > 0 and job["with_flops"] == 0, job
    roofline = _roofline(module_page, 1)
    roofline.scroll_into_view_if_needed()
    assert roofline.get_attribute("data-chart") == "none"
    assert roofline.locator("svg").count() == 0
    (line,) = roofline.locator(".gp-rl-empty").all_inner_texts()
    assert f"none of the {job['points']} ops and kernels in the report has a FLOP count" in line
    roofline.screenshot(path=str(artifacts_dir / "roofline-job.png"))
    # The crowded chart above still drew its chart.
    assert _roofline(module_page, 0).get_attribute("data-chart") == "drawn"


@pytest.mark.traces
def test_a_job_whose_heaviest_points_are_collectives_still_shows_its_kernels(
    module_page, expected: dict
) -> None:
    # The report keeps the heaviest points with FLOPs, not only the 50 heaviest (NCCL here).
    require_trace(DLRM)
    dlrm = expected["dlrm"]
    assert dlrm["ranks"] == 8 and dlrm["with_flops"] > 0, dlrm
    roofline = _roofline(module_page, 2)
    roofline.scroll_into_view_if_needed()
    assert roofline.get_attribute("data-chart") == "drawn"
    assert roofline.locator("circle[data-point]").count() > 0
