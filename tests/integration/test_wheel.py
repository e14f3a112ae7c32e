"""The wheel ships the widget bundle, which is built at set-up and never committed."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_wheel_contains_the_built_bundle(tmp_path: Path) -> None:
    bundle = ROOT / "python/gpuprofile/widget/static/widget.js"
    assert bundle.exists(), "widget bundle missing: run `make setup` (npm run build)"
    tracked = subprocess.run(
        ["git", "ls-files", "python/gpuprofile/widget/static"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,  # a failed git call would print nothing and pass the check below
    )
    assert tracked.stdout.strip() == "", "the built bundle must not be committed"
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("gpuprofile-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        shipped = archive.read("gpuprofile/widget/static/widget.js")
    assert "gpuprofile/widget/static/widget.css" in names
    assert shipped == bundle.read_bytes()
    assert "gpuprofile/importers/kineto/trace.py" in names
    assert "gpuprofile/hardware/specs.json" in names
