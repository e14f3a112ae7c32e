"""The standalone HTML report in headless Chromium, opened from disk with nothing else served:
no page or console errors, bokeh's plots drawn, and the hostile kernel names only as text; with
a baseline, its section too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import gpuprofile
from helpers.baseline_pair import write_pair
from helpers.hostile_trace import HOSTILE, TEX, report_events
from helpers.kineto_docs import document, write

pytestmark = pytest.mark.ui

# Bokeh renders each figure into a canvas and each Div into its own open shadow root: the
# walks below go into every shadow root (body.innerText does not).
_CANVASES_DRAWN = """([n]) => {
    const all = [];
    const walk = (root) => root.querySelectorAll('*').forEach((el) => {
        if (el.tagName === 'CANVAS') all.push(el);
        if (el.shadowRoot) walk(el.shadowRoot);
    });
    walk(document);
    return all.filter((c) => c.width > 0 && c.height > 0).length >= n;
}"""
_IMAGES = """() => {
    let n = 0;
    const walk = (root) => root.querySelectorAll('*').forEach((el) => {
        if (el.tagName === 'IMG') n++;
        if (el.shadowRoot) walk(el.shadowRoot);
    });
    walk(document);
    return n;
}"""
_SHOWN = """() => {
    const parts = [];
    const walk = (root) => root.querySelectorAll('*').forEach((el) => {
        if (!el.shadowRoot) return;
        parts.push(el.shadowRoot.textContent);
        walk(el.shadowRoot);
    });
    walk(document);
    return parts.join('\\n');
}"""
# [selector, attribute]: [attribute's value, text] of every match, in every shadow root.
_FOUND = """([sel, attr]) => {
    const found = [];
    const walk = (root) => root.querySelectorAll('*').forEach((el) => {
        if (el.matches(sel)) found.push([el.getAttribute(attr), el.textContent]);
        if (el.shadowRoot) walk(el.shadowRoot);
    });
    walk(document);
    return found;
}"""


def _read_page(
    browser: Any, path: Path, shot: Path, canvases: int, find: tuple[str, str] = ("x", "x")
) -> tuple[str, list[list[str]]]:
    """Open the page from disk, wait for `canvases` drawn plots, check that nothing failed,
    fetched from elsewhere, or got in as an image; return the text it shows, and [value of
    attribute, text] of the elements that `find` ([selector, attribute]) matches."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    offsite: list[str] = []
    page.on("pageerror", lambda err: errors.append(f"pageerror: {err}"))
    page.on("console", lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None)
    page.on("dialog", lambda d: (errors.append(f"dialog: {d.message}"), d.dismiss()))
    local = ("file:", "data:", "blob:", "about:")
    page.on("request", lambda r: None if r.url.startswith(local) else offsite.append(r.url))
    try:
        page.goto(path.as_uri())
        page.wait_for_function(_CANVASES_DRAWN, arg=[canvases], timeout=30_000)
        page.wait_for_timeout(500)
        assert page.evaluate(_IMAGES) == 0
        assert page.evaluate("() => window.pwned === undefined")
        shown: str = page.evaluate(_SHOWN)
        found: list[list[str]] = page.evaluate(_FOUND, list(find))
        assert not errors, errors
        assert not offsite, offsite
        return shown, found
    finally:
        page.screenshot(path=str(shot), full_page=True)
        context.close()


def test_report_page_renders_offline_and_names_stay_text(
    browser: Any, tmp_path: Path, artifacts_dir: Path
) -> None:
    trace = write(tmp_path / "t.json", document(report_events()))
    out = tmp_path / "report.html"
    gpuprofile.load(trace).save_html(out)
    shown, _ = _read_page(browser, out, artifacts_dir / "html-report.png", canvases=2)
    assert HOSTILE in shown and TEX in shown and "Top kernels" in shown


def test_report_page_with_a_baseline(browser: Any, tmp_path: Path, artifacts_dir: Path) -> None:
    before, after = write_pair(tmp_path)
    out = tmp_path / "with-baseline.html"
    gpuprofile.load(after, baseline=before).save_html(out)
    # The timeline only: none of these kernels has a FLOP count, so no roofline is drawn.
    shot = artifacts_dir / "html-report-baseline.png"
    shown, marked = _read_page(browser, out, shot, canvases=1, find=("li[data-hint]", "data-hint"))
    section = shown[shown.index("Against baseline") :]
    assert "Kernels that moved most" in section and HOSTILE in section
    # before.json's pageable copy is gone in after.json: fixed, and nothing new or kept.
    assert [(group, text.split(" (")[0]) for group, text in marked] == [
        ("fixed", "fixed1 pageable copy")
    ]
