"""A Kineto file's events a part at a time, so that a trace is never held as decoded events all
at once: its text is scanned once into each event's raw JSON (a fraction of a full decode),
and each part of events is decoded, turned into columns and let go before the next. Small
files are decoded whole."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from gpuprofile.errors import TraceFormatError
from gpuprofile.importers.kineto.check import Findings, loose_events
from gpuprofile.importers.kineto.decode import (
    LIST_DECODER,
    LOOSE_LIST_DECODER,
    Document,
    Event,
    decode_bytes,
    needs_exact_times,
    nesting_limit,
    nesting_problem,
)
from gpuprofile.importers.source import read_trace_bytes

# Files of more JSON than this are read in parts: below, what the imports and the report take
# outweighs the events, and a whole decode is as fast.
PART_BYTES = 16 * 2**20
# Events per part. On the shared traces of 35-62 MB, parts of 10,000 events took as long as a
# whole decode and peaked at 2.1x the JSON (4.4x whole; 2.5x with parts of 25,000).
PART_EVENTS = 10_000

# (index of the part's first event in the file, the part's events)
Part = tuple[int, list[Event]]


class WholeDocumentNeeded(Exception):
    """Some ts needs the whole document to be kept to the nanosecond (kineto_format's
    _keep_nanoseconds rebases every ts on the earliest): read the file whole."""


_OUTLINE_DECODER = msgspec.json.Decoder(Document[msgspec.Raw])
_RAW_LIST_DECODER = msgspec.json.Decoder(list[msgspec.Raw])


def event_parts(
    path: Path, findings: Findings, whole: bool = False
) -> tuple[Document[Any], Iterator[Part], bool]:
    """The file's header (its traceEvents left empty) and its events in parts, in file order.

    Args:
        path: a Kineto trace file (.json or .json.gz).
        findings: where events of values that do not fit the typed structs are counted (a
            part holding one is decoded again, loosely: kineto_checks.loose_events).
        whole: decode the file whole, whatever its size.
    Returns:
        The header; an iterator of (index of the first event, events), which raises
        TraceFormatError for a damaged file (located as a whole decode locates it) and
        WholeDocumentNeeded where the file must be read with ``whole=True``; and whether the
        file is read in parts.
    """
    raw = read_trace_bytes(path)
    if whole or len(raw) <= PART_BYTES:
        doc = decode_bytes(path, raw, lambda items, first: loose_events(items, first, findings))
        events, doc.traceEvents = doc.traceEvents, []
        return doc, iter([(0, events)]), False
    try:
        with nesting_limit():
            if raw.lstrip()[:1] == b"[":
                outline: Document[Any] = Document(traceEvents=_RAW_LIST_DECODER.decode(raw))
            else:
                outline = _OUTLINE_DECODER.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError):
        decode_bytes(path, raw)  # raises the error located in the file
        raise TraceFormatError(path, "not a Chrome/Kineto trace") from None
    except RecursionError:
        raise TraceFormatError(path, nesting_problem(raw)) from None
    texts, outline.traceEvents = outline.traceEvents, []
    return outline, _decoded(path, raw, texts, findings), True


def _decoded(
    path: Path, raw: bytes, texts: list[msgspec.Raw], findings: Findings
) -> Iterator[Part]:
    for first in range(0, len(texts), PART_EVENTS):
        part = b"[" + b",".join(texts[first : first + PART_EVENTS]) + b"]"
        try:
            with nesting_limit():
                try:
                    events = LIST_DECODER.decode(part)
                except msgspec.ValidationError:
                    events = loose_events(LOOSE_LIST_DECODER.decode(part), first, findings)
        except RecursionError:
            raise TraceFormatError(path, nesting_problem(raw)) from None
        except (msgspec.DecodeError, msgspec.ValidationError):
            decode_bytes(path, raw)  # raises the error located in the file
            raise TraceFormatError(path, "an event could not be decoded") from None
        del part
        if needs_exact_times(events):
            raise WholeDocumentNeeded
        yield first, events
