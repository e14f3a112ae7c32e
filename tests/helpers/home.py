"""The suite's own HOME: HOME and the XDG folders point at a temporary folder for the whole
session (tests/conftest.py), so nothing a test runs (calibrate(), the history, JupyterLab,
IPython, torch, matplotlib) reads or writes the user's. The user's gpuprofile folders are
recorded before and compared after, to prove it."""

from __future__ import annotations

import os
from pathlib import Path

# What the suite points elsewhere, and the folder under the temporary root each one gets.
FOLDERS = {
    "HOME": "home",
    "XDG_CACHE_HOME": "cache",
    "XDG_DATA_HOME": "data",
    "XDG_CONFIG_HOME": "config",
    "XDG_STATE_HOME": "state",
}

# A file or folder's state: None when absent, else (relative path, size, mtime_ns) of every file.
State = tuple[tuple[str, int, int], ...] | None


def gpuprofile_folders(env: dict[str, str]) -> dict[str, Path]:
    """Where gpuprofile keeps its things under this environment (hardware/cache.py,
    store/location.py): the calibration cache, and the history's folder when
    GPUPROFILE_HISTORY does not choose another."""
    home = Path(env.get("HOME") or Path.home())
    cache = Path(env.get("XDG_CACHE_HOME") or home / ".cache")
    data = Path(env.get("XDG_DATA_HOME") or home / ".local" / "share")
    return {"calibration cache": cache / "gpuprofile", "history": data / "gpuprofile"}


def state(path: Path) -> State:
    """Every file under path (or path itself) with its size and modification time."""
    if not path.exists():
        return None
    if path.is_file():
        st = path.stat()
        return (("", st.st_size, st.st_mtime_ns),)
    files = sorted(p for p in path.rglob("*") if p.is_file())
    return tuple((str(p.relative_to(path)), p.stat().st_size, p.stat().st_mtime_ns) for p in files)


def isolate(root: Path) -> dict[str, Path]:
    """Point HOME and the XDG folders at fresh folders under root (in os.environ, so kernels
    and subprocesses the tests start inherit them); returns them by variable."""
    chosen = {}
    for variable, name in FOLDERS.items():
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        os.environ[variable] = str(folder)
        chosen[variable] = folder
    return chosen
