"""Reading trace bytes from disk: plain or gzip, bounded, with errors that name the file.

Every file is looked at (``os.stat``) before it is opened: a FIFO, a device, a socket or a
directory is refused at once, never read (a FIFO would block, ``/dev/zero`` never ends). No file
yields more than ``max_bytes()`` (``GPUPROFILE_MAX_BYTES``, ``--max-bytes``, ``load(max_bytes=)``,
4 GiB by default): a plain file over it is refused from its size, and gzip is inflated with
that bound, so a gzip bomb stops after the limit, in memory the limit bounds.
"""

from __future__ import annotations

import os
import re
import stat
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import IO, Any

from gpuprofile.errors import OptionError, TraceFormatError
from gpuprofile.units import format_count

try:  # ISA-L's inflate: 2-2.5x zlib's on traces (bench/load.py); zlib where no wheel exists
    from isal import isal_zlib

    _decompressobj: Callable[..., Any] = isal_zlib.decompressobj
    # The stubs declare isal_zlib.error an instance; it is the class ISA-L raises.
    _ISAL_ERROR: type[Exception] = isal_zlib.error  # type: ignore[assignment]
    _GZIP_ERRORS: tuple[type[Exception], ...] = (EOFError, OSError, zlib.error, _ISAL_ERROR)
except ImportError:  # pragma: no cover - every platform gpuprofile is tested on has a wheel
    _decompressobj = zlib.decompressobj
    _GZIP_ERRORS = (EOFError, OSError, zlib.error)

_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"

# Far above any trace seen (the shared ones hold up to 62 MB of JSON; reading takes about 2x
# the JSON in memory), far below what a bomb or a device would feed.
DEFAULT_MAX_BYTES = 4 * 2**30
MAX_BYTES_ENV = "GPUPROFILE_MAX_BYTES"
RAISE_LIMIT = f"raise the limit with --max-bytes, load(max_bytes=) or {MAX_BYTES_ENV}"
_LIMIT: ContextVar[int | None] = ContextVar("gpuprofile_max_bytes", default=None)

# Binary for K, M, G, T, KiB ... (as GNU tools read `4G`); decimal for kB, MB, GB, TB.
_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([kmgt]?)(i?)(b?)\s*", re.IGNORECASE)
_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4}


def parse_size(value: int | str) -> int:
    """A size in bytes from ``4294967296``, ``"4G"``, ``"4GiB"`` (binary) or ``"4GB"`` (decimal).

    Parameters:
        value: a whole number of bytes, or text: a number and an optional unit (B; K, M, G, T
            and KiB ... TiB are powers of 1024; kB, MB, GB, TB powers of 1000).

    Returns:
        The number of bytes, 1 or more.

    Raises:
        OptionError: the value is not a size, or not positive.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        size = value
    else:
        match = _SIZE.fullmatch(value) if isinstance(value, str) else None
        if match is None:
            raise OptionError("max_bytes", value, "not a size: give bytes, or e.g. 8GiB, 500MB")
        number, prefix, binary, unit = match.groups()
        decimal = prefix and unit and not binary
        size = int(float(number) * (1000 if decimal else 1024) ** _POWERS[prefix.lower()])
    if size < 1:
        raise OptionError("max_bytes", value, "must be 1 byte or more")
    return size


def max_bytes() -> int:
    """The most bytes one file may yield: what ``byte_limit`` set, else ``GPUPROFILE_MAX_BYTES``,
    else ``DEFAULT_MAX_BYTES``."""
    limit = _LIMIT.get()
    if limit is not None:
        return limit
    text = os.environ.get(MAX_BYTES_ENV)
    if not text:
        return DEFAULT_MAX_BYTES
    try:
        return parse_size(text)
    except OptionError:
        raise OptionError(MAX_BYTES_ENV, text, "not a size: give bytes, or e.g. 8GiB") from None


@contextmanager
def byte_limit(limit: int | str | None) -> Iterator[None]:
    """Within the block, files may yield ``limit`` bytes (None: leave the limit as it is)."""
    if limit is None:
        yield
        return
    token = _LIMIT.set(parse_size(limit))
    try:
        yield
    finally:
        _LIMIT.reset(token)


_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _refuse_special(path: Path, mode: int) -> None:
    if stat.S_ISDIR(mode):
        raise TraceFormatError(path, "is a directory")
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
        raise TraceFormatError(path, f"is {kind}, not a file: gpuprofile reads trace files")


def check_file(path: Path) -> int:
    """The size of a regular file that may be read; anything else raises TraceFormatError.

    Parameters:
        path: the file.

    Returns:
        Its size in bytes, at most ``max_bytes()``.

    Raises:
        TraceFormatError: it does not exist, cannot be reached (permission denied), is a
            directory, a FIFO, a device or a socket, or holds more than ``max_bytes()``.
    """
    try:
        st = os.stat(path)
    except OSError as exc:
        raise _os_error(path, exc) from None
    _refuse_special(path, st.st_mode)
    size = st.st_size
    limit = max_bytes()
    if size > limit:
        raise TraceFormatError(path, _over(f"it holds {format_count(size, 'byte')},", limit))
    return size


@contextmanager
def open_regular(path: Path) -> Iterator[IO[bytes]]:
    """A checked file (``check_file``) opened for reading without blocking: were a FIFO put in
    its place after the check, the open would not wait for a writer."""
    check_file(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise _os_error(path, exc) from None
    with open(fd, "rb", buffering=0) as file:
        _refuse_special(path, os.fstat(fd).st_mode)
        yield file


def read_file(path: Path) -> bytes:
    """The bytes of a regular file of at most ``max_bytes()`` (``check_file``)."""
    with open_regular(path) as file, reading(path):
        size = os.fstat(file.fileno()).st_size
        # One read(2) returns at most 2 GiB on Linux: read until the end, or one byte past
        # the size (the file grows).
        chunks, got = [], 0
        while got <= size and (chunk := file.read(size + 1 - got)):
            chunks.append(chunk)
            got += len(chunk)
    raw = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    if len(raw) > size:
        raise TraceFormatError(path, "the file grew while it was read: is it still being written?")
    return raw


def read_trace_bytes(path: Path) -> bytes:
    """The decompressed bytes of one trace file, a UTF-8 byte order mark left out.

    Raises:
        TraceFormatError: the file is not a regular file, cannot be read, is empty, is corrupt
            or truncated gzip, or holds (or inflates to) more than ``max_bytes()``.
    """
    raw = read_file(path)
    if raw[:2] == _GZIP_MAGIC:
        raw = _gunzip(path, raw, max_bytes())
    if raw[:3] == _BOM:  # Windows tools write one; JSON forbids it, every reader forgives it
        raw = raw[3:]
    if not raw or raw.isspace():
        raise TraceFormatError(path, "file is empty")
    return raw


def _gunzip(path: Path, raw: bytes, limit: int) -> bytes:
    """gzip data inflated to at most ``limit`` bytes, member after member; more raises
    TraceFormatError as soon as the limit is passed, never holding more than the limit."""
    parts = []
    left = limit + 1  # one byte more than allowed tells "more" from "exactly the limit"
    data = raw
    try:
        while True:
            inflate = _decompressobj(wbits=31)
            out = inflate.decompress(data, left)
            left -= len(out)
            if left <= 0:
                raise TraceFormatError(path, _over("the gzip data inflates to", limit))
            if not inflate.eof:
                raise TraceFormatError(path, "truncated gzip data: the file ends mid-stream")
            parts.append(out)
            data = inflate.unused_data
            if not data.strip(b"\0"):  # zero padding after the last member is allowed
                break
            if data[:2] != _GZIP_MAGIC:
                raise TraceFormatError(path, "corrupt gzip data: bytes that are not gzip follow")
    except _GZIP_ERRORS as exc:
        raise TraceFormatError(path, f"corrupt or truncated gzip data ({exc})") from None
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _over(what: str, limit: int) -> str:
    return f"{what} more than the limit of {format_count(limit, 'byte')} per file; {RAISE_LIMIT}"


def _os_error(path: Path, exc: OSError) -> TraceFormatError:
    """An OSError met on a path as the error a user reads."""
    if isinstance(exc, FileNotFoundError):
        return TraceFormatError(path, "no such file or directory")
    if isinstance(exc, PermissionError):
        return TraceFormatError(path, "permission denied")
    if isinstance(exc, IsADirectoryError):
        return TraceFormatError(path, "is a directory")
    return TraceFormatError(path, f"cannot read: {exc.strerror or exc}")


@contextmanager
def reading(path: object) -> Iterator[None]:
    """Within the block, what reading ``path`` raised other than a GpuprofileError (an OSError,
    text that is not UTF-8, memory or recursion exhausted by the file) becomes the
    TraceFormatError a user can act on, naming the file."""
    try:
        yield
    except OSError as exc:
        raise _os_error(Path(str(path)), exc) from None
    except UnicodeDecodeError as exc:
        raise TraceFormatError(path, f"not UTF-8 text (byte {exc.start})") from None
    except RecursionError:
        raise TraceFormatError(path, "nested too deeply to read (arrays or objects)") from None
    except MemoryError:
        raise TraceFormatError(path, "this machine ran out of memory reading it") from None


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
