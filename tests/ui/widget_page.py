"""Notebooks for the browser tests, and driving the widget's timeline in a page: where the plot
is, what it shows, finding a box.

Geometry kept in step with js/views/timeline/canvas.js: the axis strip is AXIS_H px tall, each
lane group starts with a HEADER_H px header, the lane label column is
round(min(220, max(110, 0.2 * width))) px wide.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WIDGET = '.gpuprofile[data-gpuprofile="ready"]'
TIMELINE = ".gpuprofile .gp-timeline"
CANVAS = ".gpuprofile .gp-timeline canvas"
TOOLTIP = ".gpuprofile .gp-tooltip"
DETAILS_TITLE = ".gpuprofile .gp-details .gp-details-title"
AXIS_H = 24
HEADER_H = 20  # a lane group's header row (a click there collapses the group)


def view(page: Any, timeline: str = TIMELINE) -> tuple[float, float]:
    d = page.locator(timeline).first
    return float(d.get_attribute("data-view-start-ns")), float(d.get_attribute("data-view-end-ns"))


def wait_view_change(
    page: Any, before: tuple[float, float], timeline: str = TIMELINE, timeout: float = 10_000
) -> tuple[float, float]:
    page.wait_for_function(
        """([sel, s, e]) => {
            const el = document.querySelector(sel);
            const d = el && el.dataset;
            return d && (Number(d.viewStartNs) !== s || Number(d.viewEndNs) !== e);
        }""",
        arg=[timeline, before[0], before[1]],
        timeout=timeout,
    )
    return view(page, timeline)


def wait_data(page: Any, selector: str, attr: str, test: str, timeout: float = 15_000) -> str:
    """Wait until `test` (a JS expression of `v`, the attribute's string or null) holds for the
    first element matching `selector`; return the attribute."""
    page.wait_for_function(
        f"""([sel, attr]) => {{
            const el = document.querySelector(sel);
            const v = el ? el.getAttribute(attr) : null;
            return {test};
        }}""",
        arg=[selector, attr],
        timeout=timeout,
    )
    return str(page.locator(selector).first.get_attribute(attr))


@dataclass
class Plot:
    """The canvas on screen: page coordinates of its corner, its size, the label column."""

    x: float
    y: float
    width: float
    height: float
    label_w: float

    @property
    def plot_w(self) -> float:
        return self.width - self.label_w

    def x_of_fraction(self, frac: float) -> float:
        return self.x + self.label_w + frac * self.plot_w

    def x_of_time(self, t: float, v: tuple[float, float]) -> float:
        return self.x_of_fraction((t - v[0]) / (v[1] - v[0]))

    def fraction_of_x(self, x: float) -> float:
        return (x - self.x - self.label_w) / self.plot_w


def plot(page: Any, canvas: str = CANVAS) -> Plot:
    """Scroll the timeline into the viewport and measure it."""
    el = page.locator(canvas).first
    el.scroll_into_view_if_needed()
    box = el.bounding_box()
    assert box and box["width"] > 300 and box["height"] > 40, box
    label_w = round(min(220, max(110, box["width"] * 0.2)))
    return Plot(box["x"], box["y"], box["width"], box["height"], label_w)


def focus_plot(page: Any, p: Plot) -> None:
    """Click the axis strip (a click there neither selects nor moves) to give the plot focus."""
    page.mouse.click(p.x_of_fraction(0.5), p.y + AXIS_H / 2)
    focused = page.evaluate(
        "() => Boolean(document.activeElement && document.activeElement.closest('.gp-scroller'))"
    )
    assert focused, "clicking the plot did not focus it"


def highlight_pixels(page: Any, canvas: str = CANVAS) -> int:
    """Pixels of the plot drawn in the highlight colour (--jp-warn-color1, what outlines marked
    events), after the next frame is painted."""
    count: int = page.evaluate(
        """async (sel) => {
            await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
            const canvas = document.querySelector(sel);
            const probe = document.createElement("canvas").getContext("2d");
            const css = getComputedStyle(canvas).getPropertyValue("--jp-warn-color1").trim();
            probe.fillStyle = css || "#f57c00";
            probe.fillRect(0, 0, 1, 1);
            const [r, g, b] = probe.getImageData(0, 0, 1, 1).data;
            const ctx = canvas.getContext("2d");
            const data = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
            let n = 0;
            for (let i = 0; i < data.length; i += 4) {
                const d = Math.abs(data[i] - r) + Math.abs(data[i + 1] - g)
                    + Math.abs(data[i + 2] - b);
                if (d < 24) n++;
            }
            return n;
        }""",
        canvas,
    )
    return count


# Corners of each roof and ridge label as drawn (its text box through its transform), and
# which pairs overlap (separating-axis test on the two quadrilaterals).
_ROOF_LABEL_OVERLAPS = """(root) => {
    const svg = root.querySelector('svg');
    const labels = [...svg.querySelectorAll('.gp-rl-roof-label, .gp-rl-ridge-label')];
    const quad = (el) => {
        const b = el.getBBox(), m = el.getCTM(), s = svg.getCTM().inverse();
        return [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height],
                [b.x, b.y + b.height]].map(([x, y]) => {
            const p = new DOMPoint(x, y).matrixTransform(m).matrixTransform(s);
            return [p.x, p.y];
        });
    };
    const apart = (a, b) => [a, b].some((poly) => poly.some((p, i) => {
        const q = poly[(i + 1) % 4], n = [p[1] - q[1], q[0] - p[0]];
        const span = (r) => r.map(([x, y]) => x * n[0] + y * n[1]);
        const sa = span(a), sb = span(b);
        return Math.max(...sa) <= Math.min(...sb) + 1e-6
            || Math.max(...sb) <= Math.min(...sa) + 1e-6;
    }));
    const quads = labels.map(quad);
    const out = [];
    for (let i = 0; i < quads.length; i++) for (let j = i + 1; j < quads.length; j++) {
        if (!apart(quads[i], quads[j])) {
            out.push(`${labels[i].textContent} / ${labels[j].textContent}`);
        }
    }
    return {count: labels.length, overlaps: out};
}"""


def roof_label_overlaps(roofline: Any) -> dict:
    """{count: roof and ridge labels drawn, overlaps: ["label / label", ...]} of a roofline
    panel (a locator of its root)."""
    found: dict = roofline.evaluate(_ROOF_LABEL_OVERLAPS)
    return found


def hover_find(
    page: Any, p: Plot, xs: list[float], accept: Any, y_step: float = 5.0
) -> tuple[float, float, str] | None:
    """Hover the plot at each x of `xs` down the visible lanes until the tooltip's text passes
    `accept(text)`; return (x, y, text), or None."""
    tooltip = page.locator(TOOLTIP).first
    y = p.y + AXIS_H + 2
    while y < p.y + p.height - 2:
        for x in xs:
            page.mouse.move(x, y)
            if tooltip.is_visible():
                text = tooltip.inner_text()
                if accept(text):
                    return x, y, text
        y += y_step
    return None


def notebook_json(*sources: str) -> dict:
    """An nbformat 4 notebook of code cells with the ipykernel kernelspec."""
    return {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "id": f"c{i}",
                "metadata": {},
                "outputs": [],
                "source": source,
            }
            for i, source in enumerate(sources)
        ],
        "metadata": {
            "kernelspec": {
                "display_name": "Python 3 (ipykernel)",
                "language": "python",
                "name": "python3",
            }
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


_KERNEL_IDLE = """() => {
    const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
    const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
    return Boolean(k && k.connectionStatus === "connected" && k.status === "idle");
}"""


def start_notebook(page: Any, url: str, name: str, *, app: str = "lab") -> None:
    """Open notebook `name` (app "lab": JupyterLab in a fresh workspace; "notebook": the
    Notebook 7 interface) once its kernel is idle, and start running all its cells."""
    if app == "lab":
        # A fresh workspace per call: the default one would reopen notebooks (and widgets)
        # from earlier tests of this session next to this one.
        page.goto(f"{url}/lab/workspaces/t{uuid.uuid4().hex[:12]}/tree/{name}")
    else:
        page.goto(f"{url}/notebooks/{name}")
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.commands")
    page.wait_for_function(_KERNEL_IDLE, timeout=60_000)
    # Do not return the command's promise: it can hang forever.
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")


def open_notebook(
    page: Any, url: str, name: str, *, marker: str, widgets: int = 1, app: str = "lab"
) -> str:
    """start_notebook, then wait until an output contains `marker` and `widgets` widgets are
    ready; return the text of all outputs (which must hold no traceback)."""
    start_notebook(page, url, name, app=app)
    page.wait_for_function(
        "([m, n, w]) => [...document.querySelectorAll('.jp-OutputArea-output')]"
        ".some(o => o.textContent.includes(m))"
        " && document.querySelectorAll(w).length >= n",
        arg=[marker, widgets, WIDGET],
        timeout=120_000,
    )
    outputs = "\n".join(page.locator(".jp-OutputArea-output").all_text_contents())
    assert "Traceback (most recent call last)" not in outputs, outputs[-3000:]
    return outputs


def run_expecting(
    page: Any, url: str, directory: Path, name: str, *sources: str, app: str = "lab"
) -> Any:
    """Write the notebook of `sources` as `name`, run it, and return what a cell printed after
    GPUPROFILE_EXPECT (expectations it computed in the kernel)."""
    (directory / name).write_text(json.dumps(notebook_json(*sources)))
    outputs = open_notebook(page, url, name, marker="GPUPROFILE_EXPECT", app=app)
    return printed(outputs, "GPUPROFILE_EXPECT")


def printed(outputs: str, tag: str) -> Any:
    """The JSON a cell printed on one line after `tag` (print(tag, json.dumps(value)))."""
    match = re.search(rf"^{re.escape(tag)} (.*)$", outputs, re.M)
    assert match, f"no {tag} line in the outputs:\n{outputs[-2000:]}"
    return json.loads(match.group(1))
