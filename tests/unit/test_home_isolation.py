"""The suite runs in a HOME of its own (tests/conftest.py, tests/helpers/home.py): whatever a
test calibrates, records or caches lands in a temporary folder, for the tests' own process and
for every kernel and subprocess they start; the user's gpuprofile folders are compared at the
session's end."""

from __future__ import annotations

import errno
import json
import os
import pwd
import subprocess
import sys
from pathlib import Path

import platformdirs
import pytest
from IPython.paths import get_ipython_dir

from gpuprofile.hardware.cache import cache_dir
from gpuprofile.store.location import history_path
from helpers import home


def _user_home() -> Path:
    """The user's home as the system knows it, whatever HOME says (a uid without a passwd
    entry, as under docker --user, has none: then the home HOME named at the start)."""
    try:
        return Path(pwd.getpwuid(os.getuid()).pw_dir).resolve()
    except KeyError:
        return home.REAL_HOME.resolve()


USER_HOME = _user_home()
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
    # The temporary root may lie inside the user's home (TMPDIR there, as on some clusters),
    # but it is a fresh folder: never the home itself, nor above it.
    assert not _inside(USER_HOME, root)
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
        assert _inside(used, root), used


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


def test_a_file_gone_while_it_is_read_is_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite's -wal and -shm files come and go whenever another process reads the history:
    one that goes between the listing and its stat is not an error that stops the suite."""
    (tmp_path / "history.sqlite").write_text("db")
    (tmp_path / "history.sqlite-wal").write_text("wal")
    real_stat = Path.stat
    seen: list[str] = []

    def stat(path: Path, **kwargs: bool) -> os.stat_result:
        # The -wal file is there when first looked at, and gone at the next look.
        if path.name.endswith("-wal"):
            seen.append(path.name)
            if len(seen) > 1:
                raise FileNotFoundError(errno.ENOENT, "gone", str(path))
        return real_stat(path, **kwargs)

    monkeypatch.setattr(Path, "stat", stat)
    listed = home.state(tmp_path)
    # Listed while it was there, or left out once gone: either way, no error.
    assert listed is not None and "history.sqlite" in [name for name, _, _ in listed]
