"""The suite runs in a HOME of its own (tests/conftest.py, tests/helpers/home.py): whatever a
test calibrates, records or caches lands in a temporary folder, for the tests' own process and
for every kernel and subprocess they start; the user's gpuprofile folders are compared at the
session's end."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
from pathlib import Path

import platformdirs
from IPython.paths import get_ipython_dir

from gpuprofile.hardware.cache import cache_dir
from gpuprofile.store.location import history_path
from helpers import home

# The user's home as the system knows it, whatever HOME says.
USER_HOME = Path(pwd.getpwuid(os.getuid()).pw_dir).resolve()
# A process the tests start: gpuprofile's folders, and torch's hub cache (torch imports and
# works with the fresh HOME).
WHERE = """\
import json, platformdirs, torch
from gpuprofile.hardware.cache import cache_dir
from gpuprofile.store.location import history_path
print(json.dumps([str(cache_dir()), str(history_path()),
                  platformdirs.user_data_dir("gpuprofile", appauthor=False),
                  torch.hub.get_dir()]))
"""


def _inside(path: str | Path, root: Path) -> bool:
    return Path(path).resolve().is_relative_to(root)


def test_home_and_xdg_folders_are_the_suites_own() -> None:
    root = Path(os.environ["HOME"]).resolve().parent
    assert not _inside(root, USER_HOME) and not _inside(USER_HOME, root)
    for variable, name in home.FOLDERS.items():
        assert Path(os.environ[variable]).resolve() == root / name, variable
    for used in (
        cache_dir(),
        history_path(),
        platformdirs.user_data_dir("gpuprofile", appauthor=False),
        platformdirs.user_cache_dir("matplotlib"),
        get_ipython_dir(),
    ):
        assert used is not None and _inside(used, root), used


def test_processes_the_tests_start_inherit_it() -> None:
    out = subprocess.run(
        [sys.executable, "-c", WHERE], capture_output=True, text=True, check=True, timeout=120
    )
    root = Path(os.environ["HOME"]).resolve().parent
    assert len(json.loads(out.stdout)) == 4
    for used in json.loads(out.stdout):
        assert _inside(used, root) and not _inside(used, USER_HOME), used


def test_the_end_of_session_check_sees_a_change(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    folders = home.gpuprofile_folders(env)
    assert folders["calibration cache"] == tmp_path / ".cache" / "gpuprofile"
    assert folders["history"] == tmp_path / ".local" / "share" / "gpuprofile"
    before = home.state(folders["calibration cache"])
    assert before is None
    folders["calibration cache"].mkdir(parents=True)
    (folders["calibration cache"] / "calibration-cpu.json").write_text("{}")
    after = home.state(folders["calibration cache"])
    assert after == (("calibration-cpu.json", 2, after[0][2]),)  # type: ignore[index]
    os.utime(folders["calibration cache"] / "calibration-cpu.json", ns=(1, 1))
    assert home.state(folders["calibration cache"]) != after
