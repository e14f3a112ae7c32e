"""Fixtures shared by the test tiers (unit, integration, traces, ui, gpu); helpers live in the
helpers package beside this file."""

import atexit
import os
import shutil
import tempfile
from pathlib import Path

# Before torch is imported anywhere: torch's default of 2 threads on a shared 2-core box makes
# tiny workloads 100x slower when another process runs.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.testing import globalipapp

# Every capture is recorded in the history: the suite's runs go to a store of its own (kernels
# and subprocesses the tests start inherit it), never into the user's data folder.
_HISTORY = tempfile.mkdtemp(prefix="gpuprofile-test-history-")
os.environ["GPUPROFILE_HISTORY"] = os.path.join(_HISTORY, "history.sqlite")
atexit.register(shutil.rmtree, _HISTORY, ignore_errors=True)


@pytest.fixture(scope="session")
def shell() -> InteractiveShell:
    """IPython's test shell with gpuprofile loaded: one per process, so every module shares it
    (start_ipython() returns None once it has started)."""
    ip = globalipapp.start_ipython() or globalipapp.get_ipython()
    assert ip is not None
    ip.run_line_magic("load_ext", "gpuprofile")
    return ip


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temporary folder a capture writes its --steps windows into while it runs (they go
    when it ends): here, an empty folder of the test's own."""
    folder = tmp_path / "scratch"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder
