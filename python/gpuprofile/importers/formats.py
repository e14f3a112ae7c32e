"""Which tool wrote a trace, told by its content, and the importer that reads it.

The name decides only where the content cannot: a renamed file is still read by what it holds.
Every importer fills the same Trace (trace/model.py), so what comes after never asks which
tool wrote it; ``trace.meta.source.format`` says, for the reader.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Callable
from pathlib import Path

from gpuprofile.errors import TraceFormatError
from gpuprofile.importers.memory_snapshot import looks_like_snapshot
from gpuprofile.importers.source import open_regular, reading
from gpuprofile.trace.model import Trace

FORMATS = ("kineto", "nsys", "ncu", "tensorrt", "xplane", "memory-snapshot")
_HEAD_BYTES = 1 << 16
_SQLITE_MAGIC = b"SQLite format 3\x00"
_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"
NSYS_REPORT_SUFFIXES = (".nsys-rep", ".qdrep")
_XPLANE_SUFFIX = ".xplane.pb"
_TRTEXEC_COUNT = re.compile(rb'\[\s*\{\s*"count"\s*:')
_SUPPORTED = (
    "Kineto / PyTorch profiler JSON (.json, .json.gz), an Nsight Systems SQLite export, an "
    "Nsight Compute CSV (ncu --csv), a trtexec --exportProfile JSON, a JAX/XLA XPlane "
    "(.xplane.pb), or a PyTorch CUDA memory snapshot (torch.cuda.memory._dump_snapshot)"
)


def detect_format(path: Path) -> str:
    """The format of one file or directory, one of ``FORMATS``.

    Parameters:
        path: a trace file, or a directory (a job's Kineto files, or a JAX profile directory
            holding ``*.xplane.pb`` files, as ``plugins/profile/<run>/`` does).

    Returns:
        The format's name.

    Raises:
        TraceFormatError: the file cannot be read or holds none of the formats gpuprofile
            reads.
    """
    if path.is_dir():
        return "xplane" if next(path.rglob(f"*{_XPLANE_SUFFIX}"), None) else "kineto"
    head = _head(path)
    if head.startswith(_SQLITE_MAGIC):
        return "nsys"
    if path.name.lower().endswith(NSYS_REPORT_SUFFIXES):
        return "nsys"  # its importer exports it with nsys, or says how to
    text = head.removeprefix(_BOM).lstrip()
    if text[:1] in (b"{", b"["):
        return "tensorrt" if _is_trtexec(text) else "kineto"
    if b'"Kernel Name"' in head and (b'"Metric Name"' in head or b'"ID"' in head):
        return "ncu"
    if _has_line(head, b"Start (ns)"):  # an `nsys stats` report
        return "nsys"
    if _is_xplane(head) or path.name.endswith(_XPLANE_SUFFIX):
        return "xplane"
    if looks_like_snapshot(head):
        return "memory-snapshot"
    raise TraceFormatError(path, f"not a trace gpuprofile reads; it reads {_SUPPORTED}")


def read_trace(path: Path, **job: object) -> Trace:
    """Read one file or directory with the importer of its format (``detect_format``);
    ``job`` are load_kineto's options for a job of Kineto files. Whatever fails in reading
    raises TraceFormatError naming the path (``source.reading``)."""
    with reading(path):
        return importer(detect_format(path), **job)(path)


def importer(fmt: str, **job: object) -> Callable[[Path], Trace]:
    """The function that reads a file of ``fmt`` into a Trace; imported when asked for, so
    reading a Kineto trace never imports sqlite3 or protobuf."""
    if fmt == "kineto":
        from gpuprofile.importers.kineto import load_kineto

        return lambda path: load_kineto(path, **job)  # type: ignore[arg-type]
    if fmt == "nsys":
        from gpuprofile.importers.nsys import load_nsys

        return load_nsys
    if fmt == "ncu":
        from gpuprofile.importers.ncu import load_ncu

        return load_ncu
    if fmt == "tensorrt":
        from gpuprofile.importers.tensorrt import load_tensorrt

        return load_tensorrt
    if fmt == "xplane":
        from gpuprofile.importers.xplane import load_xplane

        return load_xplane
    if fmt == "memory-snapshot":
        from gpuprofile.importers.memory_snapshot import read_memory_snapshot

        return read_memory_snapshot
    raise ValueError(f"format {fmt!r} is not one of {FORMATS}")


def _head(path: Path) -> bytes:
    """The first bytes of a file, decompressed when it is gzip; a path that is not a regular
    file of at most ``max_bytes()`` raises TraceFormatError before it is read."""
    with open_regular(path) as file, reading(path):
        head = file.read(_HEAD_BYTES)
        if not head.strip():
            raise TraceFormatError(path, "file is empty")
        if head.startswith(_GZIP_MAGIC):
            file.seek(0)
            try:
                with gzip.GzipFile(fileobj=file, mode="rb") as inflated:
                    head = inflated.read(_HEAD_BYTES)
            except (EOFError, OSError, zlib.error) as exc:
                raise TraceFormatError(path, f"corrupt or truncated gzip data ({exc})") from None
    return head


def _is_trtexec(text: bytes) -> bool:
    """trtexec's exports are JSON lists of records (--exportProfile: a ``count`` record then
    layers with ``averageMs``; --exportTimes: ``startEnqMs`` ...), or, for --exportLayerInfo,
    an object of ``Layers`` and ``Bindings``; TREx's ``.profile.metadata.json`` beside them
    is an object of ``performance_summary`` and ``device_information``."""
    if text.startswith(b"["):
        # The profile's {"count": N} head tells a damaged profile too (layers without times).
        keys = (b'"averageMs"', b'"medianMs"', b'"startEnqMs"', b'"latencyMs"')
        return any(key in text for key in keys) or _TRTEXEC_COUNT.match(text) is not None
    if b'"traceEvents"' in text:
        return False
    trex = b'"device_information"' in text and b'"performance_summary"' in text
    return trex or (b'"Layers"' in text and b'"Bindings"' in text)


def _has_line(head: bytes, needle: bytes) -> bool:
    return any(needle in line for line in head.splitlines()[:20])


def _is_xplane(head: bytes) -> bool:
    """An XSpace protobuf: field 1 (planes, length-delimited) first, and plane names that
    say where they ran."""
    return head[:1] == b"\x0a" and (b"/device:" in head or b"/host:" in head)
