"""What ``import gpuprofile`` offers: documented callables, and nothing that needs torch."""

from __future__ import annotations

import inspect
import subprocess
import sys

import gpuprofile


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
            assert parameter in doc, f"gpuprofile.{name}'s docstring does not name {parameter!r}"


def test_hardware_is_exported() -> None:
    from gpuprofile.hardware.model import Hardware

    assert gpuprofile.Hardware is Hardware and "Hardware" in gpuprofile.__all__


def test_reading_a_trace_does_not_import_torch() -> None:
    code = "import sys, gpuprofile; gpuprofile.load; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
