"""The suite's own HOME: HOME and the XDG folders point at a temporary folder for the whole
session (tests/conftest.py), so nothing a test runs (calibrate(), the history, JupyterLab,
IPython, torch, matplotlib) reads or writes the user's. The user's gpuprofile folders are
recorded before and compared after, to prove it."""

from __future__ import annotations

import os
from pathlib import Path
from stat import S_ISREG

# What the suite points elsewhere, and the folder under the temporary root each one gets.
FOLDERS = {
    "HOME": "home",
    "XDG_CACHE_HOME": "cache",
    "XDG_DATA_HOME": "data",
    "XDG_CONFIG_HOME": "config",
    "XDG_STATE_HOME": "state",
}
# Tools' own folder variables, which win over HOME: a user who exports one would have the suite
# write there. Unset, each tool falls back to the suite's HOME and XDG folders. (The browser
# tests set the JUPYTER_* ones to folders of their own.)
OVERRIDES = (
    "TORCH_HOME",
    "IPYTHONDIR",
    "MPLCONFIGDIR",
    "JUPYTER_CONFIG_DIR",
    "JUPYTER_DATA_DIR",
    "JUPYTER_RUNTIME_DIR",
    "JUPYTERLAB_SETTINGS_DIR",
    "JUPYTERLAB_WORKSPACES_DIR",
)

# HOME as the session found it, before isolate() (the user's home where the system knows no
# home for the uid).
REAL_HOME = Path(os.environ.get("HOME") or Path.home())

# A file or folder's state: None when absent, else (relative path, size, mtime_ns) of every file.
State = tuple[tuple[str, int, int], ...] | None


def gpuprofile_folders(env: dict[str, str]) -> dict[str, Path]:
    """Where gpuprofile keeps its things under this environment: its own answers
    (hardware/cache.py, store/location.py), asked with ``env`` as the whole environment. The
    history's folder is left out when GPUPROFILE_HISTORY says off."""
    from unittest import mock

    from gpuprofile.hardware.cache import cache_dir
    from gpuprofile.store.location import history_path

    with mock.patch.dict(os.environ, env, clear=True):
        folders = {"calibration cache": cache_dir()}
        history = history_path()
    if history is not None:
        folders["history"] = history.parent
    return folders


def state(path: Path) -> State:
    """Every file under path (or path itself) with its size and modification time. A file that
    goes while it is read (SQLite's -wal and -shm files come and go with every reader) is left
    out, never an error."""
    if not path.exists():
        return None
    found = []
    for file in sorted([path] if path.is_file() else path.rglob("*")):
        try:
            st = file.stat()
        except OSError:
            continue
        if S_ISREG(st.st_mode):
            found.append(
                (str(file.relative_to(path)) if file != path else "", st.st_size, st.st_mtime_ns)
            )
    return tuple(found)


def isolate(root: Path) -> dict[str, Path]:
    """Point HOME and the XDG folders at fresh folders under root (in os.environ, so kernels
    and subprocesses the tests start inherit them); returns them by variable."""
    chosen = {}
    for variable in OVERRIDES:
        os.environ.pop(variable, None)
    for variable, name in FOLDERS.items():
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        os.environ[variable] = str(folder)
        chosen[variable] = folder
    return chosen
