"""gpuprofile.sweep and %%gpuprofile --sweep on real CPU captures: the exponents of what the
test builds to grow by a known law (a matmul's FLOPs as n^3, its output's bytes as n^2), the
warm-up calls unrecorded, every repeat in the history, the plot and the bad input."""

from __future__ import annotations

import math
import re
from pathlib import Path

import msgspec
import pytest
import torch
from IPython.core.interactiveshell import InteractiveShell

import gpuprofile
from gpuprofile.errors import OptionError

VALUES = [16, 32, 64]


class Square(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ x  # 2 n^3 FLOPs; one n x n float32 output, 4 n^2 bytes


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.square = Square()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.square(x)


@pytest.fixture(scope="module")
def swept() -> tuple[gpuprofile.Sweep, list[int]]:
    model = Model()
    calls: list[int] = []
    inputs = {n: torch.ones(n, n) for n in VALUES}

    def step(n: int) -> None:
        calls.append(n)
        with torch.no_grad():
            model(inputs[n])

    result = gpuprofile.sweep(
        step, VALUES, name="n", repeat=3, warmup=2, at=128, label="square", profile_memory=True
    )
    return result, calls


def test_exponents_of_what_grows_by_a_known_law(swept: tuple[gpuprofile.Sweep, list[int]]) -> None:
    result, _ = swept
    report = result.report()
    assert report["schema"] == "gpuprofile.sweep/1"
    assert report["parameter"] == "n" and report["values"] == [16.0, 32.0, 64.0]
    fits = {(f["subject"], f["metric"]): f for f in report["fits"]}
    flops = fits[("Model.square", "flops")]
    assert flops["exponent"] == pytest.approx(3.0, abs=1e-9)
    assert flops["r2"] == pytest.approx(1.0)
    peak = fits[("Model.square", "peak_bytes")]
    assert peak["exponent"] == pytest.approx(2.0, abs=1e-9)
    # Each point's module row: the FLOPs and bytes the test's shapes give.
    for point, n in zip(report["points"], VALUES, strict=True):
        row = next(m for m in point["modules"] if m["path"] == "Model.square")
        assert row["flops"] == 2 * n**3
        assert row["peak_bytes"] == 4 * n * n
        assert point["repeats"] == 3 and len(point["step_samples_ns"]) == 3
        assert point["step_ns"] == sorted(point["step_samples_ns"])[1]
    # Time is measured, not built: a fit over 9 samples with a finite interval around it.
    time = fits[("total", "time")]
    lo, hi = time["interval"]
    assert lo <= time["exponent"] <= hi and time["samples"] == 9
    # The projection at n=128 of an exact law is the law.
    figures = {(f["subject"], f["metric"]): f for f in report["projection"]["figures"]}
    assert report["projection"]["value"] == 128
    assert figures[("Model.square", "flops")]["value"] == pytest.approx(2 * 128**3, rel=1e-6)
    assert figures[("Model.square", "peak_bytes")]["value"] == pytest.approx(4 * 128**2, rel=1e-6)
    text = result.text()
    assert "Model.square grows as" in text and "n^3.0" in text and "n^2.0" in text
    assert "at n=128" in text


def test_warmup_is_not_recorded_and_each_repeat_is(
    swept: tuple[gpuprofile.Sweep, list[int]],
) -> None:
    result, calls = swept
    assert calls == [n for n in VALUES for _ in range(2 + 3)]
    runs = [run for point in result.points for run in point.runs]
    assert len(runs) == len(set(runs)) == 9
    labels = {run.id: run.label for run in gpuprofile.runs(limit=None)}
    assert [labels[r] for r in runs] == [f"square n={n}" for n in VALUES for _ in range(3)]


def test_the_plot_and_the_page(swept: tuple[gpuprofile.Sweep, list[int]], tmp_path: Path) -> None:
    result, _ = swept
    svg = result.svg("flops")
    assert svg.startswith("<svg") and svg.count('class="point"') >= 2 * len(VALUES)
    page = tmp_path / "sweep.html"
    assert result.save_html(page) == page.stat().st_size
    html = page.read_text()
    assert html.count("<svg") == 3  # time, FLOPs, peak memory
    assert "Model.square" in html
    bundle = result._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}
    with pytest.raises(OptionError):
        result.svg("watts")
    # Another projection asked of the same points.
    again = result.report(at=256)
    figure = next(
        f for f in again["projection"]["figures"] if f["subject"] == "Model.square"
        and f["metric"] == "flops"
    )  # fmt: skip
    assert math.isclose(figure["value"], 2 * 256**3, rel_tol=1e-6)


@pytest.mark.parametrize(
    ("values", "words"),
    [([0, 1], "above 0"), ([4], "two different"), (["a", 2], "numbers"), ([2, 2], "two")],
)
def test_bad_values_are_refused_before_anything_runs(values: list[object], words: str) -> None:
    calls: list[object] = []
    with pytest.raises(OptionError, match=words):
        gpuprofile.sweep(calls.append, values)  # type: ignore[arg-type]
    assert calls == []


def test_magic_sweep_binds_the_name(shell: InteractiveShell) -> None:
    shell.run_cell("import torch\nseen = []", store_history=True)
    result = shell.run_cell(
        "%%gpuprofile --sweep N=8,16 --repeat 2 --warmup 0\nseen.append(N)\n"
        "y = torch.ones(N, N) @ torch.ones(N, N)\n",
        store_history=True,
    )
    assert result.success, result.error_in_exec
    assert shell.user_ns["seen"] == [8, 8, 16, 16]
    bad = shell.run_cell("%%gpuprofile --sweep N=8\nseen.append(N)\n", store_history=True)
    assert not bad.success and shell.user_ns["seen"] == [8, 8, 16, 16]
    steps = shell.run_cell("%%gpuprofile --sweep N=8,16 --steps 1,1\nseen.append(N)\n")
    assert not steps.success and shell.user_ns["seen"] == [8, 8, 16, 16]


def test_the_widget_carries_the_layouts_the_page_draws(
    swept: tuple[gpuprofile.Sweep, list[int]],
) -> None:
    result, _ = swept
    widget = result.widget()
    assert [p["metric"] for p in widget.plots] == ["time", "flops", "peak_bytes"]
    assert widget.plots == [msgspec.to_builtins(p) for p in result.plots()]
    assert widget.text == result.text() and len(widget.palette) >= 6


def test_a_value_that_runs_out_of_memory_ends_the_sweep_with_what_ran() -> None:
    calls: list[int] = []

    def step(n: int) -> None:
        calls.append(n)
        if n >= 32:
            torch.empty(1 << 60, dtype=torch.uint8)  # the CPU allocator refuses this
        torch.ones(n, n).sum()

    result = gpuprofile.sweep(step, [8, 16, 32, 64], name="n", repeat=2, warmup=0, label="oom")
    assert calls == [8, 8, 16, 16, 32]  # 64 never ran
    report = result.report()
    assert [p["value"] for p in report["points"]] == [8.0, 16.0]
    stopped = report["stopped"]
    assert stopped["value"] == 32 and "allocate" in stopped["error"]
    failed = next(r for r in gpuprofile.runs(limit=None) if r.id == stopped["run"])
    assert failed.label == "oom n=32"
    assert "stopped at n=32, larger values not run" in result.text()


def test_another_error_propagates_with_the_finished_points() -> None:
    def step(n: int) -> None:
        if n == 16:
            raise ValueError("a bug at 16")

    with pytest.raises(ValueError, match="a bug at 16") as raised:
        gpuprofile.sweep(step, [4, 8, 16], name="n", repeat=1, warmup=0)
    partial = raised.value.gpuprofile_sweep  # type: ignore[attr-defined]
    assert [p.value for p in partial.points] == [4.0, 8.0]


@pytest.mark.parametrize(
    ("fn", "kwargs", "words"),
    [
        (3, {}, "a function"),
        (print, {"warmup": -1}, "warmup=-1: a whole number, 0 or more"),
        (print, {"repeat": 0}, "repeat=0: a whole number, 1 or more"),
        (print, {"steps": (1, 1)}, "profiles each run whole"),
        (print, {"export": "x.json"}, "profiles each run whole"),
        (print, {"colour": "red"}, "profile() takes"),
    ],
)
def test_bad_options_are_named(fn: object, kwargs: dict[str, object], words: str) -> None:
    with pytest.raises(OptionError, match=re.escape(words)):
        gpuprofile.sweep(fn, [1, 2], **kwargs)  # type: ignore[arg-type]
