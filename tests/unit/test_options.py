"""The capture's options are written once (capture/options.py): the magic's arguments,
``profile()``'s parameters and docs, and the README's table all come from that table, and
their values are checked in one place."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell

import gpuprofile
from gpuprofile.capture.options import OPTIONS, CaptureOptions, options_table
from gpuprofile.errors import OptionError
from gpuprofile.magic import GpuprofileMagics

README = Path(__file__).parents[2] / "README.md"


def test_profile_takes_every_option_with_the_same_default() -> None:
    parameters = inspect.signature(gpuprofile.profile).parameters
    assert list(parameters) == [o.name for o in OPTIONS]
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
    assert flags == [o.flag for o in OPTIONS]
    usage = GpuprofileMagics.gpuprofile.__doc__ or ""
    for option in OPTIONS:
        assert option.flag in usage


def test_the_readme_shows_the_table() -> None:
    assert options_table() in README.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("flag", "keyword"),
    [
        ("--interval -1", {"interval": -1}),
        ("--steps 0,0", {"steps": (0, 0)}),
        ("--max-events 5", {"max_events": 5}),
        ("--steps 1,1 --max-events 0", {"steps": (1, 1), "max_events": 0}),
    ],
)
def test_the_magic_and_profile_refuse_alike(
    shell: InteractiveShell,
    capsys: pytest.CaptureFixture[str],
    flag: str,
    keyword: dict[str, Any],
) -> None:
    # The one check (CaptureOptions) speaks for both: the same problem, each spelling the
    # option its own way.
    with pytest.raises(OptionError) as raised:
        CaptureOptions(**keyword)
    with pytest.raises(OptionError) as from_profile, gpuprofile.profile(**keyword):
        pass
    assert str(from_profile.value) == str(raised.value)
    result = shell.run_cell(f"%%gpuprofile {flag}\nran_bad_option = True\n")
    assert not result.success and "ran_bad_option" not in shell.user_ns
    out, err = capsys.readouterr()
    assert f": {raised.value.problem}" in out + err
    assert str(raised.value).startswith(f"{raised.value.option}=")
