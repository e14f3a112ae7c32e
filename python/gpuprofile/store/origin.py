"""Where a run came from: the notebook and cell, or the script; a hash of its code; the git
commit of the folder it ran in."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# A repository that answers slower than this is left without a commit rather than holding up
# the cell that is being recorded.
GIT_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class Origin:
    """Where a run came from; every field may be unknown (None).

    Parameters:
        notebook: the notebook's path as the Jupyter server names it.
        cell_id: the notebook cell's id.
        script: the script (or trace file, for ``report --save``) it came from.
        code_hash: sha256 of the profiled code (the cell's text, or the script's file), the
            first 16 hex digits: two runs of the same code have the same hash.
        git_commit: HEAD of the git repository holding the notebook, script or working folder,
            with "+dirty" when tracked files changed.
    """

    notebook: str | None = None
    cell_id: str | None = None
    script: str | None = None
    code_hash: str | None = None
    git_commit: str | None = None


def code_hash(code: str | bytes) -> str:
    """The first 16 hex digits of the code's sha256."""
    data = code.encode() if isinstance(code, str) else code
    return hashlib.sha256(data).hexdigest()[:16]


def cell_origin(shell: Any, code: str | None) -> Origin:
    """The running IPython cell's origin: its notebook and id, and the hash of ``code``."""
    return notebook_origin(code, cell_id(shell), _notebook(shell))


def running_origin() -> Origin:
    """Where the code running now is: in a Jupyter kernel, its notebook and the running cell
    (a ``profile()`` block there is no script of its own: ``sys.argv[0]`` is ipykernel's
    launcher); elsewhere the script."""
    from IPython import get_ipython

    shell = get_ipython()
    if getattr(shell, "kernel", None) is None:
        return script_origin()
    cells = shell.user_ns.get("_ih") or [None]  # IPython's inputs; the last is this cell
    return cell_origin(shell, cells[-1] if isinstance(cells[-1], str) else None)


def cell_id(shell: Any) -> str | None:
    """The running cell's id, which JupyterLab and Notebook 7 send with each execution."""
    parent = getattr(shell, "parent_header", None) or {}
    cell = (parent.get("metadata") or {}).get("cellId")
    return cell if isinstance(cell, str) else None


def _notebook(shell: Any) -> str | None:
    """The running notebook's path: ipykernel's ``__session__`` (JupyterLab, Notebook 7) or
    VS Code's ``__vsc_ipynb_file__``."""
    for name in ("__session__", "__vsc_ipynb_file__"):
        value = shell.user_ns.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def notebook_origin(code: str | None, cell_id: str | None, notebook: str | None) -> Origin:
    """A notebook cell's origin. ``notebook``: the path the kernel was started for (None:
    ``JPY_SESSION_NAME``, which jupyter_server sets for its kernels)."""
    notebook = notebook or os.environ.get("JPY_SESSION_NAME") or None
    folder = Path(notebook).parent if notebook and Path(notebook).is_absolute() else Path.cwd()
    return Origin(
        notebook=notebook,
        cell_id=cell_id,
        code_hash=code_hash(code) if code is not None else None,
        git_commit=git_commit(folder),
    )


def script_origin(script: str | os.PathLike[str] | None = None) -> Origin:
    """A script's origin: ``script`` (default: the running program, ``sys.argv[0]``), its
    code's hash when it is a readable file, and the git commit of its folder."""
    given = script if script is not None else (sys.argv[0] if sys.argv and sys.argv[0] else None)
    path = Path(given).resolve() if given else None
    digest = None
    if path is not None and path.is_file():
        try:
            digest = code_hash(path.read_bytes())
        except OSError:
            digest = None
    folder = path.parent if path is not None and path.exists() else Path.cwd()
    return Origin(
        script=str(path) if path else None, code_hash=digest, git_commit=git_commit(folder)
    )


def git_commit(folder: Path) -> str | None:
    """HEAD of the repository holding ``folder`` (+"dirty" when tracked files changed); None
    outside a repository, without git, or when git does not answer in time."""
    try:
        head = _git(folder, "rev-parse", "HEAD")
        if head is None:
            return None
        changed = _git(folder, "status", "--porcelain", "--untracked-files=no")
        return head + ("+dirty" if changed else "")
    except (OSError, subprocess.SubprocessError):
        return None


def _git(folder: Path, *args: str) -> str | None:
    done = subprocess.run(
        ["git", "-C", str(folder), *args],
        capture_output=True,
        text=True,
        timeout=GIT_TIMEOUT_S,
        check=False,
    )
    return done.stdout.strip() if done.returncode == 0 else None
