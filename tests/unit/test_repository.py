"""What using the repository leaves behind stays out of git: `make lab` saves checkpoints of
the example notebooks next to them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "path", ["example_notebooks/.ipynb_checkpoints/quickstart-checkpoint.ipynb", "test-artifacts/x"]
)
def test_what_running_leaves_behind_is_ignored(path: str) -> None:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", "--no-index", path], cwd=REPO, check=False
    )
    assert ignored.returncode == 0, f"{path} is not ignored by .gitignore"
