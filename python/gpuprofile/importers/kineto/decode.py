"""The Kineto Chrome-trace format as msgspec structs: only the fields gpuprofile reads.

msgspec decodes straight into these typed structs, so a trace is never materialised as Python
dicts; unknown keys are skipped by the decoder.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from types import FrameType
from typing import Any, Generic, TypeVar

import msgspec
import numpy as np

from gpuprofile.errors import TraceFormatError
from gpuprofile.importers.source import locate, read_trace_bytes


class Args(msgspec.Struct, gc=False):
    external_id: int | None = msgspec.field(name="External id", default=None)
    legacy_external_id: int | None = msgspec.field(name="external id", default=None)
    correlation: int | None = None
    device: int | None = None
    stream: int | str | None = None
    bytes: int | str | None = None
    input_dims: msgspec.Raw = msgspec.field(name="Input Dims", default=msgspec.Raw())
    legacy_input_dims: msgspec.Raw = msgspec.field(name="Input dims", default=msgspec.Raw())
    input_types: msgspec.Raw = msgspec.field(name="Input type", default=msgspec.Raw())
    concrete_inputs: msgspec.Raw = msgspec.field(name="Concrete Inputs", default=msgspec.Raw())
    # Triton launches write grid as a string; only lists carry dimensions we can use.
    grid: list[int] | str | None = None
    block: list[int] | str | None = None
    registers_per_thread: int | None = msgspec.field(name="registers per thread", default=None)
    shared_memory: int | None = msgspec.field(name="shared memory", default=None)
    blocks_per_sm: float | None = msgspec.field(name="blocks per SM", default=None)
    occupancy: float | None = msgspec.field(name="est. achieved occupancy %", default=None)
    alloc_bytes: int | None = msgspec.field(name="Bytes", default=None)
    total_allocated: int | None = msgspec.field(name="Total Allocated", default=None)
    total_reserved: int | None = msgspec.field(name="Total Reserved", default=None)
    device_type: int | None = msgspec.field(name="Device Type", default=None)
    device_id: int | None = msgspec.field(name="Device Id", default=None)
    name: str | None = None  # process_name / thread_name metadata
    # Communication args (record_param_comms ops, NCCL kernels since torch 2.3). Any: their
    # types vary between torch versions ("Process Group Name" is "0" or 0).
    collective: Any = msgspec.field(name="Collective name", default=None)
    process_group: Any = msgspec.field(name="Process Group Name", default=None)
    group_ranks: Any = msgspec.field(name="Process Group Ranks", default=None)
    seq: Any = msgspec.field(name="Seq", default=None)
    in_elems: Any = msgspec.field(name="In msg nelems", default=None)
    out_elems: Any = msgspec.field(name="Out msg nelems", default=None)
    dtype: Any = None
    # A counter ("ph": "C") sample, as gpuprofile exports them. Any: other events use the key
    # for anything, and a trace that loaded before must still load.
    value: Any = None


NO_ARGS = Args()


class Event(msgspec.Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: int | float | None = None
    dur: int | float | None = None
    id: Any = None  # a counter's series (gpuprofile: the device); flows use it too, loosely
    args: Args | None = None


E = TypeVar("E")


class Document(msgspec.Struct, Generic[E], gc=False):
    """A trace's header and its events: decoded (Event) or, read in parts, as raw JSON text.

    The header's fields are Any: each is checked where it is read (kineto_header.py), so
    that one of an unexpected type is unknown, with a notice, not the whole file refused."""

    traceEvents: list[E]
    schemaVersion: Any = None
    deviceProperties: Any = None
    computeProperties: Any = None
    distributedInfo: Any = None
    baseTimeNanoseconds: Any = None
    record_shapes: Any = None
    profile_memory: Any = None
    with_stack: Any = None
    with_flops: Any = None
    cupti_version: Any = None
    cuda_runtime_version: Any = None
    cuda_driver_version: Any = None
    roctracer_version: Any = None
    hip_runtime_version: Any = None
    host_name: Any = None
    # gpuprofile's own entry in a --steps export: {"windows": [...], "steps": {...}}. Any: a
    # trace of someone else's with such a key must still load.
    gpuprofile: Any = None


# Kineto category -> our table; old (2020-2021) traces capitalize categories.
TABLE_OF_CATEGORY = {
    "kernel": "kernels",
    "Kernel": "kernels",
    "gpu_memcpy": "memcpy",
    "Memcpy": "memcpy",
    "gpu_memset": "memset",
    "Memset": "memset",
    "cuda_runtime": "runtime",
    "Runtime": "runtime",
    "cuda_driver": "runtime",
    "cpu_op": "ops",
    "Operator": "ops",
    "user_annotation": "ops",
    "python_function": "ops",
}
OP_CATEGORY = {"Operator": "cpu_op"}
# record_function ranges on the GPU timeline: read into their own table (gpu_annotations).
GPU_ANNOTATION = "gpu_user_annotation"
# Allocator events are instants of this name.
MEMORY_EVENT = "[memory]"
# The profiler's own bookkeeping, in every torch.profiler trace (as RankMeta.skipped names
# them): its window's span and the instants that mark a window's start and end. Not read, and
# no loss: the report does not list them among the events not read.
PROFILER_MARKERS = frozenset(
    ("Trace", "instant Iteration Start: PyTorch Profiler", "instant Record Window End")
)


def table_of(ph: str, cat: str, name: str) -> str | None:
    """The table an event of this phase, category and name goes into ("memory" for allocator
    events); None for every other event (counters and metadata are read apart, flows skipped).
    The one rule the importer and ``scan_extent`` share."""
    if ph == "X":
        return TABLE_OF_CATEGORY.get(cat)
    if name == MEMORY_EVENT and ph in ("i", "I"):
        return "memory"
    return None


# A counter's unit rides in its name, "GPU utilization [%]": Chrome-trace counters carry
# numbers only, and Perfetto shows the name as the track's title.
def counter_name(name: str, unit: str) -> str:
    return f"{name} [{unit}]" if unit else name


def split_counter_name(text: str) -> tuple[str, str]:
    """``counter_name``'s inverse: (name, unit), unit "" when the name carries none."""
    if text.endswith("]") and " [" in text:
        name, unit = text[:-1].rsplit(" [", 1)
        return name, unit
    return text, ""


FLOW_PHASES = frozenset("sftbe")
_DOCUMENT_DECODER = msgspec.json.Decoder(Document[Event])
LIST_DECODER = msgspec.json.Decoder(list[Event])

# Below 2**43 us (~102 days) the float64 nearest to a timestamp written with nanosecond digits
# lies within 0.49 ns of it, so exact_ns recovers the written nanosecond; Kineto writes ts from a
# base at most 91 days back. Above, float64 steps grow to 1 ns and coarser (0.25 us at 1.7e15,
# absolute Unix time), and only a second, exact decode keeps the nanoseconds.
_FLOAT_EXACT_LIMIT_US = 2.0**43


def float_column(values: Sequence[Any]) -> tuple[np.ndarray, np.ndarray | None]:
    """Numbers (None: NaN) as float64, and where a value could not be one (an integer beyond
    float64), or None when every value could."""
    n = len(values)
    try:
        return np.fromiter((np.nan if v is None else v for v in values), np.float64, n), None
    except (OverflowError, TypeError, ValueError):
        pass
    out = np.full(n, np.nan)
    bad = np.zeros(n, bool)
    for i, v in enumerate(values):
        try:
            out[i] = np.nan if v is None else float(v)
        except (OverflowError, TypeError, ValueError):
            bad[i] = True
    return out, bad


def exact_ns(us: Any) -> np.ndarray:
    """Microseconds (float64) -> int64 nanoseconds nearest to each value's exact binary value.

    ``rint(us * 1000)`` rounds the product to a float first, which near 2**43 us can land a
    nanosecond off; here the product is formed in integers: us == m * 2**-shift exactly, with m
    a 53-bit integer, so m * 1000 (< 2**63) shifted back with rounding is exact.
    """
    shape = np.shape(us)
    us = np.asarray(us, dtype=np.float64).reshape(-1)
    out = np.rint(us * 1000).astype(np.int64)  # right where the integer path does not apply
    mantissa, exponent = np.frexp(us)
    shift = 53 - exponent.astype(np.int64)
    # shift <= 52 (|us| >= 1) leaves headroom for the rounding term; below, the float product
    # is off by far less than a nanosecond's rounding margin.
    exact = (shift >= 1) & (shift <= 52) & np.isfinite(us)
    m = (mantissa[exact] * 2.0**53).astype(np.int64)
    s = shift[exact]
    out[exact] = (m * 1000 + (np.int64(1) << (s - 1))) >> s
    return np.asarray(out.reshape(shape))


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
    ts, _ = float_column([e.ts for e in events])  # None -> NaN, never beyond
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
    for event, t in zip(events, times, strict=True):
        if t is not None and event.ts is not None:
            event.ts = float(t - anchor)
    doc.baseTimeNanoseconds = (doc.baseTimeNanoseconds or 0) + anchor * 1000


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
    head = raw.lstrip()[:1]
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


class _Stamp(msgspec.Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str = ""
    ts: int | float | None = None
    dur: int | float | None = None


class _Stamps(msgspec.Struct, gc=False):
    traceEvents: list[_Stamp]
    baseTimeNanoseconds: int | None = None


_STAMPS_DECODER = msgspec.json.Decoder(_Stamps)


def scan_extent(path: Path) -> tuple[int, int, int] | None:
    """(timeline events, start, end) of a Kineto file torch wrote, start and end absolute ns:
    the first start and the last end of the events the importer puts into tables (so start is
    the Trace's origin_ns); None when it has none. Decodes only those fields: a fraction of
    reading the file."""
    with nesting_limit():
        doc = _STAMPS_DECODER.decode(read_trace_bytes(path))
    stamped = [e for e in doc.traceEvents if e.ts is not None and table_of(e.ph, e.cat, e.name)]
    if not stamped:
        return None
    # As the importer does: ts and dur each to whole nanoseconds, then added.
    ts = exact_ns(np.array([float(e.ts) for e in stamped]))  # type: ignore[arg-type]
    dur = exact_ns(np.array([float(e.dur or 0) if e.ph == "X" else 0.0 for e in stamped]))
    base = doc.baseTimeNanoseconds or 0
    events = sum(e.ph == "X" for e in stamped)
    return events, base + int(ts.min()), base + int((ts + dur).max())
