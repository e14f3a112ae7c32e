"""Names from a trace are data: HTML and script in op and kernel names show as literal text in
JupyterLab (hovered, clicked, searched) and nothing runs; the same widget in the Notebook 7
interface.

The Kineto trace is built by the test (tests/helpers/kineto_docs.py), so what the widget must show
is known from the events themselves.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from widget_page import (
    DETAILS_TITLE,
    TIMELINE,
    WIDGET,
    hover_find,
    plot,
    run_expecting,
    view,
    wait_data,
)

from helpers.kineto_docs import cpu_op, document, kernel, runtime, write

pytestmark = pytest.mark.ui

IMG = '<img src=x onerror="window.__pwned=1">'
SCRIPT = "<script>window.__pwned=2</script>"
# Times in microseconds, as Kineto writes them; the first event starts the trace.
EVENTS = [
    cpu_op(IMG, 0, 100, ext=1),
    runtime("cudaLaunchKernel", 10, 5, 1),
    kernel(IMG, 20, 50, 1),
    cpu_op(SCRIPT, 150, 100, ext=2),
    runtime("cudaLaunchKernel", 160, 5, 2),
    kernel(SCRIPT, 170, 60, 2),
]

SOURCE = """\
import json

import gpuprofile

p = gpuprofile.load({path!r})
report = p.report()
kinds = ('ops', 'runtime', 'kernels', 'memcpy', 'memset')
print('GPUPROFILE_EXPECT', json.dumps({{k: sum(r['counts'][k] for r in report['ranks'])
                                        for k in kinds}}))
p
"""

NO_INJECTION = """() => ({
    img: document.querySelectorAll('img[src="x"]').length,
    scripts: document.querySelectorAll('.gpuprofile script').length,
    pwned: typeof window.__pwned,
})"""

LITERAL_TEXT = """([name]) => [...document.querySelectorAll('.gpuprofile *')]
    .some(e => e.children.length === 0 && e.textContent === name)"""


@pytest.fixture(scope="module")
def trace_path(notebook_dir: Path) -> Path:
    return write(notebook_dir / "untrusted_names.json", document(EVENTS))


def _count(kind: str) -> int:
    return sum(1 for e in EVENTS if e["cat"] == kind)


def _matches(needle: str) -> int:
    """Timeline events whose name holds `needle`, ignoring case."""
    return sum(1 for e in EVENTS if needle.lower() in e["name"].lower())


def _assert_nothing_injected(page) -> None:
    assert page.evaluate(NO_INJECTION) == {"img": 0, "scripts": 0, "pwned": "undefined"}


def test_html_in_names_stays_text(
    module_page, jupyterlab: str, notebook_dir: Path, trace_path: Path, artifacts_dir: Path
) -> None:
    page = module_page
    counts = run_expecting(
        page, jupyterlab, notebook_dir, "untrusted.ipynb", SOURCE.format(path=str(trace_path))
    )
    assert counts["ops"] == _count("cpu_op") and counts["kernels"] == _count("kernel")
    root = page.locator(WIDGET).first
    assert int(root.get_attribute("data-kernels")) == _count("kernel")
    _assert_nothing_injected(page)
    # The summary lists the kernels by name, as text.
    for name in (IMG, SCRIPT):
        assert page.evaluate(LITERAL_TEXT, [name]), name

    # Hover the <img> kernel: the tooltip names it as text.
    box = plot(page)
    v = view(page)
    mid_ns = 45_000.0  # the middle of the first kernel (20 us + 50 us / 2)
    found = hover_find(
        page, box, [box.x_of_time(mid_ns, v)], lambda t: t.splitlines()[1].startswith("kernel")
    )
    assert found, "no tooltip for the first kernel"
    assert page.locator(".gpuprofile .gp-tooltip-name").first.text_content() == IMG
    _assert_nothing_injected(page)

    # Click it: the details panel names it, and the op that launched it, as text.
    page.mouse.click(found[0], found[1])
    wait_data(page, TIMELINE, "data-selected-id", "v !== null && /^\\d+$/.test(v)")
    title = page.locator(DETAILS_TITLE).first
    title.wait_for(state="visible")
    assert title.text_content() == IMG
    op_name = page.locator(".gpuprofile .gp-details .gp-details-ev-name")
    op_name.first.wait_for(state="visible")
    assert IMG in op_name.all_text_contents()
    _assert_nothing_injected(page)

    # Search for the script tag: both events named so match; Enter shows the first.
    search = page.locator(".gpuprofile .gp-search-input").first
    search.fill("<SCRIPT>")
    wait_data(page, TIMELINE, "data-search-count", f"v === '{_matches('<SCRIPT>')}'")
    search.press("Enter")
    page.wait_for_function(
        "([sel, name]) => document.querySelector(sel)?.textContent === name",
        arg=[DETAILS_TITLE, SCRIPT],
    )
    _assert_nothing_injected(page)
    page.screenshot(path=str(artifacts_dir / "untrusted-names.png"))


def test_widget_in_notebook_7(
    page, jupyterlab: str, notebook_dir: Path, trace_path: Path, artifacts_dir: Path
) -> None:
    counts = run_expecting(
        page,
        jupyterlab,
        notebook_dir,
        "untrusted-nb7.ipynb",
        SOURCE.format(path=str(trace_path)),
        app="notebook",
    )
    assert "/notebooks/untrusted-nb7.ipynb" in page.url
    # The Notebook 7 shell, not JupyterLab's.
    assert page.evaluate("() => window.jupyterapp.name") == "Jupyter Notebook"
    root = page.locator(WIDGET).first
    for key in ("ops", "kernels"):
        assert (
            int(root.get_attribute(f"data-{key}"))
            == counts[key]
            == _count("cpu_op" if key == "ops" else "kernel")
        )
    timeline = page.locator(TIMELINE).first
    assert int(timeline.get_attribute("data-events")) == len(EVENTS)
    box = plot(page)
    assert box.width > 600  # laid out at the notebook's width, not collapsed
    _assert_nothing_injected(page)
    root.screenshot(path=str(artifacts_dir / "notebook7-widget.png"))
