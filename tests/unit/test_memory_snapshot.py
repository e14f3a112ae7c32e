"""PyTorch CUDA memory snapshots (torch.cuda.memory._dump_snapshot) built by hand as torch writes
them: per-device state, the memory table's running totals, and a reader that never runs code."""

from __future__ import annotations

import collections
import copy
import gzip
import os
import pickle
from pathlib import Path
from typing import Any

import pytest

from gpuprofile.errors import TraceFormatError
from gpuprofile.importers.memory_snapshot import (
    FORMAT,
    NO_TIMES_NOTE,
    looks_like_snapshot,
    read_memory_snapshot,
)
from gpuprofile.trace.model import SCHEMA

MiB = 2**20
SEG_A = 0x7F00_0000_0000  # device 0, large
SEG_B = 0x7F00_0040_0000  # device 0, small
SEG_C = 0x7F10_0000_0000  # device 1, large
SEG_GONE = 0x7F10_4000_0000  # device 1, allocated then freed inside the trace


def _frames(where: str, n: int) -> list[dict[str, Any]]:
    # Innermost first, as torch lists them.
    return [
        {"filename": f"/work/{where}.py", "line": 10 + i, "name": f"{where}_{i}"} for i in range(n)
    ]


def _block(
    address: int, size: int, state: str, requested: int | None = None, frames: int = 0
) -> dict[str, Any]:
    return {
        "address": address,
        "size": size,
        "requested_size": size if requested is None else requested,
        "state": state,
        "frames": _frames(f"b{address:x}", frames),
    }


def _segment(device: int, address: int, kind: str, blocks: list[dict[str, Any]]) -> dict[str, Any]:
    total = sum(b["size"] for b in blocks)
    live = [b for b in blocks if b["state"] != "inactive"]
    return {
        "device": device,
        "address": address,
        "total_size": total,
        "allocated_size": sum(b["size"] for b in blocks if b["state"] == "active_allocated"),
        "active_size": sum(b["size"] for b in live),
        "requested_size": sum(b["requested_size"] for b in live),
        "stream": 0,
        "segment_type": kind,
        "segment_pool_id": (0, 0),
        "is_expandable": False,
        "frames": [],
        "blocks": blocks,
    }


def _entry(action: str, addr: int, size: int, t: int, frames: int = 0) -> dict[str, Any]:
    key = "device_free" if action == "oom" else "addr"
    return {
        "action": action,
        key: addr,
        "size": size,
        "stream": 0,
        "frames": _frames(action, frames),
        "time_us": t,
    }


# Device 0: A (2 MiB, large) = 1 MiB allocated before the trace began + 512 KiB pending free +
# 512 KiB inactive; B (2 MiB, small, allocated in the trace) = 512 B allocated + the rest free.
A1, A2, A3 = (SEG_A, MiB, 1_000_000), (SEG_A + MiB, MiB // 2), (SEG_A + 3 * MiB // 2, MiB // 2)
B1, B2 = (SEG_B, 512, 500), (SEG_B + 512, 2 * MiB - 512)
TMP = (SEG_B + 512, 1024)
# Device 1: C (20 MiB, large) = 8 MiB allocated + 12 MiB inactive.
C1, C2 = (SEG_C, 8 * MiB), (SEG_C + 8 * MiB, 12 * MiB)


def snapshot() -> dict[str, Any]:
    segments = [
        _segment(
            0,
            SEG_A,
            "large",
            [
                _block(A1[0], A1[1], "active_allocated", A1[2], frames=15),
                _block(A2[0], A2[1], "active_pending_free", frames=2),
                _block(A3[0], A3[1], "inactive"),
            ],
        ),
        _segment(
            0,
            SEG_B,
            "small",
            [_block(B1[0], B1[1], "active_allocated", B1[2], 1), _block(B2[0], B2[1], "inactive")],
        ),
        _segment(
            1,
            SEG_C,
            "large",
            [_block(C1[0], C1[1], "active_allocated", frames=3), _block(C2[0], C2[1], "inactive")],
        ),
    ]
    device0 = [
        _entry("segment_alloc", SEG_B, 2 * MiB, 1000),
        _entry("alloc", B1[0], B1[1], 1001, frames=1),
        _entry("alloc", TMP[0], TMP[1], 1002),
        _entry("free_requested", TMP[0], TMP[1], 1003),
        _entry("free_completed", TMP[0], TMP[1], 1004),
        _entry("alloc", A2[0], A2[1], 1005),
        _entry("free_requested", A2[0], A2[1], 1006),
        _entry("oom", 1234, 2**30, 1007, frames=14),
        _entry("snapshot", 0, 0, 1008),
    ]
    device1 = [
        _entry("segment_alloc", SEG_C, 20 * MiB, 500),
        _entry("segment_alloc", SEG_GONE, 2 * MiB, 600),
        _entry("alloc", C1[0], C1[1], 2000),
        _entry("alloc", SEG_GONE, 4 * MiB, 2001),
        _entry("free_requested", SEG_GONE, 4 * MiB, 2002),
        _entry("free_completed", SEG_GONE, 4 * MiB, 2003),
        _entry("segment_free", SEG_GONE, 2 * MiB, 2004),
    ]
    return {
        "segments": segments,
        "device_traces": [device0, device1],
        "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "expandable_segments": False},
    }


def _write(path: Path, data: Any, protocol: int = pickle.DEFAULT_PROTOCOL) -> Path:
    path.write_bytes(pickle.dumps(data, protocol=protocol))
    return path


def _sizes(snap: dict[str, Any], device: int, state: str, key: str = "size") -> int:
    return sum(
        b[key]
        for s in snap["segments"]
        if s["device"] == device
        for b in s["blocks"]
        if b["state"] == state
    )


@pytest.mark.parametrize("protocol", [2, pickle.DEFAULT_PROTOCOL, pickle.HIGHEST_PROTOCOL])
def test_state_per_device(tmp_path: Path, protocol: int) -> None:
    snap = snapshot()
    trace = read_memory_snapshot(_write(tmp_path / "snapshot.pickle", snap, protocol))
    assert trace.meta.source.format == FORMAT
    d0, d1 = trace.meta.allocator
    assert (d0.device, d1.device) == (0, 1)

    reserved0 = sum(s["total_size"] for s in snap["segments"] if s["device"] == 0)
    assert reserved0 == 4 * MiB
    assert d0.reserved_bytes == reserved0
    assert d0.allocated_bytes == _sizes(snap, 0, "active_allocated") == A1[1] + B1[1]
    assert (
        d0.requested_bytes == _sizes(snap, 0, "active_allocated", "requested_size") == A1[2] + B1[2]
    )
    assert d0.pending_free_bytes == A2[1]
    assert d0.inactive_bytes == _sizes(snap, 0, "inactive") == A3[1] + B2[1]
    assert d0.allocated_bytes + d0.pending_free_bytes + d0.inactive_bytes == d0.reserved_bytes
    assert d0.fragmentation == pytest.approx((A3[1] + B2[1]) / (4 * MiB))
    assert (d0.segments, d0.large_segments, d0.expandable) == (2, 1, False)
    assert d0.largest_free_block == B2[1]
    assert [(b.address, b.size, b.state) for b in d0.largest_blocks] == [
        (A1[0], A1[1], "active_allocated"),
        (B1[0], B1[1], "active_allocated"),
    ]
    top = d0.largest_blocks[0]
    assert top.requested_size == A1[2]
    assert len(top.frames) == 12  # of 15, innermost first
    assert (top.frames[0].filename, top.frames[0].line, top.frames[0].name) == (
        f"/work/b{SEG_A:x}.py",
        10,
        f"b{SEG_A:x}_0",
    )

    assert d0.oom is not None
    assert (d0.oom.device_free, d0.oom.size, len(d0.oom.frames)) == (1234, 2**30, 12)
    assert d0.oom.time_ns == (1007 - 500) * 1000
    assert d1.oom is None

    assert (d1.reserved_bytes, d1.allocated_bytes, d1.inactive_bytes) == (
        20 * MiB,
        8 * MiB,
        12 * MiB,
    )
    assert d1.fragmentation == pytest.approx(12 / 20)
    assert d1.largest_free_block == 12 * MiB


def test_memory_rows_and_running_totals(tmp_path: Path) -> None:
    trace = read_memory_snapshot(_write(tmp_path / "snapshot.pickle", snapshot()))
    memory = trace.memory
    assert {c: str(t) for c, t in memory.dtypes.items()} == SCHEMA["memory"]
    # The earliest entry (device 1's first segment_alloc, 500 us) is the trace's start.
    assert trace.meta.origin_ns == 500 * 1000
    assert NO_TIMES_NOTE not in trace.meta.notes
    assert (memory["time_ns"].diff().dropna() >= 0).all()
    assert set(memory["rank"]) == {0} and set(memory["pid"]) == {-1} and set(memory["tid"]) == {-1}

    d0 = memory[memory["device"] == 0]
    # A1 was allocated before the trace began; allocs add, completed frees subtract,
    # free_requested, oom and snapshot make no row. Segment B existed from the first row on.
    start = A1[1]
    assert list(d0["bytes"]) == [B1[1], TMP[1], -TMP[1], A2[1]]
    assert list(d0["addr"]) == [B1[0], TMP[0], TMP[0], A2[0]]
    assert list(d0["time_ns"]) == [(t - 500) * 1000 for t in (1001, 1002, 1004, 1005)]
    assert list(d0["total_allocated"]) == [
        start + 512,
        start + 512 + 1024,
        start + 512,
        start + 512 + MiB // 2,
    ]
    # The last total is what the snapshot holds that is not free (pending free included).
    assert d0["total_allocated"].iloc[-1] == A1[1] + A2[1] + B1[1]
    assert list(d0["total_reserved"]) == [4 * MiB] * 4

    d1 = memory[memory["device"] == 1]
    assert list(d1["bytes"]) == [8 * MiB, 4 * MiB, -4 * MiB]
    assert list(d1["total_allocated"]) == [8 * MiB, 12 * MiB, 8 * MiB]
    # 20 MiB + 2 MiB reserved before the first alloc; the 2 MiB segment is freed after the last row.
    assert list(d1["total_reserved"]) == [22 * MiB] * 3
    assert list(d1["time_ns"]) == [(t - 500) * 1000 for t in (2000, 2001, 2003)]


def test_trace_without_times_is_in_order(tmp_path: Path) -> None:
    snap = snapshot()
    for entries in snap["device_traces"]:
        for entry in entries:
            del entry["time_us"]
    trace = read_memory_snapshot(_write(tmp_path / "old.pickle", snap))
    assert NO_TIMES_NOTE in trace.meta.notes
    assert trace.meta.origin_ns == 0
    memory = trace.memory
    # Each row's time is its entry's index in its device's trace.
    assert list(memory[memory["device"] == 0]["time_ns"]) == [1, 2, 4, 5]
    assert list(memory[memory["device"] == 1]["time_ns"]) == [2, 3, 5]
    assert list(memory[memory["device"] == 0]["total_allocated"]) == [
        A1[1] + 512,
        A1[1] + 1536,
        A1[1] + 512,
        A1[1] + 512 + MiB // 2,
    ]
    oom = trace.meta.allocator[0].oom
    assert oom is not None and oom.time_ns == 7


def test_no_history_and_gzip(tmp_path: Path) -> None:
    snap = snapshot()
    del snap["device_traces"]
    path = tmp_path / "state.pickle.gz"
    path.write_bytes(gzip.compress(pickle.dumps(snap)))
    trace = read_memory_snapshot(path)
    assert len(trace.memory) == 0
    assert [s.reserved_bytes for s in trace.meta.allocator] == [4 * MiB, 20 * MiB]
    assert trace.meta.notes == ()


def test_expandable_and_empty_device(tmp_path: Path) -> None:
    snap = {
        "segments": [],
        "device_traces": [[], []],
        "allocator_settings": {"expandable_segments": True},
    }
    trace = read_memory_snapshot(_write(tmp_path / "empty.pickle", snap))
    assert trace.meta.allocator == ()
    snap = snapshot()
    snap["segments"][2]["is_expandable"] = True
    d0, d1 = read_memory_snapshot(_write(tmp_path / "x.pickle", snap)).meta.allocator
    assert (d0.expandable, d1.expandable) == (False, True)


def test_looks_like_snapshot(tmp_path: Path) -> None:
    assert looks_like_snapshot(pickle.dumps(snapshot())[:64])
    assert looks_like_snapshot(pickle.dumps({}, protocol=2))
    assert not looks_like_snapshot(b'{"traceEvents": []}')
    assert not looks_like_snapshot(b"SQLite format 3\x00")
    assert not looks_like_snapshot(pickle.dumps({}, protocol=0))
    assert not looks_like_snapshot(b"")


class _Payload:
    """Pickles as a call to os.system: reading it with pickle.load would run the command."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


def test_a_global_is_refused_and_never_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    snap = snapshot()
    snap["segments"][0]["blocks"][0]["frames"] = [_Payload(marker)]
    path = _write(tmp_path / "evil.pickle", snap)
    with pytest.raises(TraceFormatError) as raised:
        read_memory_snapshot(path)
    message = str(raised.value)
    assert str(path) in message and ".system" in message and "only plain dicts" in message
    assert not marker.exists()


def test_a_class_is_refused(tmp_path: Path) -> None:
    snap = snapshot()
    snap["allocator_settings"] = collections.OrderedDict(snap["allocator_settings"])
    with pytest.raises(TraceFormatError, match=r"collections\.OrderedDict"):
        read_memory_snapshot(_write(tmp_path / "class.pickle", snap))


def test_not_a_snapshot(tmp_path: Path) -> None:
    whole = pickle.dumps(snapshot())
    truncated = tmp_path / "truncated.pickle"
    truncated.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(TraceFormatError, match="truncated") as raised:
        read_memory_snapshot(truncated)
    assert str(truncated) in str(raised.value)

    with pytest.raises(TraceFormatError, match="holds a list"):
        read_memory_snapshot(_write(tmp_path / "list.pickle", [1, 2, 3]))
    with pytest.raises(TraceFormatError, match="no 'segments'"):
        read_memory_snapshot(_write(tmp_path / "dict.pickle", {"device_traces": []}))
    with pytest.raises(TraceFormatError, match="not a pickle"):
        read_memory_snapshot(_write(tmp_path / "p0.pickle", {"segments": []}, protocol=0))
    empty = tmp_path / "empty.pickle"
    empty.write_bytes(b"")
    with pytest.raises(TraceFormatError, match="empty"):
        read_memory_snapshot(empty)
    with pytest.raises(TraceFormatError, match="no such file"):
        read_memory_snapshot(tmp_path / "missing.pickle")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (
            lambda s: s["segments"][0]["blocks"][1].__setitem__("size", "1024"),
            r"segments\[0\]\.blocks\[1\]\.size",
        ),
        (lambda s: s["segments"][1].__setitem__("total_size", None), r"segments\[1\]\.total_size"),
        (lambda s: s["segments"][1].__delitem__("blocks"), r"segments\[1\]: no 'blocks'"),
        (
            lambda s: s["segments"][0]["blocks"][2].__setitem__("state", "gone"),
            r"segments\[0\]\.blocks\[2\]\.state",
        ),
        (lambda s: s["segments"].__setitem__(2, "segment"), r"segments\[2\]: expected a dict"),
        (lambda s: s.__setitem__("segments", {"a": 1}), r"segments: expected a list"),
        (
            lambda s: s["device_traces"][0][2].__setitem__("size", 1.5),
            r"device_traces\[0\]\[2\]\.size",
        ),
        (
            lambda s: s["device_traces"][1][0].__delitem__("action"),
            r"device_traces\[1\]\[0\]: no 'action'",
        ),
        (
            lambda s: s["device_traces"][0][3].__setitem__("time_us", "soon"),
            r"device_traces\[0\]\[3\]\.time_us",
        ),
        (
            lambda s: s["device_traces"][0][7].__setitem__("device_free", [1]),
            r"device_traces\[0\]\[7\]\.device_free",
        ),
        (
            lambda s: s["segments"][0]["blocks"][0]["frames"][1].__setitem__("line", "12"),
            r"segments\[0\]\.blocks\[0\]\.frames\[1\]\.line",
        ),
        (lambda s: s["segments"][0].__setitem__("device", 2**70), r"segments\[0\]\.device"),
    ],
)
def test_wrong_field_is_named(tmp_path: Path, change: Any, field: str) -> None:
    snap = copy.deepcopy(snapshot())
    change(snap)
    with pytest.raises(TraceFormatError, match=field):
        read_memory_snapshot(_write(tmp_path / "bad.pickle", snap))


def test_trace_that_does_not_add_up(tmp_path: Path) -> None:
    snap = snapshot()
    # An alloc that is never freed, of a block the snapshot does not hold.
    snap["device_traces"][1].append(_entry("alloc", 0x7F20_0000_0000, 64 * MiB, 2005))
    trace = read_memory_snapshot(_write(tmp_path / "odd.pickle", snap))
    assert any("do not add up" in note for note in trace.meta.notes)
    d1 = trace.memory[trace.memory["device"] == 1]
    assert list(d1["total_allocated"]) == [8 * MiB, 12 * MiB, 8 * MiB, 72 * MiB]
    # Device 0 adds up: no note about it.
    assert not any(note.startswith("device 0") for note in trace.meta.notes)


def test_block_freed_in_the_trace_was_held_before_it(tmp_path: Path) -> None:
    snap = snapshot()
    # A block allocated before the trace's first entry, freed in it: the start holds it.
    snap["device_traces"][1].append(_entry("free_completed", 0x7F20_0000_0000, 64 * MiB, 2005))
    trace = read_memory_snapshot(_write(tmp_path / "early.pickle", snap))
    assert trace.meta.notes == ()
    d1 = trace.memory[trace.memory["device"] == 1]
    assert list(d1["total_allocated"]) == [72 * MiB, 76 * MiB, 72 * MiB, 8 * MiB]


def test_load_reads_a_snapshot_into_the_memory_view(tmp_path: Path) -> None:
    import gpuprofile

    snap = snapshot()
    profile = gpuprofile.load(_write(tmp_path / "from_a_user.pickle", snap))
    report = profile.typed_report()
    assert report.source.format == FORMAT
    states = {s.device: s for s in report.allocator}
    assert states[0].allocated_bytes == _sizes(snap, 0, "active_allocated")
    assert states[1].inactive_bytes == _sizes(snap, 1, "inactive")
    # The gauge tells of the GPU whose allocated total peaked highest: device 1 held 8 MiB +
    # 4 MiB at once (its entries at 2000 and 2001). The memory view tells of the GPU that ran
    # out of memory, device 0 (its oom entry), with the post-mortem.
    gauge = next(g for g in report.gauges if g.key == "memory")
    assert gauge.value == 12 * MiB and "GPU 1" in (gauge.note or "")
    memory = report.ranks[0].memory
    assert memory is not None and memory.device == 0
    assert memory.failure is not None and memory.failure.requested_bytes == 2**30
    assert memory.failure.needed_bytes == 2**30 - 1234
    # Device 0's entries by hand: B1 allocated, TMP allocated and freed, A2 allocated (its free
    # only requested), over what was allocated before the trace.
    allocated_before = _sizes(snap, 0, "active_allocated") + A2[1] - B1[1] - A2[1]
    running = [allocated_before]
    for change in (B1[1], TMP[1], -TMP[1], A2[1]):
        running.append(running[-1] + change)
    assert memory.peak.total_bytes == max(running)
    text = profile.text()
    assert "allocator, GPU 0 (snapshot): reserved 4.19 MB in 2 segments (1 large)" in text
    assert f"/work/b{SEG_A:x}.py:10 b{SEG_A:x}_0" in text
    assert "out of memory: asked for 1.07 GB with 1.23 kB free on the device" in text


def test_a_capture_records_the_allocator_history_where_cuda_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The capture's side on a machine without CUDA: torch's history calls stand in (their
    arguments recorded), the snapshot is the hand-built one."""
    import torch

    from gpuprofile.capture.allocator_history import MAX_ENTRIES, AllocatorHistory

    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(torch.cuda.memory, "_record_memory_history", lambda **kw: calls.append(kw))
    monkeypatch.setattr(torch.cuda.memory, "_snapshot", snapshot)
    history = AllocatorHistory()
    history.start()
    states = history.stop()
    assert calls == [{"max_entries": MAX_ENTRIES}, {"enabled": None}]
    assert [s.device for s in states] == [0, 1]
    assert states[0].allocated_bytes == _sizes(snapshot(), 0, "active_allocated")
    # The snapshot's clock is not the capture's: its oom entry keeps no time.
    assert states[0].oom is not None and states[0].oom.time_ns is None
    assert history.error is None

    def refuse(**_: Any) -> None:
        raise RuntimeError("record_context_cpp is not supported on this platform")

    monkeypatch.setattr(torch.cuda.memory, "_record_memory_history", refuse)
    refused = AllocatorHistory()
    refused.start()
    assert refused.stop() == () and "not recorded" in (refused.error or "")


def test_a_snapshot_is_a_cuda_workload_and_its_oom_needs_no_notice(tmp_path: Path) -> None:
    import gpuprofile

    report = gpuprofile.load(_write(tmp_path / "s.pickle", snapshot())).typed_report()
    assert report.workload is not None and report.workload.device == "cuda"
    assert not any(n.kind == "out-of-memory" for n in report.notices)
