"""The static snapshot a saved notebook keeps: bounded, complete, escaped, no script."""

from __future__ import annotations

import base64
import html
import io
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

import gpuprofile
from gpuprofile.profiles import WIDGET_TEXT, Profile, widget_outputs
from gpuprofile.report.snapshot import LIMIT, render_snapshot
from gpuprofile.report.snapshot_svg import LANE_H, WIDTH
from gpuprofile.units import format_time
from helpers.hostile_trace import BREAKOUT, HOSTILE, report_events
from helpers.kineto_docs import document, write
from helpers.synthetic import synthetic_trace


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Profile:
    root = tmp_path_factory.mktemp("snapshot")
    return gpuprofile.load(write(root / "t.json", document(report_events())))


def text_of(markup: str) -> str:
    """The page's text as a reader sees it: tags dropped, entities decoded."""
    return html.unescape(
        re.sub(r"<[^>]+>", " ", re.sub(r"<style>.*?</style>", "", markup, flags=re.S))
    )


def test_snapshot_says_what_the_report_says(hostile: Profile) -> None:
    report = hostile.report()
    markup = render_snapshot(report, hostile.trace, run_id="run-42")
    text = text_of(markup)
    rank = report["ranks"][0]
    # The summary numbers, formatted by units.py from the report's own values.
    assert f"Wall: {format_time(rank['wall_ns'])}" in text
    assert f"GPU busy: {format_time(rank['gpu']['busy_ns'])}" in text
    for cause, ns in rank["idle_by_cause"].items():
        if ns:
            assert cause in text and format_time(ns) in text
    assert report["hints"], "the hostile trace provokes hints"
    for hint in report["hints"]:
        assert hint["title"] in text
        for step in hint["fix"]:
            assert step in text
        if hint.get("code"):
            assert hint["code"].strip() in text
    assert 'gpuprofile.show("run-42")' in text
    assert "gpuprofile.show" not in text_of(render_snapshot(report, hostile.trace))


def test_snapshot_promises_what_show_gives(hostile: Profile, tmp_path: Path) -> None:
    """A run recorded without its trace: show() gives the report, not the widget, and the
    snapshot says so; with --keep-trace it gives the interactive view."""
    from gpuprofile.show import show
    from gpuprofile.store.history import History

    store = History(tmp_path / "history.sqlite")
    for keep in (False, True):
        profile = Profile(hostile.trace)  # the module's profile stays unrecorded
        run = profile.save(keep_trace=keep, history=store)
        text = " ".join(text_of(profile.snapshot_html(run.id)).split())
        shown = show(run)
        if keep:
            assert f'For the interactive view, run gpuprofile.show("{run.id}") in a cell' in text
            assert isinstance(shown, Profile)
        else:
            assert f'gpuprofile.show("{run.id}") shows this report again' in text
            assert "kept no trace" in text and "--keep-trace" in text
            assert "interactive view" not in text
            assert "trace not kept" in repr(shown)  # the report, not a Profile


def test_trace_names_stay_text_and_nothing_runs(hostile: Profile) -> None:
    markup = render_snapshot(hostile.report(), hostile.trace)
    assert re.search(r"<script", markup, re.I) is None
    assert re.search(r"<[^<>]*\son\w+\s*=", markup, re.I) is None  # no handler attribute
    assert HOSTILE not in markup and BREAKOUT not in markup
    assert html.escape(HOSTILE) in markup
    # Read back as text, the names are there as the trace spelled them.
    assert HOSTILE in text_of(markup)
    # One <style>, and every one of its rules is scoped to the snapshot or the output area.
    styles = re.findall(r"<style>(.*?)</style>", markup, re.S)
    assert len(styles) == 1
    for rule in re.findall(r"([^{}]+)\{[^{}]*\}", styles[0]):
        for selector in rule.split(","):
            assert selector.strip().startswith((".gp-report", ".gpuprofile-snapshot", ".jp-"))


def pictures(markup: str) -> dict[str, str]:
    """The snapshot's pictures: each <img> class with its SVG, decoded from the data URI."""
    found = re.findall(
        r'<img class="([\w-]+)"[^>]*src="data:image/svg\+xml;base64,([^"]+)"', markup
    )
    return {name: base64.b64decode(data).decode("utf-8") for name, data in found}


def lane_image(svg: str) -> Image.Image:
    """The timeline's lanes: the PNG embedded in its SVG."""
    data = re.search(r'href="data:image/png;base64,([^"]+)"', svg).group(1)  # type: ignore[union-attr]
    return Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB")


def test_pictures_are_drawn(hostile: Profile) -> None:
    markup = render_snapshot(hostile.report(), hostile.trace)
    assert re.search(r"<svg", markup) is None  # sanitizers drop inline SVG; images stay
    svgs = pictures(markup)
    timeline, roofline = svgs["gp-snapshot-timeline"], svgs["gp-snapshot-roofline"]
    assert "<script" not in timeline + roofline
    # One lane per stream (7 and 8), then the CPU thread, in that order.
    kernels = hostile.trace.kernels
    labels = re.findall(r">([^<>]+)</text>", timeline)
    assert labels[:3] == ["GPU 0 · stream 7", "GPU 0 · stream 8", "CPU · thread 1"]
    # Each kernel's middle is a coloured pixel on its stream's row, and the gap before the
    # first kernel is white (computed here from the kernels table, not by the module).
    image = lane_image(timeline)
    t0 = min(int(hostile.trace.ops["start_ns"].min()), int(kernels["start_ns"].min()))
    t1 = max(
        int((kernels["start_ns"] + kernels["dur_ns"]).max()),
        int((hostile.trace.ops["start_ns"] + hostile.trace.ops["dur_ns"]).max()),
    )
    for start, dur, stream in zip(kernels["start_ns"], kernels["dur_ns"], kernels["stream"]):
        x = int((start + dur / 2 - t0) / (t1 - t0) * WIDTH)
        y = (0 if int(stream) == 7 else 1) * LANE_H + LANE_H // 2
        assert image.getpixel((x, y)) != (255, 255, 255), (start, stream)
    first = int(kernels["start_ns"].min())
    assert image.getpixel((int((first - t0) / (t1 - t0) * WIDTH) - 2, LANE_H // 2)) == (
        255,
        255,
        255,
    )
    # The points of the first level (ops) whose FLOPs, bytes and rate are all known and positive.
    points = hostile.report()["roofline"]["points"]
    level = "op" if any(p["level"] == "op" and p.get("flops") for p in points) else "kernel"
    known = ("flops", "bytes", "intensity", "achieved_flops_per_s")
    drawn = [p for p in points if p["level"] == level and all((p.get(k) or 0) > 0 for k in known)]
    assert drawn and roofline.count('<circle class="point"') == len(drawn)


def test_a_million_kernels_stay_under_the_limit() -> None:
    trace = synthetic_trace(1_000_000, streams=8, ranks=2, memory_events=0)
    # The report of a small trace, blown up as a large job's would be: many ranks, many hints
    # and roofline points, names of kilobytes (C++ templates).
    small = Profile(synthetic_trace(2_000, streams=2)).report()
    long_name = "void cutlass::Kernel<" + "T," * 3000 + ">"
    report: dict[str, Any] = dict(small)
    rank = dict(small["ranks"][0])
    rank["top_kernels"] = [
        dict(k, name=long_name + str(i)) for i, k in enumerate(rank["top_kernels"])
    ]
    report["ranks"] = [dict(rank, rank=r) for r in range(64)]
    hint = small["hints"][0]
    report["hints"] = [dict(hint, title=long_name, explanation=long_name * 5) for _ in range(300)]
    point = {"name": long_name, "intensity": 10.0, "achieved_flops_per_s": 1e12, "time_ns": 5}
    report["roofline"] = {
        "coverage": 0.5,
        "points": [dict(point, intensity=1.0 + i) for i in range(5000)],
    }
    markup = render_snapshot(report, trace, run_id="x")
    size = len(markup.encode("utf-8"))
    assert size <= LIMIT, size
    assert "and 56 more ranks" in markup and "288 more hints" in markup
    # The timeline shows every stream of both ranks though they hold 2M kernels.
    assert pictures(markup)["gp-snapshot-timeline"].count("GPU 0 · stream") == 16


def test_busy_shading_matches_an_independent_count() -> None:
    from gpuprofile.report.snapshot_svg import _busy_per_pixel

    rng = np.random.default_rng(3)
    start = rng.integers(0, 10_000, 500)
    end = start + rng.integers(1, 300, 500)
    edges = np.linspace(0, 10_400, 53)
    got = _busy_per_pixel(start, end, edges)
    # Per pixel, the covered nanoseconds counted one by one (overlaps add, then clip at 1).
    for k in range(len(edges) - 1):
        lo, hi = edges[k], edges[k + 1]
        covered = sum(max(0.0, min(e, hi) - max(s, lo)) for s, e in zip(start, end))
        assert got[k] == pytest.approx(min(covered / (hi - lo), 1.0), abs=1e-9)


def test_steps_distribution(hostile: Profile) -> None:
    report = dict(hostile.report())
    windows = [7_000, 3_000, 11_000, 5_000]
    steps = [{"name": f"s{i}", "window_ns": w, "busy_ns": w // 2} for i, w in enumerate(windows)]
    rank = report["ranks"][0]
    report["ranks"] = [dict(rank, gpu=dict(rank["gpu"], steps=steps))]
    text = text_of(render_snapshot(report, None))
    assert f"4 steps, median {format_time(6_000)}" in text
    assert f"fastest {format_time(3_000)}, slowest {format_time(11_000)}" in text
    assert "No trace kept" in text


def test_a_notebook_gets_the_widget_then_the_snapshot(hostile: Profile) -> None:
    (widget, _), (snapshot, metadata) = widget_outputs(hostile, "r1")
    assert "application/vnd.jupyter.widget-view+json" in widget
    assert widget["text/plain"] == WIDGET_TEXT
    assert snapshot["text/plain"] == hostile.text()
    assert snapshot["text/html"] == hostile.snapshot_html("r1")
    assert metadata == {"gpuprofile": {"snapshot": True, "run_id": "r1"}}


def test_gauge_roofs_are_not_parenthesized_twice() -> None:
    """A roof's label ends in its source ("... (calibrated)"): the text report and the
    snapshot name it after the percentage, never inside another pair of parentheses."""
    from gpuprofile.report.snapshot import _gauge_bars
    from gpuprofile.report.text import _gauge_lines

    label = "CPU Xeon (2 threads) DRAM bandwidth (calibrated)"
    gauge = {
        "key": "dram", "label": "DRAM bandwidth", "rank": 0, "value": 5e9, "unit": "B/s",
        "roof": 2e10, "roof_label": label, "roof_source": "calibrated", "fraction": 0.25,
        "note": "over the 1.00 ms of 1.00 ms whose bytes are known",
    }  # fmt: skip
    (line,) = _gauge_lines([gauge], 0)
    assert line == (
        f"  DRAM bandwidth: 5.00 GB/s of 20.0 GB/s (25%), roof: {label}; {gauge['note']}"
    )
    cells = text_of(_gauge_bars({"gauges": [gauge]}))
    assert f"25% of 20.0 GB/s, roof: {label}" in cells
    assert "))" not in line and "))" not in cells
