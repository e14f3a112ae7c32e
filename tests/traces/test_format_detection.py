"""Every shared fixture is told apart by its content: renamed to a name that says nothing, it is
still read as the format its folder holds (PROVENANCE.md says which tool wrote each folder)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gpuprofile.importers.formats import detect_format
from helpers.prerequisites import SHARED_TRACES, missing

FOLDER_FORMAT = {
    "kineto": "kineto",
    "nsys": "nsys",
    "ncu": "ncu",
    "tensorrt": "tensorrt",
    "jax": "xplane",
}


def _fixtures() -> list[Path]:
    return sorted(p for folder in FOLDER_FORMAT for p in (SHARED_TRACES / folder).glob("*"))


def test_every_folder_has_fixtures() -> None:
    for folder in FOLDER_FORMAT:
        if not (SHARED_TRACES / folder).is_dir():
            missing(f"shared traces not found: {SHARED_TRACES / folder}")
        assert any((SHARED_TRACES / folder).iterdir()), folder


@pytest.mark.parametrize("path", _fixtures(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_renamed_fixture_is_detected_by_content(path: Path, tmp_path: Path) -> None:
    renamed = tmp_path / "upload.bin"
    shutil.copyfile(path, renamed)
    assert detect_format(renamed) == FOLDER_FORMAT[path.parent.name]


def test_a_directory_of_xplanes_is_a_jax_profile(tmp_path: Path) -> None:
    source = SHARED_TRACES / "jax" / "tracelens_mi300x_jax08_gemm.xplane.pb"
    if not source.exists():
        missing(f"shared trace not found: {source}")
    run = tmp_path / "plugins" / "profile" / "2026_12_01_10_00_00"
    run.mkdir(parents=True)
    shutil.copyfile(source, run / "host0.xplane.pb")
    assert detect_format(tmp_path) == "xplane"
    assert detect_format(SHARED_TRACES / "kineto-distributed" / "param_dlrm_8xV100") == "kineto"
