"""The event tables of an Nsight Systems export -> typed column arrays for the Trace model.

Each function returns the columns of one of our tables (times still on nsys's clock, in ns from
the session start) and the process id of each row; ``nsys.py`` numbers the processes as ranks
and moves the times to the trace's own start.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import numpy as np
import pandas as pd

from gpuprofile.errors import TraceFormatError
from gpuprofile.importers.nsys_autonvtx import autonvtx_modules
from gpuprofile.importers.nsys_nvtx import torch_nvtx
from gpuprofile.importers.nsys_schema import NsysDatabase
from gpuprofile.trace.model import NO_ID

KERNEL_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY_TABLE = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET_TABLE = "CUPTI_ACTIVITY_KIND_MEMSET"
RUNTIME_TABLE = "CUPTI_ACTIVITY_KIND_RUNTIME"
SYNC_TABLE = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
NVTX_TABLE = "NVTX_EVENTS"
THREAD_NAMES_TABLE = "ThreadNames"

# nsys counts from the session's start; a time past a year of it is damage, not a session.
_MAX_TIME_NS = 365 * 24 * 3600 * 10**9
# Columns read as they are.
Columns = dict[str, Any]
_GPU_COLUMNS = ("start", "end", "deviceId", "streamId", "correlationId", "globalPid")

# CUPTI's values, for exports without ENUM_* tables (schema 2.x); the enums, where present,
# decide (their ids are CUPTI's enum values).
_COPY_KINDS = {1: "HtoD", 2: "DtoH", 8: "DtoD", 9: "HtoH", 10: "PtoP", 11: "HtoD", 12: "DtoH"}
_COPY_KIND_NAMES = {
    "HTOD": "HtoD", "DTOH": "DtoH", "DTOD": "DtoD", "HTOH": "HtoH", "PTOP": "PtoP",
    "UVM_HTOD": "HtoD", "UVM_DTOH": "DtoH", "UVM_DTOD": "DtoD",
}  # fmt: skip
_MEMORY_KINDS = {
    0: "Pageable", 1: "Pinned", 2: "Device", 3: "Array", 4: "Managed", 5: "Device Static",
    6: "Managed Static",
}  # fmt: skip
_PINNED = "Pinned"
# ENUM_NSYS_EVENT_CLASS: the CUDA runtime and driver API call records. Class 67 (and its
# start/finish, 68 and 69) are "CUDA backtrace" records: a second row of the same call (same
# correlation id) that carries its call stack; read, they would count every such call twice.
_RUNTIME_CLASSES = {0: "cuda_runtime", 1: "cuda_driver"}
_RUNTIME_CLASS_NAMES = {
    "TRACE_PROCESS_EVENT_CUDA_RUNTIME": "cuda_runtime",
    "TRACE_PROCESS_EVENT_CUDA_DRIVER": "cuda_driver",
}
# ENUM_NSYS_EVENT_TYPE: NVTX push/pop and start/end ranges (and their NVTXT file twins).
_NVTX_RANGES = {59: "NvtxPushPopRange", 60: "NvtxStartEndRange", 70: "NvtxtPushPopRange",
                71: "NvtxtStartEndRange"}  # fmt: skip
# CUPTI appends the API version it intercepted to a call's name (cudaLaunchKernel_v7000);
# Kineto and the analyses use the function's name. Driver names that end in _v2 are real
# function names (cuMemAlloc_v2) and keep it.
_API_VERSION = re.compile(r"_v\d{4,}$")


def process_of(global_id: pd.Series) -> np.ndarray:
    """The OS process id in an nsys globalPid / globalTid (bits 24..47)."""
    return (_ints(global_id) >> 24) & 0xFFFFFF


def thread_of(global_tid: pd.Series) -> np.ndarray:
    """The OS thread id in an nsys globalTid (its low 24 bits)."""
    return _ints(global_tid) & 0xFFFFFF


def kernel_columns(db: NsysDatabase, skipped: Counter[str]) -> tuple[Columns, np.ndarray]:
    """Kernels: demangled names, launch configuration, shared memory (static + dynamic);
    records without a usable time are counted in ``skipped``."""
    wanted = (
        *_GPU_COLUMNS, "demangledName", "shortName", "registersPerThread", "gridX", "gridY",
        "gridZ", "blockX", "blockY", "blockZ", "staticSharedMemory", "dynamicSharedMemory",
    )  # fmt: skip
    rows, columns, pid = _gpu_rows(db, KERNEL_TABLE, wanted, skipped)
    strings = db.strings()
    name_ids = rows["demangledName"] if "demangledName" in rows else rows.get("shortName")
    if name_ids is None:
        raise _lacks(db, KERNEL_TABLE, "demangledName")
    columns["name"] = [strings.get(int(i), f"[string {i}]") for i in _ints(name_ids)]
    for ours, theirs in (("grid", "grid"), ("block", "block")):
        for axis in "xyz":
            columns[f"{ours}_{axis}"] = _ints(rows.get(f"{theirs}{axis.upper()}"), len(rows))
    columns["registers_per_thread"] = _ints(rows.get("registersPerThread"), len(rows))
    static = _ints(rows.get("staticSharedMemory"), len(rows), missing=0)
    dynamic = _ints(rows.get("dynamicSharedMemory"), len(rows), missing=0)
    columns["shared_memory"] = static + dynamic
    return columns, pid


def memcpy_columns(db: NsysDatabase, skipped: Counter[str]) -> tuple[Columns, np.ndarray]:
    """Copies: kind, bytes, and whether the host side was pinned (named as Kineto names
    them, "Memcpy HtoD (Pageable -> Device)")."""
    rows, columns, pid = _gpu_rows(
        db, MEMCPY_TABLE, (*_GPU_COLUMNS, "bytes", "copyKind", "srcKind", "dstKind"), skipped
    )
    db.require(MEMCPY_TABLE, ("bytes", "copyKind"))
    kinds = _copy_kinds(db)
    memory = db.enum("ENUM_CUDA_MEM_KIND", "label") or _MEMORY_KINDS
    kind = [kinds.get(int(k), "unknown") for k in _ints(rows["copyKind"])]
    src = [memory.get(int(k), "Unknown") for k in _ints(rows.get("srcKind"), len(rows))]
    dst = [memory.get(int(k), "Unknown") for k in _ints(rows.get("dstKind"), len(rows))]
    host_side = [
        s if k == "HtoD" else d if k == "DtoH" else (s if s == d else "") if k == "HtoH" else ""
        for k, s, d in zip(kind, src, dst, strict=True)
    ]
    columns["kind"] = kind
    columns["name"] = [f"Memcpy {k} ({s} -> {d})" for k, s, d in zip(kind, src, dst, strict=True)]
    columns["pinned"] = np.array([h == _PINNED for h in host_side], dtype=bool)
    columns["bytes"] = _ints(rows["bytes"])
    return columns, pid


def memset_columns(db: NsysDatabase, skipped: Counter[str]) -> tuple[Columns, np.ndarray]:
    wanted = (*_GPU_COLUMNS, "bytes", "memKind")
    rows, columns, pid = _gpu_rows(db, MEMSET_TABLE, wanted, skipped)
    db.require(MEMSET_TABLE, ("bytes",))
    memory = db.enum("ENUM_CUDA_MEM_KIND", "label") or _MEMORY_KINDS
    kinds = _ints(rows.get("memKind"), len(rows), missing=2)
    columns["name"] = [f"Memset ({memory.get(int(k), 'Unknown')})" for k in kinds]
    columns["bytes"] = _ints(rows["bytes"])
    return columns, pid


def runtime_columns(db: NsysDatabase, skipped: Counter[str]) -> tuple[Columns, np.ndarray]:
    """CUDA runtime and driver calls, with the correlation id their kernels and copies carry;
    backtrace records are counted in ``skipped``."""
    db.require(RUNTIME_TABLE, ("start", "end", "correlationId"))
    rows = db.frame(
        RUNTIME_TABLE,
        ("start", "end", "eventClass", "globalTid", "correlationId", "nameId", "name"),
    )
    if "eventClass" in rows:
        classes = _runtime_classes(db)
        category = [classes.get(int(c)) for c in _ints(rows["eventClass"])]
        keep = np.array([c is not None for c in category], dtype=bool)
        if (dropped := int((~keep).sum())) > 0:
            skipped["CUDA backtrace records (second rows of runtime calls)"] += dropped
        rows = rows[keep].reset_index(drop=True)
        category = [c for c in category if c is not None]
    else:
        category = ["cuda_runtime"] * len(rows)
    timed = _timed(rows, RUNTIME_TABLE, skipped)
    rows = rows[timed].reset_index(drop=True)
    category = [c for c, keep in zip(category, timed, strict=True) if keep]
    columns = _times(rows)
    if "nameId" in rows:
        strings = db.strings()
        names = [strings.get(int(i), "") for i in _ints(rows["nameId"])]
    elif "name" in rows:
        names = [str(n or "") for n in rows["name"]]
    else:
        raise _lacks(db, RUNTIME_TABLE, "nameId")
    columns["name"] = [_API_VERSION.sub("", n) for n in names]
    columns["category"] = category
    columns["correlation"] = _ints(rows["correlationId"])
    columns["tid"] = thread_of(rows["globalTid"]) if "globalTid" in rows else _ids(len(rows))
    pid = process_of(rows["globalTid"]) if "globalTid" in rows else _ids(len(rows))
    columns["pid"] = pid
    return columns, pid


def nvtx_columns(db: NsysDatabase, skipped: Counter[str]) -> tuple[Columns, np.ndarray]:
    """NVTX push/pop and start/end ranges as ops of category "user_annotation" (torch's
    emit_nvtx and pyprof ranges read as ops, frames and module calls: nsys_nvtx.py; autonvtx's
    module ranges as module calls: nsys_autonvtx.py); marks,
    domain and thread-name records and ranges never closed are counted in ``skipped``."""
    db.require(NVTX_TABLE, ("start", "end", "eventType"))
    rows = db.frame(NVTX_TABLE, ("start", "end", "eventType", "text", "textId", "globalTid"))
    events = db.enum("ENUM_NSYS_EVENT_TYPE")
    ranges = (
        {i for i, name in events.items() if name in _NVTX_RANGES.values()}
        if events is not None
        else set(_NVTX_RANGES)
    )
    event_type = _ints(rows["eventType"])
    is_range = np.isin(event_type, list(ranges))
    closed = rows["end"].notna().to_numpy()
    for kind, count in Counter(event_type[~is_range].tolist()).items():
        label = (events or {}).get(kind, f"eventType {kind}")
        skipped[f"NVTX {label} records (not ranges)"] += count
    if (unclosed := int((is_range & ~closed).sum())) > 0:
        skipped["NVTX ranges never closed"] += unclosed
    rows = rows[is_range & closed].reset_index(drop=True)
    rows = rows[_timed(rows, NVTX_TABLE, skipped)].reset_index(drop=True)
    strings = db.strings() if "textId" in rows else {}
    text = rows["text"] if "text" in rows else pd.Series([None] * len(rows), dtype=object)
    text_id = _ints(rows.get("textId"), len(rows))
    columns = _times(rows)
    columns["name"] = [
        str(t) if isinstance(t, str) else strings.get(int(i), "")
        for t, i in zip(text, text_id, strict=True)
    ]
    columns["category"] = ["user_annotation"] * len(rows)
    columns["tid"] = thread_of(rows["globalTid"]) if "globalTid" in rows else _ids(len(rows))
    pid = process_of(rows["globalTid"]) if "globalTid" in rows else _ids(len(rows))
    columns["pid"] = pid
    columns["name"] = autonvtx_modules(columns["name"], columns)
    return torch_nvtx(columns, pid, skipped)


def thread_names(db: NsysDatabase) -> dict[str, str]:
    """ "pid/tid" -> the thread's name, as ThreadNames gives it."""
    if not {"nameId", "globalTid"} <= set(db.columns(THREAD_NAMES_TABLE)):
        return {}
    rows = db.frame(THREAD_NAMES_TABLE, ("nameId", "globalTid"))
    strings = db.strings()
    return {
        f"{pid}/{tid}": strings.get(int(name), "")
        for pid, tid, name in zip(
            process_of(rows["globalTid"]), thread_of(rows["globalTid"]), _ints(rows["nameId"])
        )
    }


def _gpu_rows(
    db: NsysDatabase, table: str, wanted: tuple[str, ...], skipped: Counter[str]
) -> tuple[pd.DataFrame, Columns, np.ndarray]:
    db.require(table, ("start", "end"))
    rows = db.frame(table, wanted)
    rows = rows[_timed(rows, table, skipped)].reset_index(drop=True)
    n = len(rows)
    columns = _times(rows)
    columns["device"] = _ints(rows.get("deviceId"), n)
    columns["stream"] = _ints(rows.get("streamId"), n)
    columns["correlation"] = _ints(rows.get("correlationId"), n)
    pid = process_of(rows["globalPid"]) if "globalPid" in rows else _ids(n)
    return rows, columns, pid


def _timed(rows: pd.DataFrame, table: str, skipped: Counter[str]) -> np.ndarray:
    """Which rows have a start and an end that are times of a session (whole ns from 0 to a
    year after its start); the others, NULLs and damage, are counted in ``skipped``."""
    keep = np.ones(len(rows), dtype=bool)
    for column in ("start", "end"):
        numbers = pd.to_numeric(rows[column], errors="coerce").to_numpy(np.float64, na_value=np.nan)
        keep &= (numbers >= 0) & (numbers <= _MAX_TIME_NS)  # False for NaN too
    if (dropped := int((~keep).sum())) > 0:
        skipped[f"{table} records without a usable start and end"] += dropped
    return keep


def _times(rows: pd.DataFrame) -> Columns:
    start = _ints(rows["start"])
    end = _ints(rows["end"])
    # A record whose end precedes its start (clock correction at the edges) lasts 0 ns.
    return {"start_ns": start, "dur_ns": np.maximum(end - start, 0)}


def _copy_kinds(db: NsysDatabase) -> dict[int, str]:
    names = db.enum("ENUM_CUDA_MEMCPY_OPER")
    if names is None:
        return _COPY_KINDS
    return {
        i: _COPY_KIND_NAMES.get(name.removeprefix("CUDA_MEMCPY_KIND_"), "unknown")
        for i, name in names.items()
    }


def _runtime_classes(db: NsysDatabase) -> dict[int, str]:
    names = db.enum("ENUM_NSYS_EVENT_CLASS")
    if names is None:
        return _RUNTIME_CLASSES
    return {i: _RUNTIME_CLASS_NAMES[n] for i, n in names.items() if n in _RUNTIME_CLASS_NAMES}


def _lacks(db: NsysDatabase, table: str, column: str) -> TraceFormatError:
    return TraceFormatError(
        db.path, f"table {table} has no column {column!r}, which gpuprofile needs"
    )


def _ints(values: pd.Series | None, n: int = 0, missing: int = NO_ID) -> np.ndarray:
    """A column as int64; NULL, text, a number past int64 or not finite (or a column the
    table lacks: None) as ``missing``."""
    if values is None:
        return np.full(n, missing, np.int64)
    numbers = pd.to_numeric(values, errors="coerce")
    if numbers.dtype.kind == "i":  # exact: ids past 2**53 must not go through float
        return numbers.to_numpy(np.int64)
    floats = numbers.to_numpy(np.float64, na_value=np.nan)
    ok = np.abs(floats) < 2.0**63  # False for NaN and the infinities
    out = np.full(len(floats), missing, np.int64)
    out[ok] = floats[ok].astype(np.int64)
    return out


def _ids(n: int) -> np.ndarray:
    return np.full(n, NO_ID, np.int64)
