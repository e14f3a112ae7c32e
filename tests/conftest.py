"""Fixtures shared by the test tiers (unit, integration, traces, ui, gpu); helpers live in the
helpers package beside this file."""

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

from helpers import home

# Before torch is imported anywhere: torch's default of 2 threads on a shared 2-core box makes
# tiny workloads 100x slower when another process runs.
os.environ.setdefault("OMP_NUM_THREADS", "1")

# Before anything imports gpuprofile, IPython or torch: the session's HOME and XDG folders are
# temporary ones (kernels and subprocesses the tests start inherit them), so calibrate(), the
# history and every tool's caches stay out of the user's. The user's gpuprofile folders are
# recorded now and compared when the session ends (pytest_sessionfinish).
_REAL = home.gpuprofile_folders(dict(os.environ))
_REAL_STATE = {name: home.state(path) for name, path in _REAL.items()}
_ROOT = Path(tempfile.mkdtemp(prefix="gpuprofile-test-home-"))
atexit.register(shutil.rmtree, _ROOT, ignore_errors=True)
home.isolate(_ROOT)
# Every capture is recorded in the history: the suite's runs go to a store of its own.
os.environ["GPUPROFILE_HISTORY"] = str(_ROOT / "history.sqlite")

import pytest  # noqa: E402
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402
from IPython.testing import globalipapp  # noqa: E402


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Under CI=true (a machine where nothing else runs) the suite fails when the user's own
    gpuprofile folders changed during it; elsewhere it says so, since a notebook the user runs
    beside the suite records its cells there too, and that is not the suite's doing."""
    changed = [n for n, path in _REAL.items() if home.state(path) != _REAL_STATE[n]]
    if changed:
        where = ", ".join(f"{n} ({_REAL[n]})" for n in changed)
        if os.environ.get("CI") == "true":
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
            print(f"\nFAILED: the suite changed the user's {where}", file=sys.stderr)
        else:
            print(
                f"\nWARNING: the user's {where} changed during the suite: by the suite, or by "
                "another process (a notebook) using gpuprofile meanwhile",
                file=sys.stderr,
            )


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
