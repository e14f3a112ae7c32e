"""Fixtures shared by the unit tests."""

from __future__ import annotations

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.testing import globalipapp


@pytest.fixture(scope="session")
def shell() -> InteractiveShell:
    """IPython's test shell with gpuprofile loaded: one per process, so every module shares it
    (start_ipython() returns None once it has started)."""
    ip = globalipapp.start_ipython() or globalipapp.get_ipython()
    assert ip is not None
    ip.run_line_magic("load_ext", "gpuprofile")
    return ip
