"""What ``import gpuprofile`` offers: documented callables, and nothing that needs torch."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from pathlib import Path

import gpuprofile
from helpers.kineto_docs import cpu_op, document, write


def test_every_public_callable_documents_its_parameters() -> None:
    for name in gpuprofile.__all__:
        value = getattr(gpuprofile, name)
        if not callable(value) or (isinstance(value, type) and issubclass(value, Exception)):
            continue
        doc = inspect.getdoc(value) or ""
        assert doc, f"gpuprofile.{name} has no docstring"
        target = value.__init__ if isinstance(value, type) else value
        for parameter in inspect.signature(target).parameters:
            if parameter in ("self", "args", "kwargs"):
                continue
            # Listed as "name: ..." or "a, name, b: ..." at the start of a line.
            listed = re.search(rf"^\s*(\w+, )*{parameter}\b[^:\n]*:", doc, re.M)
            assert listed, f"gpuprofile.{name}'s docstring does not list {parameter!r}"


def test_hardware_is_exported() -> None:
    from gpuprofile.hardware.model import Hardware

    assert gpuprofile.Hardware is Hardware and "Hardware" in gpuprofile.__all__


def test_reading_a_trace_does_not_import_torch(tmp_path: Path) -> None:
    path = write(tmp_path / "t.json", document([cpu_op("aten::mm", 0, 10)]))
    code = (
        "import sys, gpuprofile\n"
        f"p = gpuprofile.load({str(path)!r}); p.report(); p.text()\n"
        "print('torch' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
