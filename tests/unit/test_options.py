"""The capture's options are written once (capture/options.py): the magic's arguments,
``profile()``'s parameters and docs, and the README's table all come from that table, and
their values are checked in one place."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic_arguments import parse_argstring

import gpuprofile
from gpuprofile.capture.options import OPTIONS, options_table
from gpuprofile.errors import OptionError
from gpuprofile.magic import GpuprofileMagics

README = Path(__file__).parents[2] / "README.md"


def test_profile_takes_every_option_with_the_same_default() -> None:
    parameters = inspect.signature(gpuprofile.profile).parameters
    # The capture's options first, in the table's order; then those that are not the capture's.
    assert list(parameters)[: len(OPTIONS)] == [o.name for o in OPTIONS]
    assert "baseline" in list(parameters)[len(OPTIONS) :]
    for option in OPTIONS:
        assert parameters[option.name].default == option.default, option.name
        assert parameters[option.name].kind is inspect.Parameter.KEYWORD_ONLY


def test_profiles_docs_list_every_option() -> None:
    doc = gpuprofile.profile.__doc__ or ""
    for option in OPTIONS:
        assert f"    {option.name}: {option.help}" in doc


def test_the_magic_has_one_argument_per_option_in_order() -> None:
    parser: Any = GpuprofileMagics.gpuprofile.parser  # type: ignore[attr-defined]
    flags = [a.option_strings[0] for a in parser._actions if a.option_strings[:1] != ["-h"]]
    assert flags[: len(OPTIONS)] == [
        "--memory", "--stack", "--no-shapes", "--no-modules", "--export", "--hardware",
        "--interval", "--steps", "--max-events", "--distributed",
    ]  # fmt: skip
    assert "--baseline" in flags[len(OPTIONS) :]
    # Each flag reaches its own field: the switches set the opposite of the default.
    args = parse_argstring(
        GpuprofileMagics.gpuprofile, "--memory --no-shapes --interval 0.5 --steps 1,2"
    )
    assert args.profile_memory is True and args.record_shapes is False
    assert args.with_stack is False and args.interval == "0.5" and args.steps == "1,2"
    assert args.modules is True
    assert parse_argstring(GpuprofileMagics.gpuprofile, "--no-modules").modules is False


def test_the_readme_shows_the_table() -> None:
    assert options_table() in README.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("flag", "keyword", "problem"),
    [
        ("--interval -1", {"interval": -1}, "must be 0 (off) or positive seconds"),
        ("--steps 0,0", {"steps": (0, 0)}, "ACTIVE (steps recorded per window) must be at least 1"),
        ("--max-events 5", {"max_events": 5}, "applies to steps (whole windows are dropped)"),
        ("--steps 1,1 --max-events 0", {"steps": (1, 1), "max_events": 0}, "must be positive"),
        ("--distributed", {"distributed": True}, "torch.distributed is not initialised in this"),
        (
            "--distributed --export job.json.gz",
            {"distributed": True, "export": "job.json.gz"},
            "with distributed, export names a folder: each rank writes rank{R}.json.gz in it",
        ),
    ],
)
def test_the_magic_and_profile_refuse_alike(
    shell: InteractiveShell,
    capsys: pytest.CaptureFixture[str],
    flag: str,
    keyword: dict[str, Any],
    problem: str,
) -> None:
    # One check speaks for both: the same problem, each spelling the option its own way.
    name, value = list(keyword.items())[-1]
    with pytest.raises(OptionError) as from_profile, gpuprofile.profile(**keyword):
        pass
    assert str(from_profile.value).startswith(f"{name}={value!r}: {problem}")
    result = shell.run_cell(f"%%gpuprofile {flag}\nran_bad_option = True\n")
    assert not result.success and "ran_bad_option" not in shell.user_ns
    out, err = capsys.readouterr()
    typed = flag.split(" ")[-2:]
    assert f"UsageError: {' '.join(typed)}: {problem}" in out + err
