"""The Kineto Chrome-trace format as msgspec structs: only the fields gpuprofile reads.

msgspec decodes straight into these typed structs, so a trace is never materialised as Python
dicts; unknown keys are skipped by the decoder.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
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
    """A trace's header and its events: decoded (Event) or, read in parts, as raw JSON text."""

    traceEvents: list[E]
    schemaVersion: int | str | None = None
    deviceProperties: list[dict[str, Any]] | None = None
    computeProperties: list[dict[str, Any]] | None = None
    distributedInfo: dict[str, Any] | None = None
    baseTimeNanoseconds: int | None = None
    record_shapes: int | bool | None = None
    profile_memory: int | bool | None = None
    with_stack: int | bool | None = None
    with_flops: int | bool | None = None
    cupti_version: int | str | None = None
    cuda_runtime_version: int | str | None = None
    cuda_driver_version: int | str | None = None
    roctracer_version: int | str | float | None = None
    hip_runtime_version: int | str | None = None
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
    ts: int | Decimal | None = None


class _ExactTimes(msgspec.Struct, gc=False):
    traceEvents: list[_ExactTime]


_EXACT_DOCUMENT_DECODER = msgspec.json.Decoder(_ExactTimes)
_EXACT_LIST_DECODER = msgspec.json.Decoder(list[_ExactTime])


def needs_exact_times(events: list[Event]) -> bool:
    """Whether some ts is a fraction beyond float64's nanoseconds (``_FLOAT_EXACT_LIMIT_US``)."""
    ts = np.array([e.ts for e in events], dtype=np.float64)  # None -> NaN, never beyond
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
    anchor = min(int(x.ts) for x in exact if x.ts is not None)
    for event, x in zip(events, exact, strict=True):
        if x.ts is not None:
            event.ts = float(x.ts - anchor)
    doc.baseTimeNanoseconds = (doc.baseTimeNanoseconds or 0) + anchor * 1000


def decode_bytes(path: Path, raw: bytes) -> Document[Event]:
    """A trace file's text (``path`` names it in errors) as a Document of decoded events."""
    head = raw.lstrip()[:1]
    try:
        if head == b"[":
            doc = Document(traceEvents=LIST_DECODER.decode(raw))
        elif head == b"{":
            doc = _DOCUMENT_DECODER.decode(raw)
        else:
            raise TraceFormatError(path, "not JSON text (does not start with '{' or '[')")
        _keep_nanoseconds(raw, doc, is_list=head == b"[")
        return doc
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
