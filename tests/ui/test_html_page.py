"""The standalone HTML report in headless Chromium, opened from disk with nothing else served:
no page or console errors, bokeh's plots drawn, and the hostile kernel names only as text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import gpuprofile
from helpers.hostile_trace import HOSTILE, TEX, report_events
from helpers.kineto_docs import document, write

pytestmark = pytest.mark.ui


def test_report_page_renders_offline_and_names_stay_text(
    browser: Any, tmp_path: Path, artifacts_dir: Path
) -> None:
    trace = write(tmp_path / "t.json", document(report_events()))
    out = tmp_path / "report.html"
    gpuprofile.load(trace).save_html(out)

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
        page.goto(out.as_uri())
        # Bokeh renders each figure into a canvas inside its shadow DOM; playwright's CSS
        # selectors pierce open shadow roots.
        page.wait_for_function(
            """() => {
                const all = [];
                const walk = (root) => root.querySelectorAll('*').forEach((el) => {
                    if (el.tagName === 'CANVAS') all.push(el);
                    if (el.shadowRoot) walk(el.shadowRoot);
                });
                walk(document);
                return all.filter((c) => c.width > 0 && c.height > 0).length >= 2;
            }""",
            timeout=30_000,
        )
        page.wait_for_timeout(500)
        images = page.evaluate(
            """() => {
                let n = 0;
                const walk = (root) => root.querySelectorAll('*').forEach((el) => {
                    if (el.tagName === 'IMG') n++;
                    if (el.shadowRoot) walk(el.shadowRoot);
                });
                walk(document);
                return n;
            }"""
        )
        assert images == 0
        assert page.evaluate("() => window.pwned === undefined")
        # Bokeh's Divs live in shadow roots, out of reach of body.innerText.
        shown = page.evaluate(
            """() => {
                const parts = [];
                const walk = (root) => root.querySelectorAll('*').forEach((el) => {
                    if (!el.shadowRoot) return;
                    parts.push(el.shadowRoot.textContent);
                    walk(el.shadowRoot);
                });
                walk(document);
                return parts.join('\\n');
            }"""
        )
        assert HOSTILE in shown and TEX in shown and "Top kernels" in shown
        assert not errors, errors
        assert not offsite, offsite
    finally:
        page.screenshot(path=str(artifacts_dir / "html-report.png"), full_page=True)
        context.close()
