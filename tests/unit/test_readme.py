"""The README stays a page a new user reads through (detail lives in docs/), and the test-tier
table in docs/development.md names every tier tests/ holds."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README_MAX_LINES = 160


def test_readme_stays_short() -> None:
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines: move detail to docs/"


def test_readme_links_resolve() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    for target in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (REPO / target).exists(), target


def test_every_test_folder_is_in_the_tier_table() -> None:
    tiers = (REPO / "tests").iterdir()
    folders = {p.name for p in tiers if p.is_dir() and any(p.glob("test_*.py"))}
    table = (REPO / "docs" / "development.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `tests/(\w+)` \|", table, re.M))
    assert folders == listed, (folders, listed)
