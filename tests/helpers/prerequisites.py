"""What some test layers need from outside the repository, and what to do when it is missing."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

import pytest

REPO = Path(__file__).resolve().parents[2]
# Real GPU traces recorded by other people; read in place, never copied into the repository.
SHARED_TRACES = REPO.parent / "shared" / "traces"


def missing(reason: str) -> NoReturn:
    """Skip with the reason, except under CI=true, where a missing prerequisite is a failure."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: this test layer must run)", pytrace=False)
    pytest.skip(reason)


def require_trace(path: Path) -> Path:
    if not path.exists():
        missing(f"shared trace not found: {path} (expected ../shared beside the repository)")
    return path
