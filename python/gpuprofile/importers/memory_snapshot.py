"""PyTorch CUDA caching-allocator snapshots (``torch.cuda.memory._dump_snapshot``, the pickle
pytorch.org/memory_viz opens) into a Trace (docs/memory_snapshot.md).

A snapshot is a pickled dict: ``segments`` (the allocator's state when it was taken) and
``device_traces`` (per device, the allocator's recorded actions up to then, when history was
being recorded). The state becomes ``TraceMeta.allocator`` (one ``AllocatorState`` per device);
the trace becomes the ``memory`` table: one row per ``alloc`` (+size) and per
``free_completed`` (-size). ``free_requested`` makes no row: a block freed while another stream
still uses it is reserved until ``free_completed``, so each block is counted once.

Totals: the allocated total a row carries is the running sum of those rows, starting from what
was already allocated before the trace's first entry (the trace is a ring buffer: older entries
are gone). That start is derived: the blocks not free at the snapshot (allocated or pending
free) minus the net of the trace's allocs and completed frees. The reserved total is derived
the same way from the segments' sizes and the trace's ``segment_alloc``/``segment_map`` (+) and
``segment_free``/``segment_unmap`` (-) entries.

A pickle can run code when read: the file is unpickled by an unpickler that refuses every
global (class, function), so a snapshot, which holds only dicts, lists, strings and numbers,
reads, and anything else is refused before it can run.
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from gpuprofile.errors import TraceFormatError
from gpuprofile.importers.source import read_trace_bytes, reading
from gpuprofile.trace.allocator import (
    LARGEST_BLOCKS,
    MAX_FRAMES,
    AllocatorBlock,
    AllocatorFrame,
    AllocatorOom,
    AllocatorState,
)
from gpuprofile.trace.meta import RankMeta, Source, TraceMeta
from gpuprofile.trace.model import NO_ID, Trace, make_table

FORMAT = "memory-snapshot"
ALLOCATED = "active_allocated"
PENDING_FREE = "active_pending_free"
INACTIVE = "inactive"
# What torch writes (memory_snapshot.cpp, Module.cpp), and the name its docstring gives it.
_STATES = {
    ALLOCATED: ALLOCATED,
    PENDING_FREE: PENDING_FREE,
    "active_awaiting_free": PENDING_FREE,
    INACTIVE: INACTIVE,
}
_INT64 = (-(2**63), 2**63 - 1)
_ALLOC_DELTA = {"alloc": 1, "free_completed": -1}
_RESERVE_DELTA = {"segment_alloc": 1, "segment_map": 1, "segment_free": -1, "segment_unmap": -1}
_HOW = "torch.cuda.memory._dump_snapshot()"
NO_TIMES_NOTE = "the snapshot's trace has no times: events are in order, one ns apart"


def looks_like_snapshot(head: bytes) -> bool:
    """Whether a file's first bytes can be a memory snapshot: a pickle of protocol 2 or later
    (PROTO opcode, 0x80, then the protocol). Any pickle passes; ``read_memory_snapshot`` says
    what a pickle that is not a snapshot holds instead."""
    return len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= pickle.HIGHEST_PROTOCOL


def read_memory_snapshot(path: str | Path) -> Trace:
    """Read a PyTorch CUDA memory snapshot into a Trace.

    Parameters:
        path: a pickle written by ``torch.cuda.memory._dump_snapshot(path)`` (or
            ``pickle.dump(torch.cuda.memory._snapshot(), f)``), plain or gzip.

    Returns:
        A Trace whose ``memory`` table holds the allocator's recorded allocs and completed
        frees (empty when history was not recorded), and whose ``meta.allocator`` holds each
        device's state at the snapshot.

    Raises:
        TraceFormatError: the file is not a complete pickle, names a class or function (refused
            unread), is not a snapshot (a dict with ``segments``), or holds a field of the wrong
            type (named).
    """
    path = Path(path)
    with reading(path):
        data = _unpickle(path, read_trace_bytes(path))
        return _Reader(path).trace(data)


def snapshot_states(
    data: Any, name: str = "torch.cuda.memory._snapshot()"
) -> tuple[AllocatorState, ...]:
    """Each device's state in a snapshot already in memory (a capture's own, whose events the
    profiler recorded itself: its trace's rows are not built), checked as a file's is;
    ``name`` stands for the path in errors."""
    return _Reader(Path(name)).trace(data, rows=False).meta.allocator


def _oom_text(states: list[AllocatorState]) -> str | None:
    """A snapshot's last oom entry as the failure the memory view's post-mortem reads."""
    failed = [s for s in states if s.oom is not None]
    if not failed:
        return None
    state = max(failed, key=lambda s: s.oom.time_ns or 0 if s.oom else 0)
    oom = state.oom
    assert oom is not None
    asked = f"you tried to allocate {oom.size} bytes" if oom.size is not None else "an allocation"
    free = f"; the device had {oom.device_free} B free" if oom.device_free is not None else ""
    return (
        f"OutOfMemoryError (the snapshot's oom entry): out of memory on GPU {state.device}: "
        f"{asked}{free}"
    )


class _DataOnly(pickle.Unpickler):
    """An unpickler that builds only pickle's own types (dict, list, tuple, str, bytes, numbers,
    bool, None) and refuses every global, the only way a pickle reaches code."""

    def __init__(self, file: io.BytesIO, path: Path) -> None:
        super().__init__(file)
        self._path = path

    def find_class(self, module: str, name: str) -> NoReturn:
        raise TraceFormatError(
            self._path,
            f"refused to load {module}.{name}: a memory snapshot holds only plain dicts, "
            "lists, strings and numbers, and a pickle that names a class or function runs "
            "code when read; this file was not read",
        )

    def persistent_load(self, pid: Any) -> NoReturn:
        raise TraceFormatError(
            self._path,
            "refused a persistent reference: a memory snapshot holds only plain dicts and "
            "lists; this file was not read",
        )


def _unpickle(path: Path, raw: bytes) -> Any:
    if not looks_like_snapshot(raw):
        raise TraceFormatError(
            path, f"not a pickle (of protocol 2 or later): a memory snapshot is one ({_HOW})"
        )
    try:
        return _DataOnly(io.BytesIO(raw), path).load()
    except (pickle.UnpicklingError, EOFError) as exc:
        problem = str(exc) or type(exc).__name__
        raise TraceFormatError(
            path,
            f"not a complete pickle ({problem}): the file is truncated or damaged; "
            f"{_HOW} writes a snapshot whole",
        ) from None
    except (ValueError, TypeError, IndexError, KeyError, OverflowError, AttributeError) as exc:
        raise TraceFormatError(
            path, f"a damaged pickle ({type(exc).__name__}: {exc}); not a memory snapshot"
        ) from None


class _Reader:
    """Checks each field it reads; a wrong one raises TraceFormatError naming where it is."""

    def __init__(self, path: Path) -> None:
        self.path = path

    # -- checked access -------------------------------------------------------------------

    def fail(self, where: str, problem: str) -> NoReturn:
        raise TraceFormatError(self.path, f"{where}: {problem}")

    def wrong(self, where: str, value: Any, expected: str) -> NoReturn:
        self.fail(where, f"expected {expected}, got {type(value).__name__} {_short(value)}")

    def dict_(self, value: Any, where: str) -> dict[Any, Any]:
        if not isinstance(value, dict):
            self.wrong(where, value, "a dict")
        return value

    def list_(self, value: Any, where: str) -> list[Any]:
        if not isinstance(value, list | tuple):
            self.wrong(where, value, "a list")
        return list(value)

    def int_(self, value: Any, where: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.wrong(where, value, "an integer")
        if not _INT64[0] <= value <= _INT64[1]:
            self.fail(where, f"{value} is out of the range of a 64-bit integer")
        return value

    def str_(self, value: Any, where: str) -> str:
        if not isinstance(value, str):
            self.wrong(where, value, "a string")
        return value

    def required(self, record: dict[Any, Any], key: str, where: str) -> Any:
        if key not in record:
            self.fail(where, f"no {key!r}")
        return record[key]

    def dicts(self, value: Any, where: str) -> Iterator[tuple[str, dict[Any, Any]]]:
        for i, item in enumerate(self.list_(value, where)):
            at = f"{where}[{i}]"
            yield at, self.dict_(item, at)

    def frames(self, record: dict[Any, Any], where: str) -> tuple[AllocatorFrame, ...]:
        """The first MAX_FRAMES frames of a record (innermost first, as torch lists them)."""
        value = record.get("frames")
        if value is None:
            return ()
        out = []
        for i, frame in enumerate(self.list_(value, f"{where}.frames")[:MAX_FRAMES]):
            at = f"{where}.frames[{i}]"
            frame = self.dict_(frame, at)
            out.append(
                AllocatorFrame(
                    self.str_(frame.get("filename", ""), f"{at}.filename"),
                    self.int_(frame.get("line", 0), f"{at}.line"),
                    self.str_(frame.get("name", ""), f"{at}.name"),
                )
            )
        return tuple(out)

    # -- the snapshot ---------------------------------------------------------------------

    def trace(self, data: Any, *, rows: bool = True) -> Trace:
        """The snapshot as a Trace; ``rows``: also its device traces as the memory table."""
        if not isinstance(data, dict):
            self.fail(
                "not a memory snapshot",
                f"the pickle holds a {type(data).__name__}, where a snapshot is a dict with "
                f"'segments' and 'device_traces' ({_HOW})",
            )
        if "segments" not in data:
            keys = ", ".join(repr(k) for k in list(data)[:8]) or "none"
            self.fail(
                "not a memory snapshot",
                f"the pickled dict has no 'segments' (its keys: {keys}); a snapshot from "
                f"{_HOW} has 'segments' and 'device_traces'",
            )
        settings = data.get("allocator_settings")
        expandable_setting = isinstance(settings, dict) and settings.get("expandable_segments")
        segments = self.segments(data["segments"])
        traces = self.list_(data.get("device_traces", []), "device_traces")
        entries = {
            device: list(self.dicts(entries, f"device_traces[{device}]"))
            for device, entries in enumerate(traces)
        }
        times = self.times(entries)
        origin = min((t for ts in times.values() for t in ts), default=0) if times else 0
        devices = sorted({*segments, *(d for d, e in entries.items() if e)})
        notes: list[str] = []
        if any(entries.values()) and not times:
            notes.append(NO_TIMES_NOTE)
        columns: dict[str, list[int]] = {
            k: [] for k in ("time_ns", "device", "bytes", "total_allocated", "total_reserved")
        }
        columns["addr"] = []
        states = []
        for device in devices:
            blocks = segments.get(device, [])
            at_times = [t - origin for t in times.get(device, [])] if times else None
            oom = self.oom(entries.get(device, []), at_times)
            states.append(self.state(device, blocks, expandable_setting is True, oom))
            if rows:
                notes.extend(self.rows(device, blocks, entries.get(device, []), at_times, columns))
        order = np.argsort(np.asarray(columns["time_ns"], dtype=np.int64), kind="stable")
        n = len(order)
        memory = make_table(
            "memory",
            {
                "rank": np.zeros(n, dtype=np.int32),
                "pid": np.full(n, NO_ID, dtype=np.int64),
                "tid": np.full(n, NO_ID, dtype=np.int64),
                **{k: np.asarray(v, dtype=np.int64)[order] for k, v in columns.items()},
            },
        )
        files = (str(self.path),)
        meta = TraceMeta(
            source=Source(format=FORMAT, path=str(self.path), files=files),
            origin_ns=origin,
            ranks={0: RankMeta(files=files)},
            notes=tuple(notes),
            allocator=tuple(states),
            failure=_oom_text(states),
        )
        return Trace(memory=memory, meta=meta)

    def segments(self, value: Any) -> dict[int, list[_Segment]]:
        """The segments by device, each with its checked blocks."""
        out: dict[int, list[_Segment]] = {}
        for where, seg in self.dicts(value, "segments"):
            device = self.int_(seg.get("device", 0), f"{where}.device")
            address = self.int_(seg.get("address", 0), f"{where}.address")
            total = self.int_(self.required(seg, "total_size", where), f"{where}.total_size")
            stream = self.int_(seg.get("stream", 0), f"{where}.stream")
            kind = self.str_(seg.get("segment_type", ""), f"{where}.segment_type")
            expandable = seg.get("is_expandable", False)
            if not isinstance(expandable, bool):
                self.wrong(f"{where}.is_expandable", expandable, "a bool")
            blocks = []
            offset = address
            for at, block in self.dicts(self.required(seg, "blocks", where), f"{where}.blocks"):
                size = self.int_(self.required(block, "size", at), f"{at}.size")
                state = self.str_(self.required(block, "state", at), f"{at}.state")
                if state not in _STATES:
                    self.fail(f"{at}.state", f"{state!r} is not one of {sorted(_STATES)}")
                blocks.append(
                    _Block(
                        where=at,
                        record=block,
                        address=self.int_(block.get("address", offset), f"{at}.address"),
                        size=size,
                        requested=self.int_(
                            block.get("requested_size", size), f"{at}.requested_size"
                        ),
                        state=_STATES[state],
                    )
                )
                offset += size
            segment = _Segment(total, stream, kind == "large", expandable, blocks)
            out.setdefault(device, []).append(segment)
        return out

    def times(self, entries: dict[int, list[tuple[str, dict[Any, Any]]]]) -> dict[int, list[int]]:
        """Each entry's time in ns on the source's clock (``time_us`` x 1000), by device; {}
        when some entry has none (then entries are placed by their index)."""
        if not all("time_us" in e for es in entries.values() for _, e in es):
            return {}
        out = {}
        for device, es in entries.items():
            ts = []
            for where, entry in es:
                value = entry["time_us"]
                if isinstance(value, float) and np.isfinite(value):
                    ts.append(round(value * 1000))
                else:
                    ts.append(self.int_(value, f"{where}.time_us") * 1000)
            out[device] = ts
        return out

    def state(
        self,
        device: int,
        segments: list[_Segment],
        expandable: bool,
        oom: AllocatorOom | None,
    ) -> AllocatorState:
        by_state = {ALLOCATED: 0, PENDING_FREE: 0, INACTIVE: 0}
        requested = 0
        largest_free = 0
        allocated: list[tuple[_Block, int]] = []
        for segment in segments:
            for block in segment.blocks:
                by_state[block.state] += block.size
                if block.state == ALLOCATED:
                    requested += block.requested
                    allocated.append((block, segment.stream))
                elif block.state == INACTIVE:
                    largest_free = max(largest_free, block.size)
        allocated.sort(key=lambda b: (-b[0].size, b[0].address))
        reserved = sum(s.total for s in segments)
        return AllocatorState(
            device=device,
            reserved_bytes=reserved,
            allocated_bytes=by_state[ALLOCATED],
            requested_bytes=requested,
            pending_free_bytes=by_state[PENDING_FREE],
            inactive_bytes=by_state[INACTIVE],
            fragmentation=by_state[INACTIVE] / reserved if reserved > 0 else None,
            segments=len(segments),
            large_segments=sum(s.large for s in segments),
            expandable=expandable or any(s.expandable for s in segments),
            largest_blocks=tuple(
                AllocatorBlock(
                    address=b.address,
                    size=b.size,
                    requested_size=b.requested,
                    state=b.state,
                    stream=stream,
                    frames=self.frames(b.record, b.where),
                )
                for b, stream in allocated[:LARGEST_BLOCKS]
            ),
            largest_free_block=largest_free,
            oom=oom,
        )

    def oom(
        self, entries: list[tuple[str, dict[Any, Any]]], times: list[int] | None
    ) -> AllocatorOom | None:
        """The device's last ``oom`` entry."""
        for i in range(len(entries) - 1, -1, -1):
            where, entry = entries[i]
            if entry.get("action") != "oom":
                continue
            free, size = entry.get("device_free"), entry.get("size")
            return AllocatorOom(
                time_ns=times[i] if times is not None else i,
                device_free=None if free is None else self.int_(free, f"{where}.device_free"),
                size=None if size is None else self.int_(size, f"{where}.size"),
                frames=self.frames(entry, where),
            )
        return None

    def rows(
        self,
        device: int,
        segments: list[_Segment],
        entries: list[tuple[str, dict[Any, Any]]],
        times: list[int] | None,
        columns: dict[str, list[int]],
    ) -> list[str]:
        """Append the device's memory rows to ``columns``; what had to be decided, as notes."""
        deltas = []  # (index, allocated delta, reserved delta, addr)
        net_allocated = net_reserved = 0
        # The lowest the running sums reach from 0: a start below minus these would go negative.
        low_allocated = low_reserved = 0
        for i, (where, entry) in enumerate(entries):
            action = self.str_(self.required(entry, "action", where), f"{where}.action")
            sign = _ALLOC_DELTA.get(action, 0) or _RESERVE_DELTA.get(action, 0)
            if not sign:
                continue  # free_requested, snapshot, oom, and actions torch may add
            size = self.int_(self.required(entry, "size", where), f"{where}.size")
            addr = self.int_(entry.get("addr", NO_ID), f"{where}.addr")
            if action in _ALLOC_DELTA:
                deltas.append((i, sign * size, 0, addr))
                net_allocated += sign * size
                low_allocated = min(low_allocated, net_allocated)
            else:
                deltas.append((i, 0, sign * size, addr))
                net_reserved += sign * size
                low_reserved = min(low_reserved, net_reserved)
        # Blocks pending free were not yet free_completed: the running sum still holds them.
        held = sum(b.size for s in segments for b in s.blocks if b.state != INACTIVE)
        allocated = held - net_allocated
        reserved = sum(s.total for s in segments) - net_reserved
        notes = []
        if allocated < -low_allocated or reserved < -low_reserved:
            # More allocated in the trace than the snapshot holds: the file was edited or
            # joined from two runs. Start from the least that keeps every total at 0 or more.
            notes.append(
                f"device {device}: the trace's entries do not add up to the snapshot's state "
                "(the trace allocates more than the snapshot holds); its totals start from "
                "the least that keeps them from going negative"
            )
            allocated = max(allocated, -low_allocated)
            reserved = max(reserved, -low_reserved)
        for i, d_alloc, d_reserved, addr in deltas:
            allocated += d_alloc
            reserved += d_reserved
            if d_alloc:
                columns["time_ns"].append(times[i] if times is not None else i)
                columns["device"].append(device)
                columns["bytes"].append(d_alloc)
                columns["total_allocated"].append(allocated)
                columns["total_reserved"].append(reserved)
                columns["addr"].append(addr)
        return notes


class _Block:
    __slots__ = ("address", "record", "requested", "size", "state", "where")

    def __init__(
        self,
        *,
        where: str,
        record: dict[Any, Any],
        address: int,
        size: int,
        requested: int,
        state: str,
    ) -> None:
        self.where, self.record = where, record
        self.address, self.size, self.requested, self.state = address, size, requested, state


class _Segment:
    __slots__ = ("blocks", "expandable", "large", "stream", "total")

    def __init__(
        self, total: int, stream: int, large: bool, expandable: bool, blocks: list[_Block]
    ) -> None:
        self.total, self.stream, self.large = total, stream, large
        self.expandable, self.blocks = expandable, blocks


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
