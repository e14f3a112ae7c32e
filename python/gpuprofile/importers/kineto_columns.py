"""Kineto events of one table -> typed column arrays for the Trace model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import numpy as np

from gpuprofile.importers.kineto_format import (
    NO_ARGS,
    OP_CATEGORY,
    Args,
    Event,
    exact_ns,
    split_counter_name,
)
from gpuprofile.trace.model import NO_ID


def _times(bucket: Sequence[Event], ts0: float) -> tuple[np.ndarray, np.ndarray]:
    ts = np.fromiter((e.ts for e in bucket), dtype=np.float64, count=len(bucket))
    dur = np.fromiter((e.dur or 0 for e in bucket), dtype=np.float64, count=len(bucket))
    return exact_ns(ts) - exact_ns(ts0), exact_ns(dur)


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


def _external_ids(args: Sequence[Args]) -> np.ndarray:
    return _ints(
        (a.external_id if a.external_id is not None else a.legacy_external_id for a in args),
        len(args),
    )


def op_columns(bucket: list[Event], ts0: float) -> dict[str, Any]:
    start, dur = _times(bucket, ts0)
    args = [e.args or NO_ARGS for e in bucket]
    return {
        "pid": np.fromiter((_as_id(e.pid) for e in bucket), np.int64, len(bucket)),
        "tid": np.fromiter((_as_id(e.tid) for e in bucket), np.int64, len(bucket)),
        "name": [e.name for e in bucket],
        "category": [OP_CATEGORY.get(e.cat, e.cat) for e in bucket],
        "start_ns": start,
        "dur_ns": dur,
        "external_id": _external_ids(args),
        "input_dims": [_raw_text(a.input_dims) or _raw_text(a.legacy_input_dims) for a in args],
        "input_types": [_raw_text(a.input_types) for a in args],
        "concrete_inputs": [_raw_text(a.concrete_inputs) for a in args],
        **comm_columns(args),
    }


# Bytes per element of the dtypes record_param_comms names (c10 ScalarType names).
_DTYPE_BYTES = {
    "Float": 4, "Double": 8, "Half": 2, "BFloat16": 2, "Int": 4, "Long": 8, "Short": 2,
    "Char": 1, "Byte": 1, "Bool": 1, "ComplexFloat": 8, "ComplexDouble": 16, "ComplexHalf": 4,
    "Float8_e4m3fn": 1, "Float8_e5m2": 1, "Float8_e4m3fnuz": 1, "Float8_e5m2fnuz": 1,
}  # fmt: skip


def comm_columns(args: Sequence[Args]) -> dict[str, Any]:
    """The communication facts of events whose args carry them (else "" and -1): the
    collective's name, process group, its ranks, sequence number and message bytes (the
    larger of the in and out messages, as nccl-tests size a collective)."""
    n = len(args)
    if not any(a.collective is not None for a in args):
        return {}
    return {
        "collective": [_text(a.collective) for a in args],
        "process_group": [_text(a.process_group) for a in args],
        "group_ranks": [_text(a.group_ranks) for a in args],
        "seq": _ints((_int_or_none(a.seq) for a in args), n),
        "comm_bytes": _ints((_message_bytes(a) for a in args), n),
    }


def _text(value: Any) -> str:
    return "" if value is None or isinstance(value, dict | list) else str(value)


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    try:
        number = int(value)
    except ValueError:
        return None
    return number if 0 <= number < 2**62 else None


def _message_bytes(a: Args) -> int | None:
    size = _DTYPE_BYTES.get(_text(a.dtype))
    elems = [e for e in (_int_or_none(a.in_elems), _int_or_none(a.out_elems)) if e is not None]
    if size is None or not elems:
        return None
    return max(elems) * size


def _raw_text(raw: msgspec.Raw) -> str | None:
    return bytes(raw).decode() if raw else None


def _gpu_columns(bucket: list[Event], ts0: float) -> tuple[dict[str, Any], list[Args]]:
    start, dur = _times(bucket, ts0)
    args = [e.args or NO_ARGS for e in bucket]
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


def gpu_annotation_columns(bucket: list[Event], ts0: float) -> dict[str, Any]:
    """gpu_user_annotation events: Kineto writes no device or stream args on them, only the
    GPU lane they sit on (pid = device, tid = stream)."""
    columns, _ = _gpu_columns(bucket, ts0)
    del columns["correlation"]
    return columns


def kernel_columns(bucket: list[Event], ts0: float) -> dict[str, Any]:
    columns, args = _gpu_columns(bucket, ts0)
    n = len(bucket)
    for key in ("grid", "block"):
        for axis, letter in enumerate("xyz"):
            columns[f"{key}_{letter}"] = _ints((_dim(getattr(a, key), axis) for a in args), n)
    columns["registers_per_thread"] = _ints((a.registers_per_thread for a in args), n)
    columns["shared_memory"] = _ints((a.shared_memory for a in args), n)
    columns["occupancy"] = _floats((a.occupancy for a in args), n)
    columns["blocks_per_sm"] = _floats((a.blocks_per_sm for a in args), n)
    columns.update(comm_columns(args))
    return columns


def _dim(dims: list[int] | str | None, axis: int) -> int | None:
    return dims[axis] if isinstance(dims, list) and len(dims) > axis else None


def _bytes_of(args: Sequence[Args]) -> np.ndarray:
    return _ints((_as_id(a.bytes) for a in args), len(args))


def memcpy_columns(bucket: list[Event], ts0: float) -> dict[str, Any]:
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


def memset_columns(bucket: list[Event], ts0: float) -> dict[str, Any]:
    columns, args = _gpu_columns(bucket, ts0)
    columns["bytes"] = _bytes_of(args)
    return columns


def runtime_columns(bucket: list[Event], ts0: float) -> dict[str, Any]:
    start, dur = _times(bucket, ts0)
    args = [e.args or NO_ARGS for e in bucket]
    n = len(bucket)
    return {
        "pid": np.fromiter((_as_id(e.pid) for e in bucket), np.int64, n),
        "tid": np.fromiter((_as_id(e.tid) for e in bucket), np.int64, n),
        "name": [e.name for e in bucket],
        "category": [OP_CATEGORY.get(e.cat, e.cat) for e in bucket],
        "start_ns": start,
        "dur_ns": dur,
        "correlation": _ints((a.correlation for a in args), n),
        "external_id": _external_ids(args),
    }


def counter_columns(bucket: list[Event], ts0: float) -> dict[str, Any]:
    """Counter samples ("ph": "C" with a numeric args.value; the series' device is its id)."""
    start, _ = _times(bucket, ts0)
    names = [split_counter_name(e.name) for e in bucket]
    return {
        "time_ns": start,
        "name": [name for name, _ in names],
        "unit": [unit for _, unit in names],
        "device": np.fromiter(
            (_as_id(e.id) if isinstance(e.id, int | str) else NO_ID for e in bucket),
            np.int64,
            len(bucket),
        ),
        "value": _floats(((e.args or NO_ARGS).value for e in bucket), len(bucket)),
    }


def memory_columns(bucket: list[Event], ts0: float) -> dict[str, Any]:
    start, _ = _times(bucket, ts0)
    args = [e.args or NO_ARGS for e in bucket]
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
