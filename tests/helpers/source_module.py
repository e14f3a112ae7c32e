"""A Python module written by a test into its own folder and imported from there: code whose
file and lines the test knows, as the profiler's stacks will name them."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType


def import_source(folder: Path, file_name: str, source: str, module_name: str) -> ModuleType:
    """``source`` written to ``folder/file_name`` and imported as ``module_name`` (not put in
    sys.modules: each test gets its own copy)."""
    path = folder / file_name
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
