"""Small Kineto documents built by tests, event by event, so expected values are known."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any


def cpu_op(name: str, ts: float, dur: float, *, tid: int = 1, ext: int = -1, **args: Any) -> dict:
    event_args = {"External id": ext, **args} if ext >= 0 else dict(args)
    return {
        "ph": "X",
        "cat": "cpu_op",
        "name": name,
        "pid": 100,
        "tid": tid,
        "ts": ts,
        "dur": dur,
        "args": event_args,
    }


def python_function(name: str, ts: float, dur: float, *, tid: int = 1, **args: Any) -> dict:
    """A Python frame or call as torch records it with ``with_stack``."""
    return {**cpu_op(name, ts, dur, tid=tid, **args), "cat": "python_function"}


def runtime(name: str, ts: float, dur: float, corr: int, *, tid: int = 1) -> dict:
    return {
        "ph": "X",
        "cat": "cuda_runtime",
        "name": name,
        "pid": 100,
        "tid": tid,
        "ts": ts,
        "dur": dur,
        "args": {"correlation": corr, "cbid": 211},
    }


def kernel(
    name: str, ts: float, dur: float, corr: int, *, stream: int = 7, device: int = 0, **args: Any
) -> dict:
    return {
        "ph": "X",
        "cat": "kernel",
        "name": name,
        "pid": device,
        "tid": stream,
        "ts": ts,
        "dur": dur,
        "args": {"device": device, "stream": stream, "correlation": corr, **args},
    }


def memcpy(kind: str, ts: float, dur: float, nbytes: int, *, pinned: bool = False) -> dict:
    host = "Pinned" if pinned else "Pageable"
    return {
        "ph": "X",
        "cat": "gpu_memcpy",
        "name": f"Memcpy {kind} ({host} -> Device)",
        "pid": 0,
        "tid": 7,
        "ts": ts,
        "dur": dur,
        "args": {"device": 0, "stream": 7, "correlation": 0, "bytes": nbytes},
    }


def memset(ts: float, dur: float, nbytes: int) -> dict:
    return {
        "ph": "X",
        "cat": "gpu_memset",
        "name": "Memset (Device)",
        "pid": 0,
        "tid": 7,
        "ts": ts,
        "dur": dur,
        "args": {"device": 0, "stream": 7, "bytes": nbytes},
    }


def memory(ts: float, *, allocated: int, reserved: int, nbytes: int = 0) -> dict[str, Any]:
    """A CUDA caching allocator's [memory] instant on device 0: the totals after it."""
    return {
        "ph": "i",
        "cat": "cpu_instant_event",
        "name": "[memory]",
        "pid": 100,
        "tid": 1,
        "ts": ts,
        "s": "t",
        "args": {
            "Device Type": 1,
            "Device Id": 0,
            "Bytes": nbytes,
            "Total Allocated": allocated,
            "Total Reserved": reserved,
        },
    }


def document(events: list[dict], **top: Any) -> dict:
    return {"schemaVersion": 1, "traceEvents": events, **top}


def write(path: Path, doc: Any, *, gz: bool = False) -> Path:
    data = json.dumps(doc).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path
