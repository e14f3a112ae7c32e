"""The standalone HTML report: self-contained, names escaped, the CLI's --html."""

from __future__ import annotations

import html
import re
from collections import defaultdict
from pathlib import Path

import pytest

import gpuprofile
from gpuprofile.cli import main
from gpuprofile.report.html_plots import roofline_figure, timeline_figure
from gpuprofile.units import format_time
from helpers.hostile_trace import BREAKOUT, HOSTILE, report_events
from helpers.html_page import div_markup
from helpers.kineto_docs import document, write


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[dict]]:
    root = tmp_path_factory.mktemp("html")
    events = report_events()
    trace = write(root / "t.json", document(events))
    out = root / "report.html"
    written = gpuprofile.load(trace).save_html(out)
    text = out.read_text(encoding="utf-8")
    assert written == len(text.encode("utf-8"))
    return text, events


def test_page_makes_no_network_reference(page: tuple[str, list[dict]]) -> None:
    text, _ = page
    assert re.search(r"<script[^>]*\bsrc\s*=", text, re.I) is None
    assert re.search(r"<link[^>]*\bhref\s*=\s*[\"']?https?:", text, re.I) is None
    # bokeh's own JS names a MathJax CDN it fetches only for TeX; the markup names nothing.
    markup = re.sub(r"<script\b[^>]*>.*?</script>", "", text, flags=re.S | re.I)
    assert re.search(r"(https?:)?//", markup) is None
    # bokeh's JS is inlined: a large page.
    assert len(text) > 500_000


def test_top_kernel_names_appear_escaped(page: tuple[str, list[dict]]) -> None:
    text, events = page
    markup = div_markup(text)
    totals: dict[str, float] = defaultdict(float)
    for event in events:
        if event["cat"] == "kernel":
            totals[event["name"]] += event["dur"]
    for name in sorted(totals, key=totals.__getitem__, reverse=True):
        assert f"<td>{html.escape(name, quote=True)}</td>" in markup, name


def test_hostile_names_stay_text(page: tuple[str, list[dict]]) -> None:
    text, _ = page
    markup = div_markup(text)
    # The Divs' markup is HTML: names only escaped, never raw.
    assert HOSTILE not in markup and "<img" not in markup.lower()
    assert html.escape(HOSTILE, quote=True) in markup
    assert BREAKOUT not in markup and "<script" not in markup.lower()
    # A name closing bokeh's JSON <script> would run the next one: nowhere raw in the file.
    assert BREAKOUT not in text and HOSTILE not in text
    scripts = re.findall(r"<script\b[^>]*>(.*?)</script>", text, flags=re.S | re.I)
    assert not any(s.strip().startswith("window.pwned") for s in scripts)


def test_page_holds_every_section(page: tuple[str, list[dict]]) -> None:
    markup = div_markup(page[0])
    for heading in ("Summary", "Gauges", "Kernel timeline", "Roofline", "Hints"):
        assert f"{heading}</h" in markup, heading


def test_timeline_keeps_the_longest_kernels(tmp_path: Path) -> None:
    trace = gpuprofile.load(write(tmp_path / "t.json", document(report_events()))).trace
    durations = sorted(trace.kernels["dur_ns"].tolist(), reverse=True)
    figure, note = timeline_figure(trace, limit=5)
    assert figure is not None and "5 longest of 12 kernels" in note
    source = figure.renderers[0].data_source
    kept = sorted(
        (round((r - left) * 1e6) for left, r in zip(source.data["left"], source.data["right"])),
        reverse=True,
    )
    assert kept == durations[:5]


def test_cli_html_writes_the_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = write(tmp_path / "t.json", document(report_events()))
    out = tmp_path / "out.html"
    assert main(["report", str(trace), "--html", str(out)]) == 0
    captured = capsys.readouterr()
    assert f"wrote {out}" in captured.err
    assert out.stat().st_size > 500_000 and "<html" in out.read_text()


def test_cli_html_into_a_missing_directory_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = write(tmp_path / "t.json", document(report_events()))
    assert main(["report", str(trace), "--html", str(tmp_path / "nope" / "out.html")]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpuprofile: error: ")
    assert captured.out == ""


def test_roofline_draws_the_dram_and_compute_roofs() -> None:
    bandwidth, peak = 2.0e12, 60.0e12
    counts = {"flops": 1e9, "bytes": 1e8, "level": "op"}
    points = [
        {"name": "a", "intensity": 4.0, "achieved_flops_per_s": 5.0e12, "time_ns": 10, **counts},
        {"name": "b", "intensity": 200.0, "achieved_flops_per_s": 40.0e12, "time_ns": 30, **counts},
        {"name": "no FLOPs", "intensity": 4.0, "achieved_flops_per_s": 5.0e12, "flops": None},
    ]
    report = {
        "hardware": {
            "source": "user",
            "dram_bytes_per_s": bandwidth,
            "peak_flops": {"fp32": peak, "bf16": 1e15},
        },
        "roofline": {"points": points},
    }
    figure = roofline_figure(report)
    assert figure is not None
    lines = [r for r in figure.renderers if type(r.glyph).__name__ == "Line"]
    assert len(lines) == 3  # every roof the widget draws (fp32, bf16), and the DRAM slope named
    slope = lines[2].data_source.data
    for x, y in zip(slope["x"], slope["y"]):
        assert y == pytest.approx(bandwidth * x)
    xs, ys = lines[0].data_source.data["x"], lines[0].data_source.data["y"]
    for x, y in zip(xs, ys):
        assert y == pytest.approx(min(bandwidth * x, peak))
    assert peak / bandwidth in xs  # the ridge
    scatter = [r for r in figure.renderers if type(r.glyph).__name__ == "Scatter"][-1]
    assert list(scatter.data_source.data["x"]) == [4.0, 200.0]  # the point without FLOPs is not


def test_a_job_gets_its_ranks_table(tmp_path: Path) -> None:
    from gpuprofile.report.html import ranks_html

    job = tmp_path / "job"
    job.mkdir()
    walls = {}
    for rank in (0, 1):
        events = report_events(launches=4 + 4 * rank)
        starts = [e["ts"] for e in events]
        walls[rank] = max(e["ts"] + e["dur"] for e in events) - min(starts)
        doc = document(events, distributedInfo={"rank": rank, "world_size": 2})
        write(job / f"rank{rank}.json", doc)
    report = gpuprofile.load(job).report()
    markup = ranks_html(report)
    assert "<h2>Ranks</h2>" in markup
    rows = re.findall(r"<tr><td>(\d+)</td><td class=\"n\">([^<]+)</td>", markup)
    assert [int(r) for r, _ in rows] == [0, 1]
    for (_, wall), rank in zip(rows, (0, 1)):
        assert wall == format_time(walls[rank] * 1000)
    assert ranks_html(gpuprofile.load(job / "rank0.json").report()) == ""


def test_source_line_names_a_capture_once() -> None:
    from gpuprofile.report.html import summary_html

    def source_line(source: dict[str, str | None]) -> str:
        page = summary_html({"source": source, "hardware": {}, "ranks": [], "notices": []})
        return page.split("<p>Source: ", 1)[1].split("<br>", 1)[0]

    # A capture has no path: "capture", not "capture (capture)".
    assert source_line({"format": "capture", "path": None, "version": None}) == "capture"
    assert source_line({"format": "kineto", "path": "/t/a.json", "version": "1.0"}) == (
        "/t/a.json (kineto, 1.0)"
    )
