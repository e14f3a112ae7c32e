"""A checkout whose widget JS was never built says how to build it, not anywidget's bare
"File not found"."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuprofile.errors import GpuprofileError
from gpuprofile.widget.widget import built


def test_a_missing_build_names_the_file_and_the_command(tmp_path: Path) -> None:
    with pytest.raises(GpuprofileError) as error:
        built("widget.js", tmp_path)
    text = str(error.value)
    assert str(tmp_path / "widget.js") in text
    assert "make setup" in text and "npm run build" in text


def test_a_built_file_is_handed_over(tmp_path: Path) -> None:
    (tmp_path / "widget.css").write_text("/* built */")
    assert built("widget.css", tmp_path) == tmp_path / "widget.css"
