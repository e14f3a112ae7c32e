"""The module view in JupyterLab: the rows drawn are the report's module rows in tree order;
clicking one outlines its calls on the timeline (as a hint's evidence does) and rings its ops,
and its children's, on the roofline; a roofline point's details name its module.

The trace is the test's own: ``nn.Module:`` ranges as a capture records them around matmuls of
a shape per module, so which module owns what is known here, not read from our output; the
rows and the points' modules drawn are the report's own attribution, checked against those
labels. A hint written by hand with a module and a line checks that its card names both.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from widget_page import TIMELINE, notebook_json, open_notebook, printed, view, wait_data

from helpers.kineto_docs import cpu_op, document, write

pytestmark = pytest.mark.ui

MODULES = ".gpuprofile .gp-modules"
ROOFLINE = ".gpuprofile .gp-roofline"
# (path, type, start us, dur us, matmul size): fc2 runs longer than fc1, so it is drawn first.
CALLS = [
    ("Net", "Net", 0, 1000, None),
    ("Net.fc1", "Linear", 10, 300, 64),
    ("Net.fc2", "Linear", 400, 500, 128),
]
ORDER = ["Net", "Net.fc2", "Net.fc1"]  # parents first, siblings largest first

CELL = """\
import json
import msgspec
import gpuprofile
from gpuprofile.report.schema import Hint, SourceRef
from gpuprofile.widget.widget import make_widget

CALLS = {calls!r}
p = gpuprofile.load({trace!r})
report = p.typed_report()
size_of = {{path: n for path, _, _, _, n in CALLS if n}}
points = report.roofline.points
# A hint as a detector that knows its module and line writes it: its card must name both.
hint = Hint(kind="python-loop", title="a loop in Net.fc1", severity="high", gain_ns=1000,
            gain_method="", confidence="high", explanation="", numbers={{}}, fix=[], code="",
            evidence=[], rank=0, related=[], modules=["Net.fc1", "Net"],
            sources=[SourceRef("cell [5]", 12, "forward")])
report = msgspec.structs.replace(report, hints=[hint, *report.hints])
rows = report.ranks[0].modules
# Expected, from the labels: each module's matmul points (by shape), its call's window.
mm = {{path: [i for i, pt in enumerate(points) if pt.level == "op" and pt.name == "aten::mm"
              and pt.shapes.startswith(f"[[{{n}}, {{n}}]")]
      for path, n in size_of.items()}}
print("GPUPROFILE_EXPECT", json.dumps({{
    "paths": [r.path for r in rows],
    "points": mm,
    "windows": {{path: [start * 1000, (start + dur) * 1000] for path, _, start, dur, _ in CALLS}},
}}))
make_widget(report, p.trace, p.analysis)
"""


def _events() -> list[dict]:
    events = []
    for k, (path, kind, start, dur, n) in enumerate(CALLS):
        call = cpu_op(f"nn.Module: {path} ({kind})", start, dur)
        call["cat"] = "user_annotation"
        events.append(call)
        if n:
            shapes = {"Input Dims": [[n, n], [n, n]], "Input type": ["float", "float"]}
            for j in range(3):  # three matmuls inside the call
                events.append(cpu_op("aten::mm", start + 10 + 80 * j, 60, ext=10 * k + j, **shapes))
    return events


@pytest.fixture(scope="module")
def expected(module_page, jupyterlab: str, notebook_dir: Path) -> dict:
    trace = write(notebook_dir / "modules.json", document(_events()))
    cell = CELL.format(trace=str(trace), calls=CALLS)
    (notebook_dir / "modules.ipynb").write_text(json.dumps(notebook_json(cell)))
    outputs = open_notebook(module_page, jupyterlab, "modules.ipynb", marker="GPUPROFILE_EXPECT")
    values: dict = printed(outputs, "GPUPROFILE_EXPECT")
    return values


def test_rows_are_the_reports_modules_in_tree_order(
    module_page, expected: dict, artifacts_dir
) -> None:
    panel = module_page.locator(MODULES).first
    panel.scroll_into_view_if_needed()
    assert sorted(expected["paths"]) == sorted(ORDER)
    rows = panel.locator("[data-module]")
    drawn = [rows.nth(i).get_attribute("data-path") for i in range(rows.count())]
    assert drawn == ORDER
    # Each row points at the report's row of that path.
    for i in range(rows.count()):
        index = int(rows.nth(i).get_attribute("data-module"))
        assert expected["paths"][index] == drawn[i]
    assert panel.get_attribute("data-modules") == str(len(ORDER))
    # Labels under their parent: the part past the parent's path.
    labels = panel.locator(".gp-md-label").all_text_contents()
    assert labels == ["Net", "fc2", "fc1"]
    panel.screenshot(path=str(artifacts_dir / "module-view.png"))


def test_clicking_a_module_outlines_its_calls_and_rings_its_points(
    module_page, expected: dict
) -> None:
    page = module_page
    panel = page.locator(MODULES).first
    timeline = page.locator(TIMELINE).first
    for path in ("Net.fc1", "Net"):
        index = expected["paths"].index(path)
        panel.locator(f'[data-module="{index}"]').first.click()
        wait_data(page, MODULES, "data-selected-module", f"v === '0:{index}'")
        # Its one call is outlined on the timeline, and the view holds it.
        wait_data(page, TIMELINE, "data-highlight-count", "v === '1'")
        start, end = expected["windows"][path]
        v = view(page)
        assert v[0] <= start and end <= v[1], (v, start, end)
        # Its matmuls on the roofline: its own, and for Net its children's.
        want = expected["points"].get(path) or sorted(
            i for p, ks in expected["points"].items() if p.startswith(path + ".") for i in ks
        )
        assert want, expected
        shown = page.locator(ROOFLINE).first.get_attribute("data-highlighted-points")
        assert sorted(int(k) for k in shown.split(",")) == sorted(want)
    assert timeline.get_attribute("data-highlight-count") == "1"


def test_a_points_details_name_its_module(module_page, expected: dict) -> None:
    page = module_page
    (k, *_) = expected["points"]["Net.fc2"]
    roofline = page.locator(ROOFLINE).first
    roofline.locator(f'circle[data-point="{k}"]').first.focus()
    page.keyboard.press("Enter")
    details = roofline.locator(".gp-rl-details").first
    details.wait_for(state="visible")
    assert "module\tNet.fc2" in details.inner_text() or "module Net.fc2" in details.inner_text()


def test_a_hint_card_names_its_module_and_line(module_page, expected: dict) -> None:
    chip = module_page.locator('.gpuprofile .gp-hintlist li[data-hint="0"] .gp-hl-where').first
    assert chip.inner_text() == "Net.fc1 (+1 more) · cell [5] line 12 in forward"
    assert chip.get_attribute("data-module") == "Net.fc1 (+1 more)"
