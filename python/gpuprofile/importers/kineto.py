"""PyTorch profiler / Kineto Chrome-trace JSON (also written by vLLM, HTA's tests, TraceLens, ...).

msgspec decodes only the fields we use into typed structs, so a trace is never materialised as
Python dicts; unknown keys are skipped by the decoder. Every variant seen in the wild maps onto
the same tables: old capitalized categories (``Kernel``, ``Runtime``, ``Operator``), top-level
list documents, ``computeProperties``, absolute and ``baseTimeNanoseconds``-relative time, int
and float ``ts``, AMD/HIP names, and CUPTI range-profiler traces (which hold no kernel timeline).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pandas as pd

from gpuprofile.errors import TraceFormatError
from gpuprofile.importers.source import locate, read_trace_bytes, trace_files
from gpuprofile.trace.model import NO_ID, SCHEMA, Trace, make_table
from gpuprofile.trace.nesting import nest


class _Args(msgspec.Struct, gc=False):
    external_id: int | None = msgspec.field(name="External id", default=None)
    legacy_external_id: int | None = msgspec.field(name="external id", default=None)
    correlation: int | None = None
    device: int | None = None
    stream: int | str | None = None
    bytes: int | str | None = None
    input_dims: msgspec.Raw = msgspec.field(name="Input Dims", default=msgspec.Raw())
    legacy_input_dims: msgspec.Raw = msgspec.field(name="Input dims", default=msgspec.Raw())
    input_types: msgspec.Raw = msgspec.field(name="Input type", default=msgspec.Raw())
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


_NO_ARGS = _Args()


class _Event(msgspec.Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: int | float | None = None
    dur: int | float | None = None
    args: _Args | None = None


class _Document(msgspec.Struct, gc=False):
    traceEvents: list[_Event]
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


# Kineto category -> our table; old (2020-2021) traces capitalize categories.
_TABLE_OF_CATEGORY = {
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
_OP_CATEGORY = {"Operator": "cpu_op"}
_FLOW_PHASES = frozenset("sftbe")
_DOCUMENT_DECODER = msgspec.json.Decoder(_Document)
_LIST_DECODER = msgspec.json.Decoder(list[_Event])


def load_kineto(path: str | Path) -> Trace:
    """Read one Kineto trace file, or a directory holding one file per rank, into a Trace."""
    path = Path(path)
    if path.is_dir():
        ranks = [_read_rank(p) for p in trace_files(path)]
        _assign_ranks(path, ranks)
    else:
        ranks = [_read_rank(path)]
        ranks[0].rank = ranks[0].declared_rank if ranks[0].declared_rank is not None else 0
    return _merge(ranks, str(path))


@dataclass
class _RankTables:
    path: Path
    declared_rank: int | None
    origin_ns: int  # absolute start of this file's first event
    columns: dict[str, dict[str, Any]]
    meta: dict[str, Any]
    rank: int = 0
    thread_names: dict[str, str] = field(default_factory=dict)


def _decode(path: Path) -> _Document:
    raw = read_trace_bytes(path)
    head = raw.lstrip()[:1]
    try:
        if head == b"[":
            return _Document(traceEvents=_LIST_DECODER.decode(raw))
        if head != b"{":
            raise TraceFormatError(path, "not JSON text (does not start with '{' or '[')")
        return _DOCUMENT_DECODER.decode(raw)
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


def _read_rank(path: Path) -> _RankTables:
    doc = _decode(path)
    events = doc.traceEvents
    buckets: dict[str, list[_Event]] = {t: [] for t in ("ops", "kernels", "memcpy", "memset")}
    buckets["runtime"] = []
    memory: list[_Event] = []
    thread_names: dict[str, str] = {}
    skipped: Counter[str] = Counter()
    table_of = _TABLE_OF_CATEGORY
    for event in events:
        ph = event.ph
        if ph == "X":
            table = table_of.get(event.cat)
            if table is not None:
                buckets[table].append(event)
            else:
                skipped[event.cat or "(no category)"] += 1
        elif ph in ("i", "I"):
            if event.name == "[memory]":
                memory.append(event)
            else:
                skipped[f"instant {event.name}"] += 1
        elif ph == "M":
            if event.name == "thread_name" and event.args is not None and event.args.name:
                thread_names[f"{event.pid}/{event.tid}"] = event.args.name
        elif ph not in _FLOW_PHASES:
            skipped[f"phase {ph or '(none)'}"] += 1

    for table, bucket in (*buckets.items(), ("memory", memory)):
        _require_times(path, events, bucket, needs_dur=table != "memory")
    starts = [float(e.ts) for b in (*buckets.values(), memory) for e in b]  # type: ignore[arg-type]
    ts0 = min(starts) if starts else 0.0
    base = doc.baseTimeNanoseconds or 0

    columns = {
        "ops": _op_columns(buckets["ops"], ts0),
        "kernels": _kernel_columns(buckets["kernels"], ts0),
        "memcpy": _memcpy_columns(buckets["memcpy"], ts0),
        "memset": _memset_columns(buckets["memset"], ts0),
        "runtime": _runtime_columns(buckets["runtime"], ts0),
        "memory": _memory_columns(memory, ts0),
    }
    devices = doc.deviceProperties or doc.computeProperties or []
    meta = {
        "schema_version": doc.schemaVersion,
        "devices": [_device_summary(d) for d in devices],
        "distributed": doc.distributedInfo,
        "record_shapes": bool(doc.record_shapes),
        "profile_memory": bool(doc.profile_memory),
        "with_stack": bool(doc.with_stack),
        "versions": {
            k: v
            for k, v in (
                ("cupti", doc.cupti_version),
                ("cuda_runtime", doc.cuda_runtime_version),
                ("cuda_driver", doc.cuda_driver_version),
                ("roctracer", doc.roctracer_version),
                ("hip_runtime", doc.hip_runtime_version),
            )
            if v is not None
        },
        "skipped": dict(skipped),
    }
    declared = (doc.distributedInfo or {}).get("rank")
    return _RankTables(
        path=path,
        declared_rank=int(declared) if isinstance(declared, int | str) else None,
        # Via the float's shortest decimal form: ts0 * 1000 would round away nanoseconds.
        origin_ns=base + round(Decimal(repr(ts0)) * 1000),
        columns=columns,
        meta=meta,
        thread_names=thread_names,
    )


def _require_times(
    path: Path, events: Sequence[_Event], bucket: Sequence[_Event], needs_dur: bool
) -> None:
    for e in bucket:
        if e.ts is None or (needs_dur and e.dur is None):
            missing = "ts" if e.ts is None else "dur"
            index = next(i for i, candidate in enumerate(events) if candidate is e)
            raise TraceFormatError(
                path,
                f"traceEvents[{index}] ({e.cat or 'no category'} {e.name!r}) lacks required "
                f"field '{missing}'",
            )


def _times(bucket: Sequence[_Event], ts0: float) -> tuple[np.ndarray, np.ndarray]:
    # Subtracting ts0 in microseconds first keeps nanosecond precision for absolute timestamps.
    ts = np.fromiter((e.ts for e in bucket), dtype=np.float64, count=len(bucket))
    dur = np.fromiter((e.dur or 0 for e in bucket), dtype=np.float64, count=len(bucket))
    return np.rint((ts - ts0) * 1000).astype(np.int64), np.rint(dur * 1000).astype(np.int64)


def _ints(values: Any, n: int) -> np.ndarray:
    return np.fromiter(((NO_ID if v is None else v) for v in values), dtype=np.int64, count=n)


def _floats(values: Any, n: int) -> np.ndarray:
    return np.fromiter(((np.nan if v is None else v) for v in values), dtype=np.float64, count=n)


def _as_id(value: int | str | None) -> int:
    """Streams, pids and tids are sometimes strings ("stream 7", "4093687616")."""
    if value is None:
        return NO_ID
    if isinstance(value, int):
        return value
    digits = value.rsplit(" ", 1)[-1]
    return int(digits) if digits.lstrip("-").isdigit() else NO_ID


def _external_ids(args: Sequence[_Args]) -> np.ndarray:
    return _ints(
        (a.external_id if a.external_id is not None else a.legacy_external_id for a in args),
        len(args),
    )


def _op_columns(bucket: list[_Event], ts0: float) -> dict[str, Any]:
    start, dur = _times(bucket, ts0)
    args = [e.args or _NO_ARGS for e in bucket]
    return {
        "pid": np.fromiter((_as_id(e.pid) for e in bucket), np.int64, len(bucket)),
        "tid": np.fromiter((_as_id(e.tid) for e in bucket), np.int64, len(bucket)),
        "name": [e.name for e in bucket],
        "category": [_OP_CATEGORY.get(e.cat, e.cat) for e in bucket],
        "start_ns": start,
        "dur_ns": dur,
        "external_id": _external_ids(args),
        "input_dims": [_raw_text(a.input_dims) or _raw_text(a.legacy_input_dims) for a in args],
        "input_types": [_raw_text(a.input_types) for a in args],
    }


def _raw_text(raw: msgspec.Raw) -> str | None:
    return bytes(raw).decode() if raw else None


def _gpu_columns(bucket: list[_Event], ts0: float) -> tuple[dict[str, Any], list[_Args]]:
    start, dur = _times(bucket, ts0)
    args = [e.args or _NO_ARGS for e in bucket]
    n = len(bucket)
    device = _ints((a.device for a in args), n)
    # Legacy traces carry the device only as the process id of the GPU lane.
    pids = np.fromiter((_as_id(e.pid) for e in bucket), np.int64, n)
    device = np.where(device == NO_ID, pids, device)
    stream = np.fromiter(
        (_as_id(a.stream) if a.stream is not None else _as_id(e.tid) for a, e in zip(args, bucket)),
        np.int64,
        n,
    )
    return {
        "device": device,
        "stream": stream,
        "name": [e.name for e in bucket],
        "start_ns": start,
        "dur_ns": dur,
        "correlation": _ints((a.correlation for a in args), n),
        "external_id": _external_ids(args),
    }, args


def _kernel_columns(bucket: list[_Event], ts0: float) -> dict[str, Any]:
    columns, args = _gpu_columns(bucket, ts0)
    n = len(bucket)
    for key in ("grid", "block"):
        for axis, letter in enumerate("xyz"):
            columns[f"{key}_{letter}"] = _ints((_dim(getattr(a, key), axis) for a in args), n)
    columns["registers_per_thread"] = _ints((a.registers_per_thread for a in args), n)
    columns["shared_memory"] = _ints((a.shared_memory for a in args), n)
    columns["occupancy"] = _floats((a.occupancy for a in args), n)
    columns["blocks_per_sm"] = _floats((a.blocks_per_sm for a in args), n)
    return columns


def _dim(dims: list[int] | str | None, axis: int) -> int | None:
    return dims[axis] if isinstance(dims, list) and len(dims) > axis else None


def _bytes_of(args: Sequence[_Args]) -> np.ndarray:
    return _ints((_as_id(a.bytes) for a in args), len(args))


def _memcpy_columns(bucket: list[_Event], ts0: float) -> dict[str, Any]:
    columns, args = _gpu_columns(bucket, ts0)
    columns["kind"] = [_memcpy_kind(e.name) for e in bucket]
    columns["pinned"] = np.fromiter(("Pinned" in e.name for e in bucket), bool, len(bucket))
    columns["bytes"] = _bytes_of(args)
    return columns


def _memcpy_kind(name: str) -> str:
    # "Memcpy HtoD (Pinned -> Device)"; AMD writes the same names.
    parts = name.split(" ", 2)
    if len(parts) >= 2 and parts[0] == "Memcpy" and parts[1] in _MEMCPY_KINDS:
        return parts[1]
    return "unknown"


_MEMCPY_KINDS = frozenset(("HtoD", "DtoH", "DtoD", "HtoH", "PtoP"))


def _memset_columns(bucket: list[_Event], ts0: float) -> dict[str, Any]:
    columns, args = _gpu_columns(bucket, ts0)
    columns["bytes"] = _bytes_of(args)
    return columns


def _runtime_columns(bucket: list[_Event], ts0: float) -> dict[str, Any]:
    start, dur = _times(bucket, ts0)
    args = [e.args or _NO_ARGS for e in bucket]
    n = len(bucket)
    return {
        "pid": np.fromiter((_as_id(e.pid) for e in bucket), np.int64, n),
        "tid": np.fromiter((_as_id(e.tid) for e in bucket), np.int64, n),
        "name": [e.name for e in bucket],
        "category": [_OP_CATEGORY.get(e.cat, e.cat) for e in bucket],
        "start_ns": start,
        "dur_ns": dur,
        "correlation": _ints((a.correlation for a in args), n),
        "external_id": _external_ids(args),
    }


def _memory_columns(bucket: list[_Event], ts0: float) -> dict[str, Any]:
    start, _ = _times(bucket, ts0)
    args = [e.args or _NO_ARGS for e in bucket]
    n = len(bucket)
    return {
        "time_ns": start,
        "pid": np.fromiter((_as_id(e.pid) for e in bucket), np.int64, n),
        "tid": np.fromiter((_as_id(e.tid) for e in bucket), np.int64, n),
        # Device Type 0 is the CPU: report host memory as device -1.
        "device": _ints((a.device_id if a.device_type not in (None, 0) else -1 for a in args), n),
        "bytes": _ints((a.alloc_bytes for a in args), n),
        "total_allocated": _ints((a.total_allocated for a in args), n),
        "total_reserved": _ints((a.total_reserved for a in args), n),
    }


def _device_summary(props: dict[str, Any]) -> dict[str, Any]:
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


def _assign_ranks(directory: Path, ranks: list[_RankTables]) -> None:
    declared = [r.declared_rank for r in ranks]
    if all(d is not None for d in declared):
        seen: dict[int, Path] = {}
        for r in ranks:
            assert r.declared_rank is not None
            if r.declared_rank in seen:
                raise TraceFormatError(
                    directory,
                    f"rank {r.declared_rank} appears twice: {seen[r.declared_rank].name} and "
                    f"{r.path.name}",
                )
            seen[r.declared_rank] = r.path
            r.rank = r.declared_rank
    else:
        # Without distributedInfo the file order (sorted names) is the rank order.
        for index, r in enumerate(ranks):
            r.rank = index


def _merge(ranks: list[_RankTables], source_path: str) -> Trace:
    origin = min(r.origin_ns for r in ranks)
    tables: dict[str, pd.DataFrame] = {}
    for table in ("ops", "kernels", "memcpy", "memset", "runtime", "memory"):
        parts = []
        for r in ranks:
            columns = dict(r.columns[table])
            shift = r.origin_ns - origin
            time_key = "time_ns" if table == "memory" else "start_ns"
            columns[time_key] = columns[time_key] + shift
            n = len(columns[time_key])
            columns["rank"] = np.full(n, r.rank, dtype=np.int32)
            parts.append(columns)
        merged = {k: _concat([p[k] for p in parts]) for k in parts[0]}
        n = len(merged["rank"])
        if "id" in SCHEMA[table]:
            merged["id"] = np.arange(n, dtype=np.int64)
        tables[table] = make_table(table, merged)
    tables["ops"] = _with_nesting(tables["ops"])
    tables["kernels"]["op_id"] = _launching_ops(tables["ops"], tables["runtime"], tables["kernels"])
    meta = {
        "source": {"format": "kineto", "path": source_path, "files": [str(r.path) for r in ranks]},
        "origin_ns": origin,
        "ranks": {
            r.rank: {**r.meta, "file": str(r.path), "thread_names": r.thread_names} for r in ranks
        },
    }
    return Trace(**tables, meta=meta)


def _concat(parts: list[Any]) -> Any:
    if len(parts) == 1:
        return parts[0]
    if isinstance(parts[0], np.ndarray):
        return np.concatenate(parts)
    return [v for p in parts for v in p]


def _with_nesting(ops: pd.DataFrame) -> pd.DataFrame:
    """Fill parent and depth: each op's innermost enclosing op on the same thread."""
    if ops.empty:
        return ops
    (thread_code,) = _thread_codes(ops)
    start = ops["start_ns"].to_numpy()
    parent_pos, depth = nest(thread_code, start, start + ops["dur_ns"].to_numpy())
    ids = ops["id"].to_numpy()
    ops = ops.copy()
    ops["parent"] = np.where(parent_pos == NO_ID, NO_ID, ids[np.maximum(parent_pos, 0)])
    ops["depth"] = depth
    return ops


def _thread_codes(*frames: pd.DataFrame) -> list[np.ndarray]:
    """One integer per (rank, pid, tid), consistent across the given tables."""
    keys = pd.concat([f[["rank", "pid", "tid"]] for f in frames], ignore_index=True)
    codes = keys.groupby(["rank", "pid", "tid"], sort=False).ngroup().to_numpy()
    out, at = [], 0
    for f in frames:
        out.append(codes[at : at + len(f)])
        at += len(f)
    return out


def _launching_ops(ops: pd.DataFrame, runtime: pd.DataFrame, kernels: pd.DataFrame) -> np.ndarray:
    """Kernel -> runtime call with its correlation id -> innermost aten op around that call.

    The runtime call's own "External id" is not reliably the op's across Kineto versions, but
    the call always runs inside the op that launched it, on the same thread.
    """
    cpu_ops = ops[ops["category"] == "cpu_op"]
    if kernels.empty or cpu_ops.empty:
        return np.full(len(kernels), NO_ID, np.int64)
    op_thread, call_thread = _thread_codes(cpu_ops, runtime)
    op_start = cpu_ops["start_ns"].to_numpy()
    call_start = runtime["start_ns"].to_numpy()
    parent, _ = nest(
        np.concatenate([op_thread, call_thread]),
        np.concatenate([op_start, call_start]),
        np.concatenate(
            [op_start + cpu_ops["dur_ns"].to_numpy(), call_start + runtime["dur_ns"].to_numpy()]
        ),
    )
    # A call nested in another call (cudaLaunchKernel inside cuLaunchKernel) climbs to an op.
    n_ops = len(cpu_ops)
    call_parent = parent[n_ops:]
    while (climb := call_parent >= n_ops).any():
        call_parent = np.where(climb, parent[np.where(climb, call_parent, 0)], call_parent)
    op_ids = cpu_ops["id"].to_numpy()
    launcher = np.where(call_parent == NO_ID, NO_ID, op_ids[np.clip(call_parent, 0, None)])
    op_of_call = dict(
        zip(zip(runtime["rank"].tolist(), runtime["correlation"].tolist()), launcher.tolist())
    )
    # Without a correlated runtime call (trimmed traces), fall back to the external id.
    op_of_external = dict(
        zip(zip(cpu_ops["rank"].tolist(), cpu_ops["external_id"].tolist()), op_ids.tolist())
    )
    return np.fromiter(
        (
            op_of_call.get((rank, corr), NO_ID)
            if (rank, corr) in op_of_call
            else op_of_external.get((rank, ext), NO_ID)
            for rank, corr, ext in zip(
                kernels["rank"].tolist(),
                kernels["correlation"].tolist(),
                kernels["external_id"].tolist(),
            )
        ),
        np.int64,
        len(kernels),
    )
