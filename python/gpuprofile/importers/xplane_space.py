"""One decoded XSpace (jaxlib's ProfileData) -> the Trace tables.

A plane is a device (``/device:GPU:N``, ``/device:TPU:N``) or the host (``/host:CPU``); a
line is a timeline on it. What a line holds is told by its name, the rule docs/formats/xplane.md
writes out: ``Stream #N...`` lines hold kernels, or copies/memsets when the name says
``Memcpy``/``Memset``; ``XLA Modules`` and ``XLA Ops`` lines hold XLA's modules and ops (on a
plane without stream lines, a TPU's, the XLA ops are the device's work: kernels); host lines
are threads, whose CUDA/HIP API calls are runtime calls and whose other events ops.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from gpuprofile.errors import TraceFormatError
from gpuprofile.importers.xplane_scopes import add_scopes, op_name
from gpuprofile.trace.links import with_nesting
from gpuprofile.trace.meta import RankMeta, Source, TraceMeta
from gpuprofile.trace.model import NO_ID, Trace, make_table

_DEVICE_PLANE = re.compile(r"^/device:(GPU|TPU):(\d+)$")
_HOST_PLANE = "/host:CPU"
_TASK_PLANE = "Task Environment"
_STREAM = re.compile(r"^Stream #(\d+)")
_RUNTIME_CALL = re.compile(r"^(cuda[A-Z_]|cu[A-Z]|hip[A-Z]|hsa_|nccl[A-Z])")
_MEMORY_EVENTS = ("MemoryAllocation", "MemoryDeallocation")
_COPY_KINDS = {"H2D": "HtoD", "D2H": "DtoH", "D2D": "DtoD", "P2P": "PtoP", "H2H": "HtoH"}
# Stats XLA writes from its cost analysis (per op, not counted by hardware), first found wins.
FLOPS_STATS = ("flops", "model_flops")
BYTES_STATS = ("bytes_accessed", "raw_bytes_accessed")
# Line timestamps below this are relative to the profile's start (JAX normalises them); above
# it they are absolute epoch nanoseconds (1973 onwards).
_ABSOLUTE_NS = 10**17
# The ops lane of device N's XLA modules and ops: negative, apart from the host's pid 0.
HOST_PID = 0


def device_pid(ordinal: int) -> int:
    return -(ordinal + 1)


def space_trace(space: Any, file: Path) -> Trace:
    """The Trace of one XSpace read from ``file`` (one host: rank 0)."""
    planes = list(space.planes)
    if not planes:
        raise TraceFormatError(file, "not a valid XPlane protobuf (it holds no planes)")
    rows: dict[str, list[dict[str, Any]]] = {
        t: [] for t in ("ops", "kernels", "memcpy", "memset", "runtime")
    }
    devices: list[dict[str, Any]] = []
    thread_names: dict[str, str] = {}
    skipped: Counter[str] = Counter()
    start_time = None
    named: list[tuple[dict[str, Any], int, str]] = []  # kernels with a JAX op name
    for plane in planes:
        match = _DEVICE_PLANE.match(plane.name)
        if match:
            ordinal = int(match.group(2))
            devices.append(_device(plane, match.group(1), ordinal))
            _read_device(plane, ordinal, rows, thread_names, skipped, named)
        elif plane.name == _HOST_PLANE:
            _read_host(plane, rows, thread_names, skipped)
        elif plane.name == _TASK_PLANE:
            start_time = dict(plane.stats).get("profile_start_time")
        else:
            skipped[f"plane {plane.name}"] += sum(1 for line in plane.lines for _ in line.events)
    add_scopes(rows, named, thread_names)
    notes = []
    if not devices:
        notes.append(
            f"{file.name} holds no /device:GPU or /device:TPU plane: a host-only profile, "
            "with no device activity to show."
        )
    starts = [row["start_ns"] for table in rows.values() for row in table]
    first = min(starts) if starts else 0
    base = start_time if isinstance(start_time, int) and 0 < first < _ABSOLUTE_NS else 0
    tables = {name: _table(name, table, first) for name, table in rows.items()}
    tables["ops"] = with_nesting(tables["ops"])
    facts = RankMeta(
        devices=tuple(sorted(devices, key=lambda d: int(d["id"]))),
        thread_names=thread_names,
        files=(str(file),),
        skipped={what: count for what, count in skipped.items() if count},
        host_name=file.name.removesuffix(".xplane.pb") or None,
    )
    meta = TraceMeta(
        source=Source(format="xplane", path=str(file), files=(str(file),)),
        origin_ns=base + first,
        ranks={0: facts},
        notes=tuple(notes),
    )
    return Trace(**tables, meta=meta)


def _device(plane: Any, kind: str, ordinal: int) -> dict[str, Any]:
    """A device's summary from its plane's stats (the device capabilities XLA records)."""
    props = {str(k): v for k, v in plane.stats}
    named = props.get("device_type_string") or props.get("devtype") or props.get("device_name")
    name = str(named or props.get("device_vendor") or kind)
    major, minor = props.get("compute_cap_major"), props.get("compute_cap_minor")
    device: dict[str, Any] = {"id": ordinal, "name": name, "properties": props}
    if isinstance(props.get("memory_size"), int):
        device["memory_bytes"] = props["memory_size"]
    if isinstance(props.get("core_count"), int):
        device["sm_count"] = props["core_count"]
    if isinstance(major, int) and isinstance(minor, int):
        device["compute_capability"] = f"{major}.{minor}"
    return device


def line_kind(name: str, plane_has_streams: bool) -> str | None:
    """The table a device line's events go to (``xla_module``/``xla_op``: ops of that
    category); None for lines not read (steps, source code, framework scopes, ...)."""
    if name == "XLA Modules":
        return "xla_module"
    if name == "XLA Ops":
        return "xla_op" if plane_has_streams else "kernels"
    if _STREAM.match(name):
        lowered = name.lower()
        if "memcpy" in lowered:
            return "memcpy"
        if "memset" in lowered:
            return "memset"
        return "kernels"
    return None


def _read_device(
    plane: Any,
    ordinal: int,
    rows: dict[str, list[dict[str, Any]]],
    thread_names: dict[str, str],
    skipped: Counter[str],
    named: list[tuple[dict[str, Any], int, str]],
) -> None:
    lines = list(plane.lines)
    has_streams = any(_STREAM.match(line.name) for line in lines)
    for index, line in enumerate(lines):
        kind = line_kind(line.name, has_streams)
        events = list(line.events)
        if kind is None:
            skipped[f"line {line.name}"] += len(events)
            continue
        stream_match = _STREAM.match(line.name)
        stream = int(stream_match.group(1)) if stream_match else index
        if kind in ("xla_module", "xla_op"):
            pid = device_pid(ordinal)
            thread_names[f"{pid}/0"] = f"{plane.name} XLA"
            rows["ops"].extend(_op(e, kind, pid, 0) for e in events)
        elif kind == "kernels":
            for event in events:
                row = _kernel(event, ordinal, stream)
                rows["kernels"].append(row)
                if (name := op_name(dict(event.stats))) is not None:
                    named.append((row, device_pid(ordinal), name))
        else:
            rows[kind].extend(_copy(e, kind, ordinal, stream, line.name) for e in events)


def _read_host(
    plane: Any,
    rows: dict[str, list[dict[str, Any]]],
    thread_names: dict[str, str],
    skipped: Counter[str],
) -> None:
    for tid, line in enumerate(plane.lines):
        thread_names[f"{HOST_PID}/{tid}"] = line.name
        for event in line.events:
            name = event.name
            if name in _MEMORY_EVENTS:
                skipped["host allocator events"] += 1
            elif _RUNTIME_CALL.match(name):
                stats = dict(event.stats)
                row = _timed(event)
                row.update(
                    pid=HOST_PID,
                    tid=tid,
                    category="cuda_runtime",
                    correlation=_int(stats.get("correlation_id")),
                )
                rows["runtime"].append(row)
            else:
                category = "python_function" if name.startswith("$") else "user_annotation"
                rows["ops"].append(_op(event, category, HOST_PID, tid))


def _timed(event: Any) -> dict[str, Any]:
    return {
        "name": event.name,
        "start_ns": round(event.start_ns),
        "dur_ns": max(round(event.duration_ns), 0),
    }


def _op(event: Any, category: str, pid: int, tid: int) -> dict[str, Any]:
    row = _timed(event)
    row.update(pid=pid, tid=tid, category=category, flops=_first(event, FLOPS_STATS))
    return row


def _kernel(event: Any, device: int, stream: int) -> dict[str, Any]:
    stats = dict(event.stats)
    row = _timed(event)
    row.update(
        device=device,
        stream=stream,
        correlation=_int(stats.get("correlation_id")),
        flops=_number(stats, FLOPS_STATS),
        bytes=_number(stats, BYTES_STATS),
    )
    details = _details(stats.get("kernel_details"))
    for axis, value in zip("xyz", _triple(details.get("grid")), strict=True):
        row[f"grid_{axis}"] = value
    for axis, value in zip("xyz", _triple(details.get("block")), strict=True):
        row[f"block_{axis}"] = _narrow(value)
    row["registers_per_thread"] = _narrow(_int(details.get("regs")))
    shared = [_int(details.get(k)) for k in ("static_shared", "dynamic_shared", "group_mem")]
    known = [s for s in shared if s != NO_ID]
    row["shared_memory"] = sum(known) if known else NO_ID
    occupancy = _float(details.get("occ_pct"))
    # ROCm writes occ_pct:0 on every launch: not measured.
    row["occupancy"] = occupancy if occupancy and occupancy > 0 else np.nan
    return row


def _copy(event: Any, kind: str, device: int, stream: int, line_name: str) -> dict[str, Any]:
    stats = dict(event.stats)
    details = _details(stats.get("memcpy_details") or stats.get("memset_details"))
    row = _timed(event)
    size = _int(details.get("size"))
    if size == NO_ID:
        size = _int(stats.get("bytes") if stats.get("bytes") is not None else stats.get("size"))
    row.update(
        device=device,
        stream=stream,
        correlation=_int(stats.get("correlation_id")),
        bytes=max(size, 0),
    )
    if kind == "memcpy":
        named = next((v for k, v in _COPY_KINDS.items() if k in line_name), None)
        written = str(details.get("kind", ""))
        row["kind"] = named or (written if written in _COPY_KINDS.values() else "unknown")
    return row


def _details(text: Any) -> dict[str, str]:
    """XPlane's ``kernel_details``/``memcpy_details``: ``key:value`` words."""
    if not isinstance(text, str):
        return {}
    return dict(word.split(":", 1) for word in text.split() if ":" in word)


def _triple(text: str | None) -> list[int]:
    parts = (text or "").split(",")
    return [_int(p) for p in parts] if len(parts) == 3 else [NO_ID] * 3


def _int(value: Any) -> int:
    if isinstance(value, bool):
        return NO_ID
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return NO_ID


def _narrow(value: int) -> int:
    """A value for an int32 column (block sizes, registers): NO_ID when it cannot be one."""
    return value if -(2**31) <= value < 2**31 else NO_ID


def _float(value: Any) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _number(stats: dict[str, Any], names: tuple[str, ...]) -> float:
    for name in names:
        value = stats.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return float("nan")


def _first(event: Any, names: tuple[str, ...]) -> float:
    return _number(dict(event.stats), names)


def _table(name: str, rows: list[dict[str, Any]], first: int) -> Any:
    """A table of rows (dicts of columns), times from ``first``, ids in row order."""
    if not rows:
        return make_table(name, {})
    columns: dict[str, Any] = {key: [row[key] for row in rows] for key in rows[0]}
    columns["start_ns"] = np.asarray(columns["start_ns"], np.int64) - first
    columns["rank"] = np.zeros(len(rows), np.int32)
    columns["id"] = np.arange(len(rows), dtype=np.int64)
    return make_table(name, columns)
