"""The panels over the timeline on a real H100 inference trace (OWLv2): gauges, a roofline point
that takes the timeline to its heaviest instance, hints whose evidence zooms the timeline there.

The cell computes what the browser must show from the Trace's tables (busy time, copy rate, a
point's instances) or prints the report's own windows and ids; all tests share its page.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from widget_page import (
    TIMELINE,
    focus_plot,
    highlight_pixels,
    hover_find,
    plot,
    roof_label_overlaps,
    run_expecting,
    view,
    wait_data,
)

from gpuprofile.widget.marks import MAX_POINT_MARKS
from helpers.prerequisites import SHARED_TRACES, require_trace

pytestmark = [pytest.mark.ui, pytest.mark.traces]

TRACE = SHARED_TRACES / "kineto" / "tracelens_h100_owlv2_large_inference.json.gz"
ROOFLINE = ".gpuprofile .gp-roofline"
HINTS = ".gpuprofile .gp-hintlist"

SOURCE = """\
import json
import math

import numpy as np
import pandas as pd

import gpuprofile

p = gpuprofile.load({trace!r})
report = p.report()
trace = p.trace
timeline_tables = ('ops', 'runtime', 'kernels', 'memcpy', 'memset')
out = {{'gauges': len(report['gauges'])}}

# GPU busy: the union of kernel, copy and memset intervals over the first-to-last GPU window.
gpu = pd.concat([trace.table(k)[['start_ns', 'dur_ns']] for k in ('kernels', 'memcpy', 'memset')])
s = gpu['start_ns'].to_numpy(float)
e = s + gpu['dur_ns'].to_numpy(float)
order = np.argsort(s)
busy, run_s, run_e = 0.0, s[order[0]], e[order[0]]
for a, b in zip(s[order][1:], e[order][1:]):
    if a > run_e:
        busy, run_s, run_e = busy + run_e - run_s, a, b
    else:
        run_e = max(run_e, b)
busy += run_e - run_s
out['gpu_busy_pct'] = 100 * busy / (e.max() - s.min())
# Host link: bytes over time of the host<->device copies.
copies = trace.table('memcpy')
copies = copies[copies['kind'].astype(str).isin(['HtoD', 'DtoH'])]
out['host_link_bps'] = float(copies['bytes'].sum() / copies['dur_ns'].sum() * 1e9)

# The heaviest kernel-level point the chart can plot, and its instances: kernels of that name.
points = report['roofline']['points']
def plottable(pt):
    return all(
        isinstance(pt.get(k), (int, float)) and math.isfinite(pt[k]) and pt[k] > 0
        for k in ('flops', 'bytes', 'intensity', 'achieved_flops_per_s')
    )
k = max(
    (i for i, pt in enumerate(points) if pt['level'] == 'kernel' and plottable(pt)),
    key=lambda i: points[i]['time_ns'],
)
kernels = trace.table('kernels')
same = kernels[(kernels['name'].astype(str) == points[k]['name'])
               & (kernels['rank'] == points[k]['rank'])]
top = same.loc[same['dur_ns'].idxmax()]
out['point'] = {{'index': k, 'name': points[k]['name'], 'label': points[k]['label'],
                 'instances': len(same),
                 'start': float(top['start_ns']), 'end': float(top['start_ns'] + top['dur_ns'])}}

# Hint evidence: the report's windows, and how many of its event ids are timeline events.
def evidence(i, j):
    ev = report['hints'][i]['evidence'][j]
    events = 0
    if ev['table'] in timeline_tables:
        table = trace.table(ev['table'])
        drawn = table['id'].isin(ev['event_ids'])
        if 'category' in table:  # the --stack lanes leave torch's own frames out
            drawn &= ~((table['category'] == 'python_function')
                       & table['name'].astype(str).str.startswith('torch/'))
        events = int(drawn.sum())
    return {{'hint': i, 'evidence': j, 'windows': ev['windows'], 'events': events,
             'label': ev['label']}}
out['first'] = evidence(0, 0)
# The first hint that names roofline points, with its first evidence entry.
i = next(i for i, h in enumerate(report['hints']) if h.get('related') and h['evidence'])
out['related'] = evidence(i, 0)
keys = set(report['hints'][i]['related'])
out['related']['points'] = [n for n, pt in enumerate(points) if pt['key'] in keys]
out['related']['code'] = report['hints'][i].get('code')

# The first rows of the top kernels and top ops: every event of that name on the rank, and the
# longest of them.
rank = report['ranks'][0]['rank']
def instances(table, name):
    t = trace.table(table)
    same = t[(t['name'].astype(str) == name) & (t['rank'] == rank)]
    top = same.loc[same['dur_ns'].idxmax()]
    return {{'name': name, 'instances': len(same), 'start': float(top['start_ns']),
             'end': float(top['start_ns'] + top['dur_ns']), 'rank': rank}}
out['top_kernel'] = instances('kernels', report['ranks'][0]['top_kernels'][0]['name'])
out['top_op'] = instances('ops', report['ranks'][0]['top_ops'][0]['name'])
print('GPUPROFILE_EXPECT', json.dumps(out))
p
"""


@pytest.fixture(scope="module")
def expected(module_page, jupyterlab: str, notebook_dir: Path) -> dict:
    require_trace(TRACE)
    source = SOURCE.format(trace=str(TRACE))
    values: dict = run_expecting(module_page, jupyterlab, notebook_dir, "panels.ipynb", source)
    return values


def _near(a: float, b: float, rel: float = 1e-6) -> bool:
    return abs(a - b) <= rel * max(abs(a), abs(b))


def test_gauges_show_busy_time_and_copy_rate(module_page, expected: dict) -> None:
    page = module_page
    gauges = page.locator(".gpuprofile [data-gauges]").first
    assert int(gauges.get_attribute("data-gauges")) == expected["gauges"]
    busy = gauges.locator('[data-gauge="gpu-busy"]').first
    assert _near(float(busy.get_attribute("data-value")), expected["gpu_busy_pct"])
    assert float(busy.get_attribute("data-roof")) == 100
    link = gauges.locator('[data-gauge="host-link"]').first
    assert _near(float(link.get_attribute("data-value")), expected["host_link_bps"])
    assert "%" in busy.inner_text()


def _click_point(page, index: int) -> None:
    """A real click on kernel-level roofline point `index`, on a part no smaller point covers."""
    roofline = page.locator(ROOFLINE).first
    if roofline.get_attribute("data-level") != "kernel":
        roofline.locator('[data-level-button="kernel"]').click()
        wait_data(page, ROOFLINE, "data-level", "v === 'kernel'")
    circle = page.locator(f'{ROOFLINE} circle[data-point="{index}"]').first
    at = circle.evaluate(
        """c => {
            const r = c.getBoundingClientRect();
            for (let fy = 0.5; fy < 1; fy += 0.1) for (let fx = 0.1; fx < 1; fx += 0.1) {
                const x = r.left + fx * r.width, y = r.top + fy * r.height;
                if (document.elementFromPoint(x, y) === c) return [x, y];
            }
            return null;
        }"""
    )
    assert at, "the point is covered by others everywhere"
    page.mouse.click(at[0], at[1])


def test_roofline_point_moves_the_timeline(module_page, expected: dict, artifacts_dir) -> None:
    page = module_page
    point = expected["point"]
    roofline = page.locator(ROOFLINE).first
    roofline.scroll_into_view_if_needed()
    before = view(page)
    _click_point(page, point["index"])
    wait_data(page, ROOFLINE, "data-selected-point", f"v === '{point['index']}'")

    # Its details box names it, as text: the short name the report gives it, the kernel's
    # full name on hover.
    name = roofline.locator(".gp-rl-details .gp-rl-details-name").first
    name.wait_for(state="visible")
    assert name.inner_text() == (point["label"] or point["name"])
    assert name.get_attribute("title") == point["name"]

    # The timeline outlines all its instances and shows the longest one.
    wait_data(
        page,
        TIMELINE,
        "data-highlight-count",
        f"v === '{min(point['instances'], MAX_POINT_MARKS)}'",
    )
    start, end = view(page)
    assert (start, end) != before
    tol = 1e-6 * (point["end"] - point["start"]) + 1
    assert start <= point["start"] + tol and end >= point["end"] - tol, (start, end, point)
    assert end - start <= (point["end"] - point["start"]) * 1.01 + 20, (start, end, point)
    roofline.screenshot(path=str(artifacts_dir / "panels-roofline-selected.png"))
    plot(page)
    page.screenshot(path=str(artifacts_dir / "panels-roofline-timeline.png"))


def test_roofline_point_instance_is_on_screen(module_page, expected: dict) -> None:
    # The trace's CPU stacks are deep: its GPU lanes start below the plot's fold.
    page = module_page
    point = expected["point"]
    page.locator(ROOFLINE).first.scroll_into_view_if_needed()
    _click_point(page, point["index"])
    wait_data(page, TIMELINE, "data-highlight-count", "v !== '0'")
    box = plot(page)
    v = view(page)
    mid = (point["start"] + point["end"]) / 2
    found = hover_find(
        page, box, [box.x_of_time(mid, v)], lambda text: text.splitlines()[0] == point["name"]
    )
    assert found, "the point's heaviest instance is not in the visible lanes"


def _click_evidence(page, ev: dict) -> tuple[float, float]:
    hint = page.locator(f'{HINTS} li[data-hint="{ev["hint"]}"]').first
    button = hint.locator(f'[data-evidence="{ev["hint"]}:{ev["evidence"]}"]')
    if not button.is_visible():
        hint.locator("summary").first.click()  # expand the hint
    button.click()
    wait_data(page, HINTS, "data-active-evidence", f"v === '{ev['hint']}:{ev['evidence']}'")
    want = (min(w[0] for w in ev["windows"]), max(w[1] for w in ev["windows"]))
    page.wait_for_function(
        """([sel, s, e]) => {
            const d = document.querySelector(sel).dataset;
            const tol = 1e-6 * (e - s) + 1;
            return Math.abs(Number(d.viewStartNs) - s) <= tol
                && Math.abs(Number(d.viewEndNs) - e) <= tol;
        }""",
        arg=[TIMELINE, want[0], want[1]],
        timeout=10_000,
    )
    return want


def test_hint_evidence_zooms_the_timeline(module_page, expected: dict, artifacts_dir) -> None:
    page = module_page
    timeline = page.locator(TIMELINE).first
    # Evidence 0:0, whatever it is: the view becomes the envelope of its windows.
    first = expected["first"]
    assert first["windows"], first
    _click_evidence(page, first)
    # The outline is drawn once the events' rows come back from the kernel: wait for it.
    wait_data(page, TIMELINE, "data-highlight-count", f"v === '{first['events']}'")
    # Its windows (idle gaps here) are shaded on the timeline, so the evidence is visible.
    assert int(timeline.get_attribute("data-highlight-windows")) == len(first["windows"])
    page.screenshot(path=str(artifacts_dir / "panels-evidence-windows.png"))

    # A hint that names roofline points: opening it rings them on the chart; its evidence
    # outlines its events on the timeline and zooms to them.
    related = expected["related"]
    assert related["events"] > 0 and related["points"], related
    _click_evidence(page, related)
    wait_data(page, TIMELINE, "data-highlight-count", f"v === '{related['events']}'")
    shown = page.locator(ROOFLINE).first.get_attribute("data-highlighted-points")
    assert sorted(int(k) for k in shown.split(",")) == sorted(related["points"])
    chip = page.locator(".gpuprofile .gp-chip").first
    assert chip.is_visible() and related["label"] in chip.inner_text()
    page.locator(f'{HINTS} li[data-hint="{related["hint"]}"]').first.screenshot(
        path=str(artifacts_dir / "panels-hint-open.png")
    )
    plot(page)
    page.screenshot(path=str(artifacts_dir / "panels-hint-evidence.png"))
    # Escape (in the plot) stops the highlighting.
    page.locator(".gpuprofile .gp-scroller").first.focus()
    page.keyboard.press("Escape")
    wait_data(page, TIMELINE, "data-highlight-count", "v === '0'")
    assert chip.is_hidden()


def test_hint_evidence_outlines_are_on_screen(module_page, expected: dict) -> None:
    page = module_page
    related = expected["related"]
    _click_evidence(page, related)
    wait_data(page, TIMELINE, "data-highlight-count", f"v === '{related['events']}'")
    plot(page)
    # The plot loses highlight-coloured pixels when the highlighting stops: outlines were shown.
    outlined = highlight_pixels(page)
    page.locator(".gpuprofile .gp-chip-close").first.click()
    wait_data(page, TIMELINE, "data-highlight-count", "v === '0'")
    assert outlined - highlight_pixels(page) > 50, "no outlined event in the visible lanes"


def test_copy_puts_the_fix_code_on_the_clipboard(
    module_page, jupyterlab: str, expected: dict
) -> None:
    page = module_page
    related = expected["related"]
    assert related["code"], related
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=jupyterlab)
    hint = page.locator(f'{HINTS} li[data-hint="{related["hint"]}"]').first
    copy = hint.locator(f'[data-copy="{related["hint"]}"]')
    if not copy.is_visible():
        hint.locator("summary").first.click()
    copy.click()
    wait_data(page, f'{HINTS} [data-copy="{related["hint"]}"]', "data-copied", "v === 'yes'")
    assert page.evaluate("() => navigator.clipboard.readText()") == related["code"]


def _luminance(page, script: str) -> float:
    """Relative luminance (0 black .. 1 white) of an rgb() colour the script returns."""
    rgb = page.evaluate(script)
    r, g, b = (float(x) for x in re.findall(r"[\d.]+", rgb)[:3])
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255


def test_dark_theme_reaches_panels_and_canvas(
    module_page, expected: dict, artifacts_dir: Path
) -> None:
    page = module_page
    background = "() => getComputedStyle(document.querySelector('.gpuprofile')).backgroundColor"
    # The plot's colour at its top-left corner (empty axis area), after a repaint.
    canvas_pixel = """async () => {
        await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
        const c = document.querySelector('.gpuprofile .gp-timeline canvas');
        const [r, g, b] = c.getContext('2d').getImageData(2, 2, 1, 1).data;
        return `rgb(${r}, ${g}, ${b})`;
    }"""
    assert _luminance(page, background) > 0.8
    assert _luminance(page, canvas_pixel) > 0.8
    page.evaluate(
        "() => { window.jupyterapp.commands.execute('apputils:change-theme',"
        " {theme: 'JupyterLab Dark'}); }"
    )
    try:
        page.wait_for_function(
            "() => document.body.dataset.jpThemeLight === 'false'", timeout=30_000
        )
        page.wait_for_timeout(500)  # the theme's stylesheet applies, then the canvas repaints
        focus_plot(page, plot(page))  # a view change repaints; the theme is read at each paint
        page.keyboard.press("w")
        page.keyboard.press("0")
        assert _luminance(page, background) < 0.3
        assert _luminance(page, canvas_pixel) < 0.3
        page.locator(".gpuprofile").first.screenshot(path=str(artifacts_dir / "panels-dark.png"))
    finally:
        page.evaluate(
            "() => { window.jupyterapp.commands.execute('apputils:change-theme',"
            " {theme: 'JupyterLab Light'}); }"
        )


def test_hint_cards_hold_their_text_and_copy_leaves_the_code_visible(
    module_page, expected: dict, artifacts_dir: Path
) -> None:
    page = module_page
    hints = page.locator(f"{HINTS} li[data-hint]")
    for i in range(hints.count()):
        hint = hints.nth(i)
        if hint.locator("details").first.get_attribute("open") is None:
            hint.locator("summary").first.click()
    # Every open card: its text (fix steps, explanation, numbers) stays inside it, and the Copy
    # button sits clear of the code it copies (no code under it, at any scroll).
    problems = page.evaluate(
        """(sel) => {
            const out = [];
            const box = (el) => el.getBoundingClientRect();
            for (const card of document.querySelectorAll(sel)) {
                const c = box(card);
                const texts = card.querySelectorAll('.gp-hl-fix li, .gp-hl-explanation,'
                    + ' .gp-hl-method, .gp-hl-numbers, .gp-hl-title');
                for (const el of texts) {
                    const r = box(el);
                    if (r.right > c.right + 0.5 || el.scrollWidth > el.clientWidth + 1) {
                        out.push(`hint ${card.dataset.hint}: ${el.className || el.tagName} `
                            + `overflows (${r.right.toFixed(0)} > ${c.right.toFixed(0)})`);
                    }
                }
                const copy = card.querySelector('.gp-hl-copy');
                const pre = card.querySelector('.gp-hl-code pre');
                // The code stays inside the card, every line whole: long ones wrap.
                if (pre) {
                    const p = box(pre);
                    if (p.right > c.right + 0.5 || pre.scrollWidth > pre.clientWidth + 1) {
                        out.push(`hint ${card.dataset.hint}: code is clipped on the right`);
                    }
                }
                if (copy && pre) {
                    const a = box(copy), b = box(pre);
                    const apart = a.right <= b.left || b.right <= a.left
                        || a.bottom <= b.top || b.bottom <= a.top;
                    if (!apart) out.push(`hint ${card.dataset.hint}: Copy lies over the code`);
                    if (a.right > c.right + 0.5) out.push(`hint ${card.dataset.hint}: Copy is out`);
                }
            }
            return out;
        }""",
        f"{HINTS} li[data-hint]",
    )
    page.locator(HINTS).first.screenshot(path=str(artifacts_dir / "panels-hints-open.png"))
    assert not problems, problems


def test_roof_labels_do_not_cover_each_other(module_page, expected: dict, artifacts_dir) -> None:
    page = module_page
    roofline = page.locator(ROOFLINE).first
    roofline.scroll_into_view_if_needed()
    found = roof_label_overlaps(roofline)
    roofline.screenshot(path=str(artifacts_dir / "panels-roofline-labels.png"))
    # H100: DRAM, 5 compute roofs, their 5 ridges.
    assert found["count"] >= 6, found
    assert not found["overlaps"], found


def _shows_instances(page, want: dict) -> None:
    """The timeline outlines every instance of the name (up to its cap) and shows the longest."""
    wait_data(
        page,
        TIMELINE,
        "data-highlight-count",
        f"v === '{min(want['instances'], MAX_POINT_MARKS)}'",
    )
    page.wait_for_function(
        """([sel, s, e]) => {
            const d = document.querySelector(sel).dataset;
            const tol = 1e-6 * (e - s) + 1;
            return Number(d.viewStartNs) <= s + tol && Number(d.viewEndNs) >= e - tol
                && Number(d.viewEndNs) - Number(d.viewStartNs) <= (e - s) * 1.01 + 20;
        }""",
        arg=[TIMELINE, want["start"], want["end"]],
        timeout=10_000,
    )
    chip = page.locator(".gpuprofile .gp-chip").first
    assert chip.is_visible() and want["name"] in chip.inner_text()


def test_top_kernel_and_top_op_rows_show_their_instances(
    module_page, expected: dict, artifacts_dir: Path
) -> None:
    page = module_page
    kernel, op = expected["top_kernel"], expected["top_op"]
    summary = ".gpuprofile .gp-summary"
    # A click on the first row of the top kernels.
    row = page.locator(f'{summary} tr[data-top="kernels:{kernel["rank"]}:0"]').first
    row.scroll_into_view_if_needed()
    row.click()
    wait_data(page, summary, "data-selected-top", f"v === 'kernels:{kernel['rank']}:0'")
    _shows_instances(page, kernel)
    plot(page)
    page.screenshot(path=str(artifacts_dir / "panels-top-kernel.png"))
    # The keyboard reaches the rows too (they take focus): Enter on the first top op.
    op_row = page.locator(f'{summary} tr[data-top="ops:{op["rank"]}:0"]').first
    assert op_row.get_attribute("role") == "button" and op_row.get_attribute("tabindex") == "0"
    op_row.focus()
    page.keyboard.press("Enter")
    wait_data(page, summary, "data-selected-top", f"v === 'ops:{op['rank']}:0'")
    _shows_instances(page, op)
    # The key was the row's: the notebook did not take it too (Enter edits the cell).
    edit_mode = "() => document.querySelector('.jp-Notebook').classList.contains('jp-mod-editMode')"
    assert not page.evaluate(edit_mode)
