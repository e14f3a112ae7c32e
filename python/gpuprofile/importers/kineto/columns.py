"""The Kineto reader's columns stage: which table each event goes into (``sort_events``), and
the events of one table as typed column arrays for the Trace model."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from gpuprofile.importers.kineto.check import REJECTED, Findings, Shapes
from gpuprofile.importers.kineto.format import (
    FLOW_PHASES,
    GPU_ANNOTATION,
    NO_ARGS,
    OP_CATEGORY,
    OUT_OF_MEMORY_EVENT,
    PROFILER_SPAN,
    Args,
    Event,
    split_counter_name,
    table_of,
)
from gpuprofile.importers.kineto.gather import (
    ADDRESS,
    ID,
    INT_OR_NONE,
    PLAIN,
    Path,
    float_column_of,
    int_column,
    pair_codes_of,
    raw_codes_of,
)
from gpuprofile.importers.kineto.gather import int_or_none as _int_or_none
from gpuprofile.trace.model import NO_ID
from gpuprofile.trace.precisions import ITEMSIZE, SCALAR_TYPES

Times = tuple[np.ndarray, np.ndarray]  # (ts, dur) in ns, checked (check.checked_times)
_I32 = 2**31


# Stands for "absent" while a column's values are checked: -1 (NO_ID) may be a value then.
_ABSENT = -(2**63)


def _gathered(
    items: list[Any],
    path: Path,
    mode: int,
    findings: Findings | None = None,
    what: str = "",
    absent: int = NO_ID,
    alt: Path = (),
) -> np.ndarray:
    """The integers of each item's value at ``path`` (the item itself at ``()``) by ``mode``
    (gather.int_column: None is ``absent``, and so is one beyond int64, counted as ``what``),
    in one compiled pass where the core is built."""
    values, beyond = int_column(items, path, mode, absent, alt)
    if beyond and findings is not None:
        findings.unknown_value(f"{what} beyond int64", beyond)
    return values


def _checked_field(
    items: list[Any], path: Path, mode: int, low: int, high: int, findings: Findings, what: str
) -> np.ndarray:
    """The integers of each item's value at ``path`` by ``mode`` in [low, high) as int64; one
    absent, beyond int64 or out of range is NO_ID (those present counted as ``what``)."""
    read = _gathered(items, path, mode, findings, what, absent=_ABSENT)
    return _in_range(read, low, high, findings, what, absent=_ABSENT)


def _in_range(
    values: np.ndarray,
    low: float,
    high: float,
    findings: Findings,
    what: str,
    fill: Any = NO_ID,
    absent: Any = None,
) -> np.ndarray:
    """``values`` with those present (not ``absent``, not NaN) yet outside [low, high) as
    ``fill``, counted as ``what``; the absent ones too become ``fill``."""
    with np.errstate(invalid="ignore"):
        present = ~np.isnan(values) if absent is None else values != absent
        bad = present & ~((values >= low) & (values < high))
    if bad.any():
        findings.unknown_value(
            f"{what} out of range [{_bound(low)}, {_bound(high)})", int(bad.sum())
        )
    return np.where(bad | ~present, fill, values) if (bad.any() or absent is not None) else values


def _bound(x: float) -> str:
    return f"2^{int(x).bit_length() - 1}" if x >= 2**20 and int(x) & (int(x) - 1) == 0 else f"{x:g}"


def _floats(items: list[Any], path: Path, findings: Findings, what: str) -> np.ndarray:
    out, bad = float_column_of(items, path)
    if bad is not None:
        findings.unknown_value(f"{what} beyond float64", int(bad.sum()))
    return out


def _external_ids(args: list[Args], findings: Findings) -> np.ndarray:
    # "External id", else the older "external id".
    path, alt = ("external_id",), ("legacy_external_id",)
    return _gathered(args, path, PLAIN, findings, "External ids", alt=alt)


def thread_columns(bucket: list[Event], findings: Findings) -> dict[str, Any]:
    """The pid and tid columns of any host-side table (ids as Kineto writes them, checked)."""
    return {
        "pid": _gathered(bucket, ("pid",), ID, findings, "pids"),
        "tid": _gathered(bucket, ("tid",), ID, findings, "tids"),
    }


def op_columns(
    bucket: list[Event], times: Times, findings: Findings, shapes: Shapes
) -> dict[str, Any]:
    start, dur = times
    args = [e.args or NO_ARGS for e in bucket]
    return {
        **thread_columns(bucket, findings),
        "name": [e.name for e in bucket],
        "category": [OP_CATEGORY.get(e.cat, e.cat) for e in bucket],
        "start_ns": start,
        "dur_ns": dur,
        "external_id": _external_ids(args, findings),
        "input_dims": shapes.dims(
            raw_codes_of([a.input_dims or a.legacy_input_dims for a in args])
        ),
        "input_types": shapes.types(raw_codes_of([a.input_types for a in args])),
        "concrete_inputs": shapes.concrete(raw_codes_of([a.concrete_inputs for a in args])),
        **comm_columns(args, findings),
        **autograd_columns(args),
        **caller_line_column(args),
    }


def _any_set(values: list[Any]) -> bool:
    """Whether some value is not None. Callers list the values in a comprehension (a
    specialised attribute read per event) and the count runs in C: half the time of a
    generator's test per event, and of map() with attrgetter."""
    return values.count(None) < len(values)


def caller_line_column(args: list[Args]) -> dict[str, Any]:
    """The line each Python call was made on in its caller, where the capture wrote it (else
    NO_ID); {} when no event has one (the default column)."""
    if not _any_set([a.caller_line for a in args]):
        return {}
    return {"caller_line": _gathered(args, ("caller_line",), INT_OR_NONE)}


def autograd_columns(args: list[Args]) -> dict[str, Any]:
    """The autograd sequence number and forward thread counter of ops whose args carry them
    (else NO_ID); {} when no op has one (a trace without autograd: the defaults)."""
    if not (_any_set([a.sequence for a in args]) or _any_set([a.fwd_tid for a in args])):
        return {}
    return {
        "sequence": _gathered(args, ("sequence",), INT_OR_NONE),
        "fwd_tid": _gathered(args, ("fwd_tid",), INT_OR_NONE),
    }


# Bytes per element of the dtypes record_param_comms names (c10 ScalarType names).
DTYPE_BYTES = {scalar: ITEMSIZE[dtype] for scalar, dtype in SCALAR_TYPES.items()}


def comm_columns(args: list[Args], findings: Findings) -> dict[str, Any]:
    """The communication facts of events whose args carry them (else "" and -1): the
    collective's name, process group, its ranks, sequence number and message bytes (the
    larger of the in and out messages, as nccl-tests size a collective)."""
    if not _any_set([a.collective for a in args]):
        return {}
    return {
        "collective": [_text(a.collective) for a in args],
        "process_group": [_text(a.process_group) for a in args],
        "group_ranks": [_text(a.group_ranks) for a in args],
        "seq": _gathered(args, ("seq",), INT_OR_NONE),
        "comm_bytes": _gathered(
            [_message_bytes(a) for a in args], (), PLAIN, findings, "message bytes"
        ),
    }


def _text(value: Any) -> str:
    if value is None or isinstance(value, dict | list):
        return ""
    # An integer of thousands of digits is no name, and str() refuses it.
    return "" if isinstance(value, int) and not -(2**63) <= value < 2**63 else str(value)


def _message_bytes(a: Args) -> int | None:
    size = DTYPE_BYTES.get(_text(a.dtype))
    elems = [e for e in (_int_or_none(a.in_elems), _int_or_none(a.out_elems)) if e is not None]
    if size is None or not elems:
        return None
    return max(elems) * size


def _gpu_columns(
    bucket: list[Event], times: Times, findings: Findings
) -> tuple[dict[str, Any], list[Args]]:
    start, dur = times
    args = [e.args or NO_ARGS for e in bucket]
    device = _checked_field(args, ("device",), PLAIN, 0, _I32, findings, "devices")
    # Legacy traces carry the device only as the process id of the GPU lane.
    pids = _gathered(bucket, ("pid",), ID, findings, "pids")
    lane = np.where((pids >= 0) & (pids < _I32), pids, NO_ID)
    device = np.where(device == NO_ID, lane, device)
    # The stream arg, else the GPU lane's tid.
    stream = _gathered(bucket, ("args", "stream"), ID, findings, "streams", alt=("tid",))
    return {
        "device": device,
        "stream": stream,
        "name": [e.name for e in bucket],
        "start_ns": start,
        "dur_ns": dur,
        "correlation": _gathered(args, ("correlation",), PLAIN, findings, "correlation ids"),
        "external_id": _external_ids(args, findings),
    }, args


def gpu_annotation_columns(
    bucket: list[Event], times: Times, findings: Findings, _shapes: Shapes
) -> dict[str, Any]:
    """gpu_user_annotation events: Kineto writes no device or stream args on them, only the
    GPU lane they sit on (pid = device, tid = stream)."""
    columns, _ = _gpu_columns(bucket, times, findings)
    del columns["correlation"]
    return columns


def kernel_columns(
    bucket: list[Event], times: Times, findings: Findings, _shapes: Shapes
) -> dict[str, Any]:
    columns, args = _gpu_columns(bucket, times, findings)
    for key in ("grid", "block"):
        for axis, letter in enumerate("xyz"):
            dims = [_dim(getattr(a, key), axis) for a in args]
            what = f"{key} sizes"
            columns[f"{key}_{letter}"] = _checked_field(dims, (), PLAIN, 0, _I32, findings, what)
    columns["registers_per_thread"] = _checked_field(
        args, ("registers_per_thread",), PLAIN, 0, _I32, findings, "registers per thread"
    )
    columns["shared_memory"] = _checked_field(
        args, ("shared_memory",), PLAIN, 0, 2**62, findings, "shared memory"
    )
    occupancy = _floats(args, ("occupancy",), findings, "occupancy")
    columns["occupancy"] = _in_range(occupancy, 0, 101, findings, "occupancy %", np.nan)
    per_sm = _floats(args, ("blocks_per_sm",), findings, "blocks per SM")
    columns["blocks_per_sm"] = _in_range(per_sm, 0, 2**31, findings, "blocks per SM", np.nan)
    columns.update(comm_columns(args, findings))
    return columns


def _dim(dims: list[int] | str | None, axis: int) -> int | None:
    return dims[axis] if isinstance(dims, list) and len(dims) > axis else None


def _bytes_of(args: list[Args], findings: Findings) -> np.ndarray:
    return _checked_field(args, ("bytes",), ID, -1, 2**62, findings, "bytes")


def memcpy_columns(
    bucket: list[Event], times: Times, findings: Findings, _shapes: Shapes
) -> dict[str, Any]:
    columns = memset_columns(bucket, times, findings, _shapes)
    bytes_ = columns.pop("bytes")  # the table's column order: kind and pinned before bytes
    columns["kind"] = [memcpy_kind(e.name) for e in bucket]
    columns["pinned"] = np.fromiter(("Pinned" in e.name for e in bucket), bool, len(bucket))
    columns["bytes"] = bytes_
    return columns


def memcpy_kind(name: str) -> str:
    # "Memcpy HtoD (Pinned -> Device)"; AMD writes the same names.
    parts = name.split(" ", 2)
    if len(parts) >= 2 and parts[0] == "Memcpy" and parts[1] in _MEMCPY_KINDS:
        return parts[1]
    return "unknown"


_MEMCPY_KINDS = frozenset(("HtoD", "DtoH", "DtoD", "HtoH", "PtoP"))


def memset_columns(
    bucket: list[Event], times: Times, findings: Findings, _shapes: Shapes
) -> dict[str, Any]:
    columns, args = _gpu_columns(bucket, times, findings)
    columns["bytes"] = _bytes_of(args, findings)
    return columns


def runtime_columns(
    bucket: list[Event], times: Times, findings: Findings, _shapes: Shapes
) -> dict[str, Any]:
    start, dur = times
    args = [e.args or NO_ARGS for e in bucket]
    return {
        **thread_columns(bucket, findings),
        "name": [e.name for e in bucket],
        "category": [OP_CATEGORY.get(e.cat, e.cat) for e in bucket],
        "start_ns": start,
        "dur_ns": dur,
        "correlation": _gathered(args, ("correlation",), PLAIN, findings, "correlation ids"),
        "external_id": _external_ids(args, findings),
    }


def counter_columns(
    bucket: list[Event], times: Times, findings: Findings, _shapes: Shapes
) -> dict[str, Any]:
    """Counter samples ("ph": "C" with a numeric args.value; the series' device is its id)."""
    start, _ = times
    names = [split_counter_name(e.name) for e in bucket]
    return {
        "time_ns": start,
        "name": [name for name, _ in names],
        "unit": [unit for _, unit in names],
        "device": _checked_field(bucket, ("id",), ID, -1, _I32, findings, "counter devices"),
        "value": _floats(bucket, ("args", "value"), findings, "counter values"),
    }


def memory_columns(
    bucket: list[Event], times: Times, findings: Findings, _shapes: Shapes
) -> dict[str, Any]:
    start, _ = times
    args = [e.args or NO_ARGS for e in bucket]
    return {
        "time_ns": start,
        **thread_columns(bucket, findings),
        # Device Type 0 is the CPU: report host memory as device -1.
        "device": _checked_field(
            [a.device_id if a.device_type not in (None, 0) else -1 for a in args],
            (),
            PLAIN,
            -1,
            _I32,
            findings,
            "allocator devices",
        ),
        "bytes": _gathered(args, ("alloc_bytes",), PLAIN, findings, "allocator bytes"),
        "total_allocated": _gathered(
            args, ("total_allocated",), PLAIN, findings, "allocator totals"
        ),
        "total_reserved": _gathered(args, ("total_reserved",), PLAIN, findings, "allocator totals"),
        "addr": _gathered(args, ("addr",), ADDRESS, findings, "allocator addresses"),
    }


def device_summary(props: dict[str, Any]) -> dict[str, Any]:
    """The facts later analyses need, under one spelling across Kineto versions."""
    return {
        "id": props.get("id"),
        "name": props.get("name") or "",
        "memory_bytes": props.get("totalGlobalMem"),
        "sm_count": props.get("numSms", props.get("multiProcessorCount")),
        "compute_capability": _compute_capability(props),
        "properties": props,
    }


def _compute_capability(props: dict[str, Any]) -> str | None:
    major = props.get("computeMajor", props.get("major"))
    minor = props.get("computeMinor", props.get("minor"))
    return f"{major}.{minor}" if major is not None and minor is not None else None


# --- which table each event goes into ---------------------------------------------------------


def sort_events(
    events: list[Event],
) -> tuple[
    dict[str, list[Event]],
    list[Event],
    list[Event],
    list[Event],
    dict[str, str],
    Counter[str],
    list[Event],
]:
    """The events of each table in file order; the counter samples; the GPU annotations; the
    profiler's own spans (``Trace`` events, counted as skipped too); the threads' names; what
    was skipped, by kind, in the order first met; and the allocator's out-of-memory instants.

    Timeline events are routed by their (phase, category) pair in C-level passes (each pair's
    route worked out once); only the other events (instants, counters, metadata, unknown
    categories) are looked at one by one.
    """
    event_route = pair_codes_of(events, "ph", "cat", _Routes())
    buckets: dict[str, list[Event]] = {
        table: [events[i] for i in np.flatnonzero(event_route == k).tolist()]
        for k, table in enumerate(_TABLES)
    }
    counters: list[Event] = []
    # Apart from the buckets: they span GPU work already in them, so they leave the trace's
    # origin (and scan_extent's, which shares table_of) where the timeline tables put it.
    gpu_annotations: list[Event] = []
    spans: list[Event] = []
    thread_names: dict[str, str] = {}
    skipped: Counter[str] = Counter()
    failures: list[Event] = []
    for i in np.flatnonzero(event_route == _ONE_BY_ONE).tolist():
        event = events[i]
        ph = event.ph
        if table_of(ph, event.cat, event.name) == "memory":
            buckets["memory"].append(event)
        elif ph == "X" and event.cat == GPU_ANNOTATION:
            gpu_annotations.append(event)
        elif ph == "X":
            skipped[event.cat or "(no category)"] += 1
            if event.cat == PROFILER_SPAN:
                spans.append(event)
        elif ph in ("i", "I") and event.name == OUT_OF_MEMORY_EVENT:
            failures.append(event)
        elif ph in ("i", "I"):
            skipped[f"instant {event.name}"] += 1
        elif ph == "C":
            value = event.args.value if event.args is not None else None
            # A comparison, not float(): an integer of any size compares, NaN never passes.
            if (
                isinstance(value, int | float)
                and not isinstance(value, bool)
                and -1e308 < value < 1e308
            ):
                counters.append(event)
            else:
                skipped[f"counter {event.name} without a numeric 'value'"] += 1
        elif ph == REJECTED:
            continue  # counted when it was read
        elif ph == "M":
            if event.name == "thread_name" and event.args is not None and event.args.name:
                thread_names[f"{event.pid}/{event.tid}"] = event.args.name
        else:
            skipped[f"phase {ph or '(none)'}"] += 1
    return buckets, counters, gpu_annotations, spans, thread_names, skipped, failures


def out_of_memory_text(event: Event) -> str:
    """The failure an allocator's ``[OutOfMemory]`` instant records, in words (TraceMeta.failure
    of an imported trace: the analyses' post-mortem reads it as the capture's exception)."""
    args = event.args or NO_ARGS
    size = args.alloc_bytes if isinstance(args.alloc_bytes, int) else None
    on_gpu = args.device_type not in (None, 0)
    device = f"GPU {args.device_id}" if on_gpu else "the host"
    asked = f"you tried to allocate {size} bytes" if size is not None else "an allocation failed"
    where = "OutOfMemoryError (the profiler's [OutOfMemory] event)"
    return f"{where}: out of memory on {device}: {asked}"


class _Routes(dict[tuple[str, str], int]):
    """(phase, category) -> its route: a timeline table's index in _TABLES, _FLOW or
    _ONE_BY_ONE; each pair's route is worked out the first time it is met."""

    def __missing__(self, pair: tuple[str, str]) -> int:
        ph, cat = pair
        table = table_of(ph, cat, "") if ph == "X" else None
        route = _TABLES.index(table) if table else _FLOW if ph in FLOW_PHASES else _ONE_BY_ONE
        self[pair] = route
        return route


# The timeline tables an event's (phase, category) alone decides, in the order the importer
# builds them; then the two other routes of sort_events.
_TABLES = ("ops", "kernels", "memcpy", "memset", "runtime", "memory")
_FLOW, _ONE_BY_ONE = len(_TABLES), len(_TABLES) + 1
