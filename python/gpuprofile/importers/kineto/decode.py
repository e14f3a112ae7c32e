"""The Kineto reader's decode stage: a file's JSON text as its header and its events, typed
(format.py's structs), whole or, for a large file, a part at a time.

A large file is never held as decoded events all at once: its text is scanned once into each
event's raw JSON (a fraction of a full decode), and each part of events is decoded, turned into
columns by the later stages and let go before the next. Small files are decoded whole. Where an
event's values do not fit the typed structs, the events are decoded as plain values and handed
to the ``loose`` function the caller gives (check.loose_events, passed in by trace.py, so that
this stage imports no later one). Times keep their nanoseconds (``gather.exact_ns_of``, a
second exact decode where float64 loses them), and no JSON nests deeper than ``MAX_NESTING``.
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from types import FrameType
from typing import Any

import msgspec
import numpy as np

from gpuprofile.errors import TraceFormatError
from gpuprofile.importers.kineto.format import Document, Event
from gpuprofile.importers.kineto.gather import float_column_of
from gpuprofile.importers.source import locate

_DOCUMENT_DECODER = msgspec.json.Decoder(Document[Event])
LIST_DECODER = msgspec.json.Decoder(list[Event])

# Below 2**43 us (~102 days) the float64 nearest to a timestamp written with nanosecond digits
# lies within 0.49 ns of it, so exact_ns_of recovers the written nanosecond; Kineto writes ts from a
# base at most 91 days back. Above, float64 steps grow to 1 ns and coarser (0.25 us at 1.7e15,
# absolute Unix time), and only a second, exact decode keeps the nanoseconds.
_FLOAT_EXACT_LIMIT_US = 2.0**43


class _ExactTime(msgspec.Struct, gc=False):
    ts: msgspec.Raw = msgspec.Raw()  # the text: a Decimal where it is a number


# An event that is not an object is read as such (the importer rejects it) and has no ts.
_AnyEvent = _ExactTime | list[Any] | int | float | str | bool | None


class _ExactTimes(msgspec.Struct, gc=False):
    traceEvents: list[_AnyEvent]


def _decimal(x: _AnyEvent) -> Decimal | None:
    """An event's ts exactly, None where it has none or it is no finite number."""
    if not isinstance(x, _ExactTime) or not x.ts:
        return None
    try:
        value = Decimal(bytes(x.ts).decode())
    except (ArithmeticError, ValueError):
        return None
    return value if value.is_finite() else None


_EXACT_DOCUMENT_DECODER = msgspec.json.Decoder(_ExactTimes)
_EXACT_LIST_DECODER = msgspec.json.Decoder(list[_AnyEvent])


def needs_exact_times(events: list[Event]) -> bool:
    """Whether some ts is a fraction beyond float64's nanoseconds (``_FLOAT_EXACT_LIMIT_US``)."""
    ts, _ = float_column_of(events, ("ts",))  # None -> NaN, never beyond
    # An int ts is a whole number as a float too, so only fractional floats are found here.
    return bool(((np.abs(ts) >= _FLOAT_EXACT_LIMIT_US) & (ts != np.floor(ts))).any())


def _keep_nanoseconds(raw: bytes, doc: Document[Event], is_list: bool) -> None:
    """Re-read ts exactly where float64 lost its nanoseconds, and rebase it near zero.

    Only traces with fractional ts beyond 2**43 us pay for the second, ts-only decode. The
    whole microseconds of the earliest ts move into baseTimeNanoseconds, so every ts left is
    small enough for a float64 to hold to the nanosecond.
    """
    events = doc.traceEvents
    if not needs_exact_times(events):
        return
    exact = (
        _EXACT_LIST_DECODER.decode(raw)
        if is_list
        else _EXACT_DOCUMENT_DECODER.decode(raw).traceEvents
    )
    times = [_decimal(x) for x in exact]
    anchor = min(int(t) for t in times if t is not None)
    rebase(events, times, anchor)
    doc.baseTimeNanoseconds = (doc.baseTimeNanoseconds or 0) + anchor * 1000


def rebase(events: list[Event], times: list[Decimal | None], anchor: int) -> None:
    """Each event's ts as its exact time less ``anchor`` whole us, rounded once."""
    for event, t in zip(events, times, strict=True):
        if t is not None and event.ts is not None:
            event.ts = float(t - anchor)


Loose = Callable[[list[Any], int], list[Event]]
# Events decoded as plain values, for a loose reading; a float beyond float64 becomes inf.
LOOSE_LIST_DECODER = msgspec.json.Decoder(list[Any], float_hook=float)
_LOOSE_DOCUMENT_DECODER = msgspec.json.Decoder(Document[Any], float_hook=float)


# The deepest JSON a trace is read to: Kineto nests 7 levels (distributedInfo's pg_config).
MAX_NESTING = 256
# One lowered limit at a time: two threads (a Dask worker's) that each saved and restored the
# limit could end in the wrong order and leave the process with the lowered one for good.
# msgspec decodes holding the GIL, so serialising them costs no parallelism.
_NESTING_LOCK = threading.RLock()


@contextmanager
def nesting_limit() -> Iterator[None]:
    """Within, a decode nests at most about MAX_NESTING levels below the caller.

    msgspec checks its depth against Python's recursion limit before each level it enters
    (a RecursionError, never a stack overflow); the limit is lowered (never raised) to the
    caller's depth plus MAX_NESTING, so the bound holds whatever limit a notebook has set, at
    no cost to a good file. The limit is the process's: other threads keep hundreds of
    levels above their own (shallow) stacks while it is lowered.
    """
    with _NESTING_LOCK:
        old = sys.getrecursionlimit()
        depth = 0
        frame: FrameType | None = sys._getframe()
        while frame is not None:
            depth, frame = depth + 1, frame.f_back
        bound = depth + MAX_NESTING + 8
        if bound < old:
            sys.setrecursionlimit(bound)
        try:
            yield
        finally:
            sys.setrecursionlimit(old)


def decode_bytes(path: Path, raw: bytes, loose: Loose | None = None) -> Document[Event]:
    """A trace file's text (``path`` names it in errors) as a Document of decoded events.

    ``loose``: where an event's values do not fit the typed structs, the events are decoded
    as plain values and handed to ``loose`` (with the index of the first), which makes them
    Events; without it, such a file raises TraceFormatError.
    """
    head = first_byte(raw)
    if head not in (b"[", b"{"):
        raise TraceFormatError(path, "not JSON text (does not start with '{' or '[')")
    is_list = head == b"["
    try:
        with nesting_limit():
            try:
                doc = (
                    Document(traceEvents=LIST_DECODER.decode(raw))
                    if is_list
                    else _DOCUMENT_DECODER.decode(raw)
                )
            except msgspec.ValidationError:
                if loose is None:
                    raise
                doc = _decode_loose(raw, is_list, loose)
            _keep_nanoseconds(raw, doc, is_list=is_list)
        return doc
    except RecursionError:
        raise TraceFormatError(path, nesting_problem(raw)) from None
    except msgspec.ValidationError as exc:
        message = str(exc)
        if "missing required field `traceEvents`" in message:
            raise TraceFormatError(
                path, "JSON is not a Chrome/Kineto trace: no 'traceEvents' list"
            ) from None
        raise TraceFormatError(path, f"unexpected value: {message}") from None
    except msgspec.DecodeError as exc:
        message = str(exc)
        if "truncated" in message:
            message = "JSON is truncated (the file ends before the trace does)"
        elif "utf-8" in message.lower() or b"\x00" in raw[:4]:
            message = f"not UTF-8 JSON text: {message}"
        raise TraceFormatError(path, locate(raw, message)) from None


def _decode_loose(raw: bytes, is_list: bool, loose: Loose) -> Document[Event]:
    if is_list:
        return Document(traceEvents=loose(LOOSE_LIST_DECODER.decode(raw), 0))
    doc: Document[Any] = _LOOSE_DOCUMENT_DECODER.decode(raw)
    doc.traceEvents = loose(doc.traceEvents, 0)
    return doc


def nesting_problem(raw: bytes) -> str:
    """What to say of JSON the decoder refused as nested too deeply (``nesting_limit``): how
    deep it nests, and where. Run only then, this scan (brackets outside strings,
    vectorised; about 2 s for 60 MB) costs nothing on a good file."""
    data = np.frombuffer(raw, np.uint8)
    quotes = np.flatnonzero(data == ord('"'))
    # A quote after an odd run of backslashes is inside a string; such quotes are rare.
    escaped = np.zeros(len(quotes), bool)
    for i in np.flatnonzero(data[np.maximum(quotes - 1, 0)] == ord("\\")).tolist():
        j = int(quotes[i]) - 1
        while j >= 0 and data[j] == ord("\\"):
            j -= 1
        escaped[i] = (int(quotes[i]) - 1 - j) % 2 == 1
    quotes = quotes[~escaped]
    opens = (data == ord("[")) | (data == ord("{"))
    brackets = np.flatnonzero(opens | (data == ord("]")) | (data == ord("}")))
    brackets = brackets[np.searchsorted(quotes, brackets) % 2 == 0]  # outside strings
    depth = np.cumsum(np.where(opens[brackets], 1, -1)) if len(brackets) else np.zeros(1, int)
    deepest = int(depth.max())
    at = int(brackets[int(np.argmax(depth))]) if len(brackets) else 0
    return locate(
        raw,
        f"nested too deeply to read: {deepest} levels of arrays or objects, more than "
        f"{MAX_NESTING} (byte {at})",
    )


# Files of more JSON than this are read in parts by msgspec: below, what the imports and the
# report take outweighs the events. At 16 MB, a 9.8 MB trace decoded whole peaked at 51 MB over
# the imports (issue 28's bound: 2x the JSON + 20 MB = 39.6), 37 MB in parts, in the same time.
# With the compiled core's direct path every file is read in parts: faster than the whole
# decode at every size (5-35% on the shared traces of 3 KB to 3 MB).
PART_BYTES = 4 * 2**20
# Events per part. On the shared traces of 35-62 MB, parts of 10,000 events took as long as a
# whole decode and peaked at 2.1x the JSON (4.4x whole; 2.5x with parts of 25,000); parts of
# 5,000 keep a 15 MB trace within 2x + 20 MB too (48 MB over the imports, 51 with 10,000).
PART_EVENTS = 5000

# (index of the part's first event in the file, the part's events): decoded, or what a direct
# reader (direct.py's, passed in by trace.py, which knows its type) read of them, with every ts
# rebased on the anchor where one is given (exact times).
Part = tuple[int, Any]
Direct = Callable[[list[msgspec.Raw], int | None], Any]
# The compiled core's earliest whole us of a part's ts (direct.py's), or None: (read, earliest).
Earliest = Callable[[list[msgspec.Raw]], tuple[bool, int | None]]


class ExactTimesNeeded(Exception):
    """Some ts of the file ``path`` needs every ts of it to be kept to the nanosecond
    (_keep_nanoseconds rebases each on the earliest): read it again with ``exact=True``."""

    def __init__(self, path: Path) -> None:
        super().__init__(str(path))
        self.path = path


# What bytes.lstrip() strips; matched in place, where lstrip would copy a whole file that
# starts with a newline (torch's export does).
_LEADING_SPACE = re.compile(rb"[ \t\n\r\x0b\x0c]*")


def first_byte(raw: bytes) -> bytes:
    """``raw.lstrip()[:1]``, without copying raw."""
    start = _LEADING_SPACE.match(raw)
    at = start.end() if start else 0
    return raw[at : at + 1]


_OUTLINE_DECODER = msgspec.json.Decoder(Document[msgspec.Raw])
_RAW_LIST_DECODER = msgspec.json.Decoder(list[msgspec.Raw])


def event_parts(
    path: Path,
    raw: bytes,
    loose: Loose,
    exact: bool = False,
    direct: Direct | None = None,
    earliest: Earliest | None = None,
) -> tuple[Document[Any], Iterator[Part], bool]:
    """The file's header (its traceEvents left empty) and its events in parts, in file order.

    Args:
        path: the Kineto trace file (.json or .json.gz) ``raw`` was read from, named in errors.
        raw: its JSON text (source.read_trace_bytes).
        loose: makes Events of a part's events decoded as plain values (with the index of the
            part's first event), where some value does not fit the typed structs.
        exact: keep every ts to the nanosecond, as a whole decode does where some ts needs it
            (_keep_nanoseconds): a first pass over the parts finds the earliest ts, the header's
            base takes its whole microseconds, and each part's ts are read again exactly and
            rebased on it; memory stays a part's, where reading the file whole held it all.
        direct: reads a part's tables from its events' texts, or declines (None): tried on
            each part (with ``exact``, given the anchor); with it, every file is read in parts.
        earliest: finds a part's earliest whole us, as _earliest_microsecond does, where it
            reads the part (with ``exact``; else exact_times' Decimals do).
    Returns:
        The header; an iterator of (index of the first event, events), which raises
        TraceFormatError for a damaged file (located as a whole decode locates it) and
        ExactTimesNeeded where the file must be read with ``exact=True`` (a file read in parts
        whose first part shows it is read so from the start: its first part is read here);
        and whether the file is read in parts.
    """
    if direct is None and len(raw) <= PART_BYTES:  # with the core, every file is in parts
        doc = decode_bytes(path, raw, loose)
        events, doc.traceEvents = doc.traceEvents, []
        return doc, iter([(0, events)]), False
    try:
        with nesting_limit():
            if first_byte(raw) == b"[":
                outline: Document[Any] = Document(traceEvents=_RAW_LIST_DECODER.decode(raw))
            else:
                outline = _OUTLINE_DECODER.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError):
        decode_bytes(path, raw)  # raises the error located in the file
        raise TraceFormatError(path, "not a Chrome/Kineto trace") from None
    except RecursionError:
        raise TraceFormatError(path, nesting_problem(raw)) from None
    texts, outline.traceEvents = outline.traceEvents, []
    if not texts:  # one empty part, as a whole decode gives: the tables' columns, no rows
        return outline, iter([(0, [])]), False
    read: list[Part] = []
    if not exact:
        try:
            read.append((0, _part(path, raw, texts, 0, loose, None, direct)))
        except ExactTimesNeeded:
            exact = True  # where the first part shows it, before any part is read again
    anchor = _earliest_microsecond(path, raw, texts, earliest) if exact else None
    if anchor is not None:
        outline.baseTimeNanoseconds = (outline.baseTimeNanoseconds or 0) + anchor * 1000
    return outline, _decoded(path, raw, texts, loose, anchor, direct, read), True


def _part_text(texts: list[msgspec.Raw], first: int) -> bytes:
    return b"[" + b",".join(texts[first : first + PART_EVENTS]) + b"]"


def exact_times(path: Path, raw: bytes, part: bytes) -> list[Decimal | None]:
    """Each event's ts in a part's JSON text (a list), exactly; None where it has none."""
    try:
        with nesting_limit():
            return [_decimal(x) for x in _EXACT_LIST_DECODER.decode(part)]
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        decode_bytes(path, raw)  # raises the error located in the file
        raise TraceFormatError(path, "an event could not be decoded") from None


def _earliest_microsecond(
    path: Path, raw: bytes, texts: list[msgspec.Raw], compiled: Earliest | None
) -> int | None:
    """The whole microseconds of the earliest ts of the events (as _keep_nanoseconds takes
    them), a part at a time (by ``compiled`` where it reads the part); None where no event has
    one."""
    earliest = None
    for first in range(0, len(texts), PART_EVENTS):
        read, least = compiled(texts[first : first + PART_EVENTS]) if compiled else (False, None)
        if not read:
            times = [
                int(t) for t in exact_times(path, raw, _part_text(texts, first)) if t is not None
            ]
            least = min(times) if times else None
        if least is not None:
            earliest = least if earliest is None else min(earliest, least)
    return earliest


def _decoded(
    path: Path,
    raw: bytes,
    texts: list[msgspec.Raw],
    loose: Loose,
    anchor: int | None,
    direct: Direct | None,
    read: list[Part],
) -> Iterator[Part]:
    """The parts after those already ``read`` (the first, or none), in file order."""
    done = len(read)
    while read:  # let go of each part once yielded
        yield read.pop(0)
    for first in range(done * PART_EVENTS, len(texts), PART_EVENTS):
        yield first, _part(path, raw, texts, first, loose, anchor, direct)


def _part(
    path: Path,
    raw: bytes,
    texts: list[msgspec.Raw],
    first: int,
    loose: Loose,
    anchor: int | None,
    direct: Direct | None,
) -> Any:
    """The part of the events from ``first``: what ``direct`` reads of them, else decoded."""
    read = direct(texts[first : first + PART_EVENTS], anchor) if direct is not None else None
    if read is not None:
        return read
    part = _part_text(texts, first)
    try:
        with nesting_limit():
            try:
                events = LIST_DECODER.decode(part)
            except msgspec.ValidationError:
                events = loose(LOOSE_LIST_DECODER.decode(part), first)
    except RecursionError:
        raise TraceFormatError(path, nesting_problem(raw)) from None
    except (msgspec.DecodeError, msgspec.ValidationError):
        decode_bytes(path, raw)  # raises the error located in the file
        raise TraceFormatError(path, "an event could not be decoded") from None
    if anchor is not None:
        rebase(events, exact_times(path, raw, part), anchor)
    elif needs_exact_times(events):
        raise ExactTimesNeeded(path)
    return events
