"""Reading trace bytes from disk: plain or gzip, with errors that name the file."""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Callable
from pathlib import Path

from gpuprofile.errors import TraceFormatError

try:  # ISA-L's inflate: 2-2.5x zlib's on traces (bench/load.py); zlib where no wheel exists
    from isal import igzip, isal_zlib

    _gunzip: Callable[[bytes], bytes] = igzip.decompress
    # The stubs declare isal_zlib.error an instance; it is the class ISA-L raises.
    _ISAL_ERROR: type[Exception] = isal_zlib.error  # type: ignore[assignment]
    _GZIP_ERRORS: tuple[type[Exception], ...] = (EOFError, OSError, zlib.error, _ISAL_ERROR)
except ImportError:  # pragma: no cover - every platform gpuprofile is tested on has a wheel
    _gunzip = gzip.decompress
    _GZIP_ERRORS = (EOFError, OSError, zlib.error)

_GZIP_MAGIC = b"\x1f\x8b"
TRACE_SUFFIXES = (".json", ".json.gz")


def read_trace_bytes(path: Path) -> bytes:
    """The decompressed bytes of one trace file; empty or corrupt files raise TraceFormatError."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise TraceFormatError(path, "no such file or directory") from None
    except IsADirectoryError:
        raise TraceFormatError(path, "is a directory") from None
    except OSError as exc:
        raise TraceFormatError(path, f"cannot read: {exc.strerror or exc}") from None
    if raw[:2] == _GZIP_MAGIC:
        try:
            raw = _gunzip(raw)
        except _GZIP_ERRORS as exc:
            raise TraceFormatError(path, f"corrupt or truncated gzip data ({exc})") from None
    if not raw.strip():
        raise TraceFormatError(path, "file is empty")
    return raw


def trace_files(directory: Path) -> list[Path]:
    """The trace files in a directory (one per rank), sorted by name."""
    files = sorted(
        p for p in directory.iterdir() if p.is_file() and p.name.endswith(TRACE_SUFFIXES)
    )
    if not files:
        raise TraceFormatError(directory, "directory holds no trace files (*.json, *.json.gz)")
    return files


_BYTE_POSITION = re.compile(r"\(byte (\d+)\)")


def locate(raw: bytes, message: str) -> str:
    """Turn msgspec's "(byte N)" into "line L, column C", which editors understand."""
    match = _BYTE_POSITION.search(message)
    if not match:
        return message
    offset = min(int(match.group(1)), len(raw))
    line = raw.count(b"\n", 0, offset) + 1
    column = offset - (raw.rfind(b"\n", 0, offset) + 1) + 1
    return _BYTE_POSITION.sub(f"(line {line}, column {column})", message)
