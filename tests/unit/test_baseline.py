"""A profile with a baseline: report()["baseline"] is the diff against it, in profile(), the
magic, the text report, the command line and the HTML page; a baseline that cannot be read
fails first, in one line, before any work runs."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell

import gpuprofile
from gpuprofile.cli import main
from gpuprofile.errors import TraceFormatError
from helpers.baseline_pair import write_pair
from helpers.hostile_trace import HOSTILE
from helpers.html_page import div_markup

US = 1000


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return write_pair(tmp_path_factory.mktemp("baseline"))


def _mm(times: int) -> None:
    import torch

    x = torch.ones(32, 32)
    for _ in range(times):
        x = x @ x / 32


def test_profile_with_a_baseline_reports_the_diff_of_real_captures() -> None:
    with gpuprofile.profile() as before:
        _mm(2)
    with gpuprofile.profile(baseline=before) as after:
        _mm(5)
    report = after.report()
    assert "baseline" not in before.report()
    # The same diff as gpuprofile.diff; there, each side is named by the run it was recorded as.
    diffed = gpuprofile.diff(before, after).to_dict()
    assert before.run is not None and after.run is not None
    assert diffed["a"].pop("run")["id"] == report["baseline"]["a"].pop("run")["id"] == before.run.id
    assert (
        diffed["b"].pop("run")["id"] == after.run.id and report["baseline"]["b"].pop("run") is None
    )
    assert report["baseline"] == diffed
    (mm,) = [row for row in report["baseline"]["ops"] if row["name"] == "aten::mm"]
    assert (mm["a_count"], mm["b_count"]) == (2, 5)
    ops = after.trace.ops
    assert mm["b_ns"] == int(ops["dur_ns"][ops["name"].astype(str) == "aten::mm"].sum())
    wall = report["baseline"]["summary"]["wall_ns"]
    assert (wall["a"], wall["b"]) == (
        before.report()["ranks"][0]["wall_ns"],
        report["ranks"][0]["wall_ns"],
    )


def test_a_bad_baseline_fails_before_the_block_runs(tmp_path: Path) -> None:
    ran = []
    missing = tmp_path / "missing.json"
    with (
        pytest.raises(TraceFormatError, match="no such file"),
        gpuprofile.profile(baseline=missing),
    ):
        ran.append(True)
    assert ran == []


def test_with_baseline_on_a_loaded_trace_and_its_text(pair: tuple[Path, Path]) -> None:
    before, after = pair
    profile = gpuprofile.load(after, baseline=str(before))
    diff = profile.report()["baseline"]
    assert diff == gpuprofile.diff(before, after).to_dict()
    # From the documents: the hostile kernel went from 50 to 80 us, added_kernel is new.
    rows = {row["name"]: row for row in diff["kernels"]}
    assert (rows[HOSTILE]["a_ns"], rows[HOSTILE]["b_ns"]) == (50 * US, 80 * US)
    assert rows["added_kernel"]["matched_by"] == "only in b"
    assert [e["kind"] for e in diff["hints"]["fixed"]] == ["pageable-copy"]
    text = profile.text()
    section = text[text.index("Against baseline") :]
    assert str(before) in section.splitlines()[0]
    assert "+30.0 µs  50.0 µs -> 80.0 µs" in section
    assert "hints fixed: 1 pageable copy" in section
    assert "Against baseline" not in gpuprofile.load(after).text()


def test_magic_baseline_compares_and_a_bad_one_is_one_line(
    shell: InteractiveShell, pair: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    before, _ = pair
    result = shell.run_cell(
        f"%%gpuprofile --baseline {before}\nimport torch\ntorch.ones(4).sum()\n"
    )
    assert result.success, result.error_in_exec
    diff = gpuprofile.last().report()["baseline"]
    assert diff["a"]["path"] == str(before) and diff["b"]["path"] is None
    capsys.readouterr()

    missing = before.parent / "nope.json"
    result = shell.run_cell(f"%%gpuprofile --baseline {missing}\nran_with_bad_baseline = True\n")
    assert not result.success and "ran_with_bad_baseline" not in shell.user_ns
    out, err = capsys.readouterr()
    printed = [line for line in (out + err).splitlines() if line.strip()]
    assert printed == [f"UsageError: --baseline {missing}: no such file or directory"]

    result = shell.run_cell("%%gpuprofile --baseline fast-run\nran_with_label = True\n")
    assert not result.success and "ran_with_label" not in shell.user_ns
    out, err = capsys.readouterr()
    printed = [line for line in (out + err).splitlines() if line.strip()]
    assert len(printed) == 1 and printed[0].startswith("UsageError: --baseline fast-run: ")


def test_cli_report_baseline_json_html_and_bad_ref(
    pair: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before, after = pair
    out = tmp_path / "page.html"
    code = main(
        ["report", str(after), "--baseline", str(before), "--format", "json", "--html", str(out)]
    )
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["baseline"] == gpuprofile.diff(before, after).to_dict()
    page = out.read_text(encoding="utf-8")
    markup = div_markup(page)
    assert "Against baseline" in markup and 'data-hint="fixed"' in markup
    assert html.escape(HOSTILE) in markup and HOSTILE not in markup

    code = main(["report", str(after), "--baseline", str(tmp_path / "gone.json")])
    assert code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "gone.json: no such file" in captured.err


def test_html_section_bars_and_rows(pair: tuple[Path, Path]) -> None:
    from gpuprofile.report.html_diff import baseline_html

    before, after = pair
    section = baseline_html(gpuprofile.diff(before, after).document)
    # wall 2.25 ms -> 510 us (from the events: the pageable copy ends at 2.1 ms + 100 + 50 us).
    assert 'data-bar="wall"' in section and "2.25 ms" in section and "510 µs" in section
    assert "-1.74 ms" in section
    # The two kernels that moved (K1, K2 did not), and three op rows by their GPU time:
    # aten::mm (its hostile kernel) and aten::to > aten::copy_ (the copy, 2 ms -> 0.2 ms).
    assert section.count("<tr><td>") == 2 + 3
    assert html.escape(HOSTILE) in section and HOSTILE not in section


def _hint_groups(diff: dict[str, Any]) -> dict[str, int]:
    return {group: len(entries) for group, entries in diff["hints"].items()}


def test_the_other_way_round_the_hint_is_new(pair: tuple[Path, Path]) -> None:
    before, after = pair
    diff = gpuprofile.load(before, baseline=after).report()["baseline"]
    assert _hint_groups(diff)["new"] >= 1
    assert [e["kind"] for e in diff["hints"]["new"]] == ["pageable-copy"]


def test_the_saved_snapshot_keeps_the_diff(pair: tuple[Path, Path]) -> None:
    before, after = pair
    profile = gpuprofile.load(after, baseline=str(before))
    snapshot = html.unescape(profile.snapshot_html())
    assert "Against baseline" in snapshot
    # The hostile kernel's change, from the documents: 50 us before, 80 us after.
    assert "+30.0 µs" in snapshot and HOSTILE not in profile.snapshot_html()
