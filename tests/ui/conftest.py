"""Fixtures for the browser tests: a throwaway JupyterLab server and headless Chromium.

The server runs on a free port with its own config/runtime/settings/workspace/IPython dirs and
serves a temporary copy of example_notebooks/, so a run never modifies the repository. Chromium
is Debian's (/usr/bin/chromium), driven by the Python playwright package; without it the tests
skip, except under CI=true, where a missing browser is a failure.

Opening a notebook starts a kernel (seconds on a small machine), so a test file that checks
several things on one widget shares one page and one notebook (`module_page`);
widget_page.open_notebook runs it, and cells hand the tests their expected values as
`TAG {json}` lines (widget_page.printed).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from widget_page import open_notebook, printed

from helpers.prerequisites import missing

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "example_notebooks"
ARTIFACTS = REPO / "test-artifacts"
BUNDLE = REPO / "python" / "gpuprofile" / "widget" / "static" / "widget.js"
CHROMIUM = Path(os.environ.get("GPUPROFILE_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]
SERVER_START_TIMEOUT_S = 60


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def notebook_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("notebooks")
    shutil.copytree(NOTEBOOKS, root, dirs_exist_ok=True)
    return root


@pytest.fixture(scope="session")
def jupyterlab(
    tmp_path_factory: pytest.TempPathFactory, notebook_dir: Path, artifacts_dir: Path
) -> Iterator[str]:
    """Start JupyterLab serving notebook_dir; yield its base URL; SIGTERM it afterwards."""
    if not BUNDLE.exists():
        pytest.fail(f"widget bundle missing: {BUNDLE} (run `npm run build` or `make setup`)")
    home = tmp_path_factory.mktemp("jupyter")
    dirs = {
        "JUPYTER_CONFIG_DIR": home / "config",
        "JUPYTER_RUNTIME_DIR": home / "runtime",
        "JUPYTERLAB_SETTINGS_DIR": home / "settings",
        "JUPYTERLAB_WORKSPACES_DIR": home / "workspaces",
        "IPYTHONDIR": home / "ipython",
    }
    for path in dirs.values():
        path.mkdir(parents=True)
    # The news toast is silenced only by a settings file.
    notification = dirs["JUPYTERLAB_SETTINGS_DIR"] / "@jupyterlab" / "apputils-extension"
    notification.mkdir(parents=True)
    (notification / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false"})
    )

    env = dict(os.environ)
    env.update({k: str(v) for k, v in dirs.items()})
    env["OMP_NUM_THREADS"] = "1"
    env.pop("JUPYTER_TOKEN", None)
    port = _free_port()
    log_path = home / "server.log"
    log = log_path.open("wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            f"--port={port}",
            "--port-retries=0",
            f"--ServerApp.root_dir={notebook_dir}",
            "--no-browser",
            "--ip=127.0.0.1",
            "--ServerApp.token=",
            "--ServerApp.password=",
            "--allow-root",
            "--LabApp.expose_app_in_browser=True",
            # The same window.jupyterapp in the Notebook 7 interface (/notebooks/...).
            "--JupyterNotebookApp.expose_app_in_browser=True",
            "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        ],
        cwd=notebook_dir,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(
                    f"JupyterLab exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}"
                )
            try:
                with urllib.request.urlopen(f"{url}/api/status", timeout=2) as response:
                    if response.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(
                    f"JupyterLab not ready after {SERVER_START_TIMEOUT_S} s:\n"
                    f"{log_path.read_text()[-3000:]}"
                )
            time.sleep(0.2)
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        log.close()
        shutil.copy(log_path, artifacts_dir / "jupyterlab-server.log")


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing("the playwright Python package is not installed (pip install playwright)")
    if not CHROMIUM.exists():
        missing(f"no Chromium at {CHROMIUM} (apt-get install chromium, or `make chromium`)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


@contextlib.contextmanager
def _new_page(browser, artifacts_dir: Path, name: str, server: str) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, device_scale_factor=1)
    pg = context.new_page()
    pg.set_default_timeout(60_000)
    console: list[str] = []
    pg.on("console", lambda msg: console.append(f"{msg.type}: {msg.text}"))
    pg.on("pageerror", lambda err: console.append(f"pageerror: {err}"))
    # Clusters are offline: nothing the page loads (the widget's bundle, fonts, data) may come
    # from anywhere but the Jupyter server itself.
    offsite: list[str] = []
    local = (server, "data:", "blob:", "about:")
    pg.on("request", lambda r: None if r.url.startswith(local) else offsite.append(r.url))
    try:
        yield pg
        assert not offsite, f"the page fetched from outside the Jupyter server: {offsite[:5]}"
    finally:
        # The last state of the page, for failures.
        # A closed or crashed page must not hide the test's own error.
        with contextlib.suppress(Exception):
            pg.screenshot(path=str(artifacts_dir / f"{name}-final.png"))
        (artifacts_dir / f"{name}.console.log").write_text("\n".join(console))
        context.close()


@pytest.fixture
def page(browser, jupyterlab: str, artifacts_dir: Path, request: pytest.FixtureRequest):
    with _new_page(browser, artifacts_dir, request.node.name, jupyterlab) as pg:
        yield pg


@pytest.fixture(scope="module")
def module_page(browser, jupyterlab: str, artifacts_dir: Path, request: pytest.FixtureRequest):
    """One page for all the tests of a module (they share its notebook and kernel)."""
    with _new_page(browser, artifacts_dir, request.module.__name__, jupyterlab) as pg:
        yield pg


@pytest.fixture
def run_notebook(page, jupyterlab: str):
    """Open a notebook from the served copy, run all its cells, wait for the widget to paint
    and for a `GPUPROFILE_COUNTS {json}` line in the outputs; return that dict."""

    def run(name: str) -> dict:
        outputs = open_notebook(page, jupyterlab, name, marker="GPUPROFILE_COUNTS")
        counts: dict = printed(outputs, "GPUPROFILE_COUNTS")
        return counts

    return run
