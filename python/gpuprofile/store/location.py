"""Where the history lives: ``GPUPROFILE_HISTORY`` when set, else the user's data folder."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

ENV = "GPUPROFILE_HISTORY"
FILE_NAME = "history.sqlite"
# GPUPROFILE_HISTORY=off: runs are not recorded (a read-only home, a throwaway CI machine).
OFF = "off"


def history_path() -> Path | None:
    """The history file: ``$GPUPROFILE_HISTORY`` (a file, or a folder to hold history.sqlite),
    else history.sqlite in the per-user data folder; None when the variable says ``off``."""
    chosen = os.environ.get(ENV, "").strip()
    if chosen.lower() == OFF:
        return None
    if chosen:
        path = Path(chosen).expanduser()
        return path / FILE_NAME if path.is_dir() else path
    return Path(platformdirs.user_data_dir("gpuprofile", appauthor=False)) / FILE_NAME
