"""%%gpuprofile in a real IPython shell."""

from __future__ import annotations

from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

import gpuprofile


def run(shell: InteractiveShell, cell: str):  # type: ignore[no-untyped-def]
    return shell.run_cell(cell, store_history=True)


def test_cell_runs_in_the_user_namespace(shell: InteractiveShell) -> None:
    result = run(shell, "%%gpuprofile\nimport torch\nw = torch.ones(8, 8) @ torch.ones(8, 8)\n")
    assert result.success, result.error_in_exec
    assert float(shell.user_ns["w"][0, 0]) == 8.0
    profile = gpuprofile.last()
    assert profile.partial is False
    assert "aten::mm" in set(profile.trace.ops["name"].astype(str))


def test_display_carries_the_widget_and_the_text_in_a_kernel_only(
    shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(shell, "%%gpuprofile\nimport torch\ntorch.ones(4).cumsum(0)\n")
    profile = gpuprofile.last()
    # Terminal IPython (no kernel): the text report, and no widget is built for nobody.
    bundle, _ = profile._repr_mimebundle_()
    assert set(bundle) == {"text/plain"}
    assert bundle["text/plain"].startswith("gpuprofile report (capture)")
    assert profile._widget is None
    monkeypatch.setattr(shell, "kernel", object(), raising=False)
    bundle, _ = profile._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/plain"].startswith("gpuprofile report (capture)")


def test_options_are_parsed_and_documented(shell: InteractiveShell, tmp_path: Path) -> None:
    export = tmp_path / "cell.json"
    result = run(
        shell,
        f"%%gpuprofile --memory --no-shapes --export {export}\nimport torch\n"
        "t = torch.zeros(1000)\n",
    )
    assert result.success, result.error_in_exec
    assert export.exists()
    profile = gpuprofile.last()
    assert len(profile.trace.memory) > 0
    assert profile.trace.ops["input_dims"].isna().all()
    doc = shell.find_cell_magic("gpuprofile").__doc__
    assert doc is not None and "--memory" in doc and "--export" in doc


def test_hardware_option_takes_a_variable(shell: InteractiveShell) -> None:
    run(
        shell,
        "from gpuprofile.hardware import Hardware\n"
        "box = Hardware(name='box', source='user', peak_flops={'fp32': 1e12},"
        " dram_bytes_per_s=5e10)\nnot_hw = 3",
    )
    result = run(shell, "%%gpuprofile --hardware box\nimport torch\ntorch.ones(3).sum()\n")
    assert result.success, result.error_in_exec
    assert gpuprofile.last().report()["hardware"]["name"] == "box"
    result = run(shell, "%%gpuprofile --hardware not_hw\nran = True\n")
    assert not result.success
    assert "ran" not in shell.user_ns


def test_a_rerun_cell_closes_the_widget_it_showed_before(
    shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch
) -> None:
    # In a kernel a widget, with the profile it holds, lives until it is closed; a re-run
    # replaces the cell's output but not the widget. JupyterLab names the cell it runs.
    monkeypatch.setattr(shell, "kernel", object(), raising=False)
    cell = "%%gpuprofile --interval 0\nimport torch\ntorch.ones(4).cumsum(0)\n"
    profiles = []
    for cell_id in ("cell-a", "cell-a", "cell-b"):
        monkeypatch.setattr(shell, "parent_header", {"metadata": {"cellId": cell_id}}, False)
        assert run(shell, cell).success
        profiles.append(gpuprofile.last())
    first, rerun, other = (p._widget for p in profiles)
    assert first is not rerun and first.comm is None  # closed by the re-run of cell-a
    assert rerun.comm is not None and other.comm is not None
    # The closed run's Profile, shown again, gets a new widget.
    again = profiles[0].widget()
    assert again is not first and again.comm is not None


def test_a_profile_shown_in_a_kernel_is_the_widget_then_the_snapshot(
    shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run(shell, "%%gpuprofile --interval 0\nimport torch\ntorch.ones(4).cumsum(0)\n")
    capsys.readouterr()
    # Terminal IPython: the cell's value is the text report, as before.
    run(shell, "import gpuprofile\ngpuprofile.last()")
    assert "gpuprofile report (capture)" in capsys.readouterr().out
    published: list[tuple[dict, dict]] = []
    monkeypatch.setattr(
        shell.display_pub,
        "publish",
        lambda data, metadata=None, **kw: published.append((data, metadata or {})),
    )
    monkeypatch.setattr(shell, "kernel", object(), raising=False)
    # In a kernel, as a cell's value and through display(): two outputs each.
    run(shell, "gpuprofile.last()")
    run(shell, "display(gpuprofile.last())")
    assert len(published) == 4
    for (widget, _), (snapshot, metadata) in (published[:2], published[2:]):
        assert "application/vnd.jupyter.widget-view+json" in widget
        assert "gpuprofile report" not in widget["text/plain"]
        assert snapshot["text/plain"] == gpuprofile.last().text()
        assert 'class="gp-report gpuprofile-snapshot"' in snapshot["text/html"]
        assert metadata["gpuprofile"]["snapshot"] is True
