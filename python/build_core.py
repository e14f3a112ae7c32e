"""Builds gpuprofile's compiled core (``SOURCES``: the reader's field gathers, the lanes'
call-stack walks) with this Python's own compiler settings (sysconfig), and is the wheel's
hatchling build hook (pyproject.toml).

    python python/build_core.py [OUT_DIR]

compiles each module into the package, in place (``make setup`` runs this), or into OUT_DIR.
Without a C compiler or Python's headers it says so in one line and exits 0: the pure-Python
paths then run (``gpuprofile doctor`` says so too). Stdlib only, so it runs before anything is
installed.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

PACKAGE_ROOT = Path(__file__).resolve().parent
# Each C source, by its path inside the package root: the module is built beside it and
# imported from there, in the checkout and in the wheel.
SOURCES = (
    "gpuprofile/importers/kineto/_gather.c",
    "gpuprofile/importers/kineto/_scan.c",
    "gpuprofile/trace/_walk.c",
)


class NoCompiler(Exception):
    """No C compiler, or no Python headers, to build with: the pure-Python path runs."""


def module_name(source: str) -> str:
    return Path(source).stem + (sysconfig.get_config_var("EXT_SUFFIX") or ".so")


def compile_command(source: str, target: Path) -> list[str]:
    """The one command that compiles and links ``source`` into ``target``: LDSHARED (the compiler
    with this platform's flags for a loadable module), CFLAGS and CCSHARED (-fPIC), as
    setuptools would, honouring CC and CFLAGS from the environment."""
    config = sysconfig.get_config_vars()
    ldshared = shlex.split(config.get("LDSHARED") or "")
    cc = shlex.split(os.environ.get("CC") or config.get("CC") or "")
    if not ldshared or not cc:
        raise NoCompiler("this Python names no C compiler (sysconfig CC, LDSHARED)")
    if shutil.which(cc[0]) is None:
        raise NoCompiler(f"no C compiler ({cc[0]} is not on PATH)")
    if os.environ.get("CC"):  # the environment's compiler in place of the configured one
        ldshared = [*cc, *ldshared[1:]]
    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").exists():
        raise NoCompiler(f"no Python headers ({include}/Python.h; python3-dev provides them)")
    flags = shlex.split(os.environ.get("CFLAGS") or config.get("CFLAGS") or "")
    ccshared = shlex.split(config.get("CCSHARED") or "")
    path = str(PACKAGE_ROOT / source)
    return [*ldshared, *flags, *ccshared, f"-I{include}", path, "-o", str(target)]


def build(source: str, out_dir: Path) -> Path:
    """Compile one source into ``out_dir``; the module's path. Raises NoCompiler, or
    CalledProcessError where the compiler fails. The module is written beside, then renamed
    over, the old one: a process that has the old one loaded keeps its file."""
    target = out_dir / module_name(source)
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".core-") as scratch:
        built = Path(scratch) / target.name
        command = compile_command(source, built)
        subprocess.run(command, check=True, capture_output=True, text=True)
        os.replace(built, target)
    return target


def _newest_input(source: str) -> float:
    """The latest change to ``source`` or a header beside it (which it may include)."""
    path = PACKAGE_ROOT / source
    return max(p.stat().st_mtime for p in [path, *path.parent.glob("*.h")])


def main(argv: list[str]) -> int:
    for source in SOURCES:
        out_dir = Path(argv[0]) if argv else (PACKAGE_ROOT / source).parent
        target = out_dir / module_name(source)
        if target.exists() and target.stat().st_mtime >= _newest_input(source):
            continue  # up to date (make setup runs this every time)
        started = time.perf_counter()
        try:
            build(source, out_dir)
        except NoCompiler as why:
            print(f"gpuprofile's compiled core not built: {why}; the pure-Python paths run")
            return 0
        except subprocess.CalledProcessError as failed:
            print(f"{shlex.join(failed.cmd)}\n{failed.stderr}", file=sys.stderr)
            return 1
        print(f"built {target} in {time.perf_counter() - started:.1f} s")
    return 0


try:
    from hatchling.builders.hooks.plugin.interface import BuildHookInterface
except ImportError:  # run as a script, where hatchling is not installed
    pass
else:

    class CoreBuildHook(BuildHookInterface):
        """Puts the compiled core in the wheel, which is then for this platform and Python;
        without a compiler (or where it fails) the wheel is pure Python."""

        def initialize(self, version: str, build_data: dict[str, Any]) -> None:
            if version == "editable":  # an editable install imports from the checkout
                return
            self._scratch = tempfile.TemporaryDirectory(prefix="gpuprofile-core-")
            try:
                built = {s: build(s, Path(self._scratch.name)) for s in SOURCES}
            except (NoCompiler, subprocess.CalledProcessError) as why:
                detail = getattr(why, "stderr", None) or why
                self.app.display_warning(f"compiled core not built: {detail}")
                return
            for source, module in built.items():
                inside = f"{Path(source).parent.as_posix()}/{module.name}"
                build_data["force_include"][str(module)] = inside
            build_data["pure_python"] = False
            build_data["infer_tag"] = True

        def finalize(self, version: str, build_data: dict[str, Any], artifact: str) -> None:
            scratch = getattr(self, "_scratch", None)
            if scratch is not None:
                scratch.cleanup()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
