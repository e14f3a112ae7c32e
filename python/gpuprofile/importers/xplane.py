"""JAX/XLA XPlane protobuf (``*.xplane.pb``, or a ``plugins/profile/<run>/`` directory).

The XSpace is decoded by jaxlib's own XPlane reader (``ProfileData``, the object behind
``jax.profiler.ProfileData``), installed by the ``gpuprofile[jax]`` extra: no package short of
TensorFlow ships the XPlane protobuf classes, and xprof's converter drops the stats (FLOPs,
launch shapes, correlation ids) this importer reads. ``xplane_space.py`` maps one XSpace onto
the tables; this module finds the files, decodes them and joins one host's file per rank.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuprofile.errors import TraceFormatError
from gpuprofile.importers.source import read_file
from gpuprofile.importers.xplane_space import space_trace
from gpuprofile.trace.merge import merge
from gpuprofile.trace.meta import Source
from gpuprofile.trace.model import Trace

XPLANE_SUFFIX = ".xplane.pb"
INSTALL_HINT = "pip install 'gpuprofile[jax]'"
# What a binary file becomes when it is read through a text decoder and written back: every
# byte that is not UTF-8 turns into U+FFFD, and the protobuf is lost.
_REPLACEMENT = "\ufffd".encode()


def load_xplane(path: str | Path) -> Trace:
    """Read a JAX/XLA profile into a Trace.

    Parameters:
        path: one ``*.xplane.pb`` file (any name: the content decides), or a directory holding
            them: a run directory (``plugins/profile/<run>/``, one file per host) or a directory
            above runs, of which the newest (by run name, as JAX names runs by time) is read.

    Returns:
        One rank per file (per host); each host's GPU/TPU planes are its devices.

    Raises:
        TraceFormatError: jaxlib is not installed, or a file is not a valid XSpace.
    """
    path = Path(path)
    files, notes = xplane_files(path)
    decode = _reader(path)
    parts = [space_trace(_decoded(decode, file), file) for file in files]
    source = Source(
        format="xplane",
        version=parts[0].meta.source.version,
        path=str(path),
        files=tuple(str(f) for f in files),
    )
    trace = parts[0] if len(parts) == 1 else merge(parts, ranks=range(len(parts)), source=source)
    return trace.with_meta(source=source, notes=(*trace.meta.notes, *notes))


def xplane_files(path: Path) -> tuple[list[Path], list[str]]:
    """The files to read: ``path`` itself, or the ``*.xplane.pb`` files of one run under it
    (the newest run when there are several, which a note says)."""
    if not path.is_dir():
        if not path.exists():
            raise TraceFormatError(path, "no such file or directory")
        return [path], []
    found = sorted(p for p in path.rglob(f"*{XPLANE_SUFFIX}") if p.is_file())
    if not found:
        raise TraceFormatError(path, f"directory holds no XPlane files (*{XPLANE_SUFFIX})")
    runs = sorted({p.parent for p in found}, key=lambda run: (run.name, str(run)))
    newest = runs[-1]
    notes = []
    if len(runs) > 1:
        notes.append(
            f"The directory holds {len(runs)} profile runs; the newest, {newest.name!r}, is "
            "read (give a run's directory to read another)."
        )
    return [p for p in found if p.parent == newest], notes


def _reader(path: Path) -> Any:
    """jaxlib's XSpace reader, or an error saying how to install it."""
    try:
        from jaxlib._profile_data import ProfileData
    except ImportError:
        try:  # the public name, where a later jaxlib moves the module
            from jax.profiler import ProfileData
        except ImportError:
            raise TraceFormatError(
                path, f"reading a JAX/XLA XPlane needs jaxlib's XPlane reader: {INSTALL_HINT}"
            ) from None
    return ProfileData


def _decoded(reader: Any, file: Path) -> Any:
    """One file's XSpace; a file the reader rejects raises TraceFormatError saying why."""
    data = read_file(file)  # a regular file within the size limit, or TraceFormatError
    if not data:
        raise TraceFormatError(file, "file is empty")
    try:
        return reader.from_serialized_xspace(data)
    except (RuntimeError, ValueError) as exc:
        raise TraceFormatError(file, f"not a valid XPlane protobuf ({_why(data, exc)})") from None


def _why(data: bytes, exc: Exception) -> str:
    replaced = data.count(_REPLACEMENT)
    if replaced > 16:
        return (
            f"it holds {replaced:,} U+FFFD replacement characters: it was saved through a text "
            "decoder, which destroys binary data; copy the original file's bytes"
        )
    return f"truncated or corrupt: {exc}"
