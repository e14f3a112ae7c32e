"""Any loaded Trace as a Chrome / Perfetto trace (JSON; gzip when the name ends in .gz).

Ranks are processes (pid = rank, named "rank N"); a rank's CPU threads and GPU streams are its
threads ("GPU D stream S"). Events are "X" slices in Kineto's categories with Kineto's arg
names, so Perfetto, chrome://tracing, HTA and gpuprofile itself read the file as they read a
torch.profiler trace; "ac2g" flows join each runtime call to the GPU work it launched. The
mapping is in docs/data.md.

The file is written event by event (a trace of millions of events never becomes one dict), into
a temporary file renamed over the target, so a failed export leaves no half-written trace.
Times are written from the integer nanoseconds as exact decimals of microseconds.
"""

from __future__ import annotations

import gzip
import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, cast

import msgspec
import numpy as np
import pandas as pd

from gpuprofile.errors import GpuprofileError
from gpuprofile.importers.kineto import GPU_CATEGORY, counter_name
from gpuprofile.report.lanes import (
    LaneKey,
    gpu_group,
    lane_order,
    rank_label,
    stream_label,
    thread_label,
)
from gpuprofile.trace.model import NO_ID, Trace

FLOW_CATEGORY = "ac2g"
_encode = msgspec.json.Encoder().encode


def write_chrome_trace(trace: Trace, path: str | os.PathLike[str]) -> int:
    """Write the trace as a Chrome / Perfetto trace file.

    Parameters:
        trace: the Trace (any source; a job's ranks as they are aligned in it).
        path: the file to write; gzip-compressed when its name ends in ``.gz``.

    Returns:
        The number of trace events written (metadata, slices, counters and flows).

    Raises:
        GpuprofileError: the path's directory does not exist or cannot be written.
    """
    target = Path(path)
    check_writable(target)
    partial = target.with_name(target.name + ".partial")
    count = 0
    try:
        with _open(partial, target.name.endswith(".gz")) as out:
            out.write(b'{"schemaVersion":1,"displayTimeUnit":"ns","baseTimeNanoseconds":')
            out.write(str(trace.meta.origin_ns).encode())
            out.write(b',"deviceProperties":')
            out.write(_encode(_device_properties(trace)))
            out.write(b',"traceEvents":[\n')
            for event in trace_events(trace):
                if count:
                    out.write(b",\n")
                out.write(event)
                count += 1
            out.write(b"\n]}\n")
        os.replace(partial, target)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise GpuprofileError(f"{target}: cannot write the trace: {exc.strerror or exc}") from exc
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return count


def check_writable(target: Path) -> None:
    """Raise GpuprofileError unless ``target`` can be created: its directory exists, and the
    target is not itself a directory. Checked before any work, so a typo fails at once."""
    parent = target.parent
    if not parent.is_dir():
        raise GpuprofileError(f"{target}: no such directory {str(parent)!r}")
    if target.is_dir():
        raise GpuprofileError(f"{target}: is a directory; give a file name")


def _open(path: Path, compress: bool) -> IO[bytes]:
    if compress:
        # Level 6: within a few percent of 9's size at a fraction of its time.
        return cast(IO[bytes], gzip.open(path, "wb", compresslevel=6))
    return path.open("wb", buffering=1 << 20)


def _device_properties(trace: Trace) -> list[dict[str, Any]]:
    # One list per file in Kineto; the first rank's devices, as importers recorded them.
    for rank in trace.ranks:
        props = [d.get("properties") for d in trace.devices(rank)]
        return [p for p in props if isinstance(p, dict)]
    return []


def us(ns: int) -> bytes:
    """Nanoseconds as an exact decimal number of microseconds (1234567 -> b"1234.567")."""
    whole, frac = divmod(abs(ns), 1000)
    return f"{'-' if ns < 0 else ''}{whole}.{frac:03d}".encode()


def us_column(ns: pd.Series) -> list[bytes]:
    """``us`` of every value of an integer column, a list comprehension over numpy's divmod
    rather than a call per value (the export's hottest loop)."""
    values = ns.to_numpy(dtype=np.int64)
    if len(values) and int(values.min()) < 0:
        return [us(v) for v in values.tolist()]
    whole, frac = np.divmod(values, 1000)
    return [b"%d.%03d" % pair for pair in zip(whole.tolist(), frac.tolist())]


def trace_events(trace: Trace) -> Iterator[bytes]:
    """Every event of the exported file, encoded, one at a time: per rank its metadata, then
    its slices, counters and flows."""
    flow_ids = itertools.count(1)
    for rank in _ranks(trace):
        lanes = Lanes.of(trace, rank)
        yield from lanes.metadata(rank)
        rows = {t: _rows_of(trace.table(t), rank) for t in ("ops", "runtime", *GPU_CATEGORY)}
        yield from _cpu_slices(rows["ops"], rank, lanes, ops=True)
        yield from _cpu_slices(rows["runtime"], rank, lanes, ops=False)
        for table, category in GPU_CATEGORY.items():
            yield from _gpu_slices(rows[table], table, category, rank, lanes)
        yield from _counters(_rows_of(trace.counters, rank), rank)
        yield from _flows(rows, rank, lanes, flow_ids)


def _ranks(trace: Trace) -> list[int]:
    seen: set[int] = set(trace.ranks)
    for table in ("ops", "runtime", *GPU_CATEGORY, "counters"):
        seen.update(int(r) for r in pd.unique(trace.table(table)["rank"]))
    return sorted(seen)


def _rows_of(frame: pd.DataFrame, rank: int) -> pd.DataFrame:
    rows: pd.DataFrame = frame.loc[frame["rank"].to_numpy() == rank]
    return rows


class Lanes:
    """A rank's threads: each CPU (pid, tid) and each GPU (device, stream), with the tid it
    has in the file, and those tids in ``lane_order`` (the order the threads are shown in).
    CPU threads keep their tid where it is unique in the rank; GPU streams are numbered after
    the largest CPU tid, so the two never meet."""

    def __init__(self, cpu: dict[tuple[int, int], int], gpu: dict[tuple[int, int], int]) -> None:
        self.cpu = cpu
        self.gpu = gpu
        self.names: dict[int, str] = {}  # by tid, in lane_order

    @classmethod
    def of(cls, trace: Trace, rank: int) -> Lanes:
        threads: set[tuple[int, int]] = set()  # distinct before keyed: tables of millions
        for table in ("ops", "runtime"):
            rows = _rows_of(trace.table(table), rank)
            threads.update(zip(rows["pid"].tolist(), rows["tid"].tolist()))
        streams: set[tuple[int, int]] = set()
        for table in GPU_CATEGORY:
            rows = _rows_of(trace.table(table), rank)
            streams.update(zip(rows["device"].tolist(), rows["stream"].tolist()))
        order = lane_order(
            [LaneKey(rank, "cpu", ids) for ids in threads]
            + [LaneKey(rank, "gpu", ids) for ids in streams]
        )
        lanes = cls({}, {})
        used: set[int] = set()
        spare = max((t for _, t in threads), default=0) + 1
        for pid, tid in (key.ids for key in order if key.kind == "cpu"):
            lane = tid
            if tid in used or tid < 0:  # another process's thread of the same id, or none
                lane, spare = spare, spare + 1
            lanes.cpu[(pid, tid)] = lane
            used.add(lane)
        for device, stream in (key.ids for key in order if key.kind == "gpu"):
            lanes.gpu[(device, stream)], spare = spare, spare + 1
        known = trace.meta.ranks.get(rank)
        thread_names = known.thread_names if known is not None else {}
        pids = {pid for pid, _ in threads}
        for key in order:
            if key.kind == "cpu":
                pid, tid = key.ids
                name = thread_label(tid, thread_names.get(f"{pid}/{tid}"))
                lanes.names[lanes.cpu[(pid, tid)]] = (
                    name if len(pids) < 2 else f"{name} (pid {pid})"
                )
            else:
                device, stream = key.ids
                lanes.names[lanes.gpu[(device, stream)]] = (
                    f"{gpu_group(device)} {stream_label(stream)}"
                )
        return lanes

    def metadata(self, rank: int) -> Iterator[bytes]:
        yield _meta("process_name", rank, 0, {"name": rank_label(rank)})
        yield _meta("process_sort_index", rank, 0, {"sort_index": rank})
        for order, (lane, name) in enumerate(self.names.items()):
            yield _meta("thread_name", rank, lane, {"name": name})
            yield _meta("thread_sort_index", rank, lane, {"sort_index": order})


def _meta(name: str, pid: int, tid: int, args: dict[str, Any]) -> bytes:
    return _encode({"ph": "M", "name": name, "pid": pid, "tid": tid, "args": args})


def _slice(
    name: bytes, category: bytes, pid: int, tid: int, start: bytes, dur: bytes, args: bytes
) -> bytes:
    return b"".join(
        (
            b'{"ph":"X","cat":', category, b',"name":', name,
            b',"pid":', str(pid).encode(), b',"tid":', str(tid).encode(),
            b',"ts":', start, b',"dur":', dur, b',"args":', args, b"}",
        )
    )  # fmt: skip


class _Names:
    """Each distinct name of a categorical column encoded once."""

    def __init__(self, column: pd.Series) -> None:
        categories = column.cat.categories
        self.encoded = [_encode(str(c)) for c in categories] + [b'""']
        self.codes = column.cat.codes.tolist()

    def __getitem__(self, row: int) -> bytes:
        return self.encoded[self.codes[row]]


def _cpu_slices(rows: pd.DataFrame, rank: int, lanes: Lanes, *, ops: bool) -> Iterator[bytes]:
    names, categories = _Names(rows["name"]), _Names(rows["category"])
    columns = [
        rows["pid"].tolist(),
        rows["tid"].tolist(),
        us_column(rows["start_ns"]),
        us_column(rows["dur_ns"]),
        rows["external_id"].tolist(),
    ]
    extra = _op_args(rows) if ops else _runtime_args(rows)
    for i, (pid, tid, start, dur, external) in enumerate(zip(*columns)):
        args = {"External id": external} if external != NO_ID else {}
        args.update(extra(i))
        yield _slice(
            names[i], categories[i], rank, lanes.cpu[(pid, tid)], start, dur, _encode(args)
        )


def _runtime_args(rows: pd.DataFrame) -> Any:
    correlation = rows["correlation"].tolist()
    return lambda i: {"correlation": correlation[i]} if correlation[i] != NO_ID else {}


def _op_args(rows: pd.DataFrame) -> Any:
    dims, types = rows["input_dims"].tolist(), rows["input_types"].tolist()
    flops = rows["flops"].tolist()
    # Autograd's numbers: read back, they put backward work in its module again.
    sequence, fwd_tid = rows["sequence"].tolist(), rows["fwd_tid"].tolist()
    caller_line = rows["caller_line"].tolist()
    as_json: dict[str, Any] = {}

    def args(i: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, text in (("Input Dims", dims[i]), ("Input type", types[i])):
            if isinstance(text, str):
                out[key] = _json_value(text, as_json)
        if flops[i] == flops[i]:  # not NaN
            out["flops"] = flops[i]
        if sequence[i] != NO_ID:
            out["Sequence number"] = sequence[i]
        if fwd_tid[i] != NO_ID:
            out["Fwd thread id"] = fwd_tid[i]
        if caller_line[i] != NO_ID:
            out["Caller line"] = caller_line[i]
        return out

    return args


def _json_value(text: str, cache: dict[str, Any]) -> Any:
    """The JSON text an importer kept (Input Dims), as the value it was; as text if not JSON.
    Once per distinct text."""
    if text not in cache:
        try:
            cache[text] = msgspec.Raw(msgspec.json.encode(msgspec.json.decode(text)))
        except (msgspec.DecodeError, RecursionError):
            cache[text] = text
    return cache[text]


_KERNEL_ARGS = (
    ("registers_per_thread", "registers per thread"),
    ("shared_memory", "shared memory"),
    ("blocks_per_sm", "blocks per SM"),
    ("occupancy", "est. achieved occupancy %"),
    ("flops", "flops"),
    ("bytes", "dram bytes"),
)


def _gpu_slices(
    rows: pd.DataFrame, table: str, category: str, rank: int, lanes: Lanes
) -> Iterator[bytes]:
    names, cat = _Names(rows["name"]), _encode(category)
    columns = [
        rows["device"].tolist(),
        rows["stream"].tolist(),
        us_column(rows["start_ns"]),
        us_column(rows["dur_ns"]),
        rows["external_id"].tolist(),
    ]
    correlation = rows["correlation"].tolist() if "correlation" in rows else None
    extra = _kernel_args(rows) if table == "kernels" else _copy_args(rows, table)
    for i, (device, stream, start, dur, external) in enumerate(zip(*columns)):
        args: dict[str, Any] = {"device": device, "stream": stream}
        if correlation is not None and correlation[i] != NO_ID:
            args["correlation"] = correlation[i]
        if external != NO_ID:
            args["External id"] = external
        args.update(extra(i))
        tid = lanes.gpu[(device, stream)]
        yield _slice(names[i], cat, rank, tid, start, dur, _encode(args))


def _kernel_args(rows: pd.DataFrame) -> Any:
    grid = np.stack([rows[f"grid_{a}"].to_numpy() for a in "xyz"], axis=1).tolist()
    block = np.stack([rows[f"block_{a}"].to_numpy() for a in "xyz"], axis=1).tolist()
    columns = [(key, rows[column].tolist()) for column, key in _KERNEL_ARGS]

    def args(i: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if NO_ID not in grid[i]:
            out["grid"] = grid[i]
        if NO_ID not in block[i]:
            out["block"] = block[i]
        for key, values in columns:
            value = values[i]
            if value != NO_ID and value == value:  # known, not NaN
                out[key] = value
        return out

    return args


def _copy_args(rows: pd.DataFrame, table: str) -> Any:
    if table == "gpu_annotations":
        return lambda i: {}
    nbytes = rows["bytes"].tolist()
    kind = rows["kind"].astype(str).tolist() if table == "memcpy" else None
    pinned = rows["pinned"].tolist() if table == "memcpy" else None

    def args(i: int) -> dict[str, Any]:
        out: dict[str, Any] = {"bytes": nbytes[i]} if nbytes[i] != NO_ID else {}
        if kind is not None and pinned is not None:
            out["kind"] = kind[i]
            out["pinned"] = pinned[i]
        return out

    return args


def _counters(rows: pd.DataFrame, rank: int) -> Iterator[bytes]:
    names = [counter_name(n, u) for n, u in zip(rows["name"].tolist(), rows["unit"].tolist())]
    columns = (rows["device"].tolist(), rows["time_ns"].tolist(), rows["value"].tolist())
    for name, device, time_ns, value in zip(names, *columns):
        if value != value:  # NaN: no JSON number for it
            continue
        head = b'{"ph":"C","name":' + _encode(name) + b',"pid":' + str(rank).encode()
        series = b',"id":' + str(device).encode() if device != NO_ID else b""
        yield (
            head
            + b',"tid":0'
            + series
            + b',"ts":'
            + us(time_ns)
            + b',"args":{"value":'
            + (_encode(value) + b"}}")
        )


def _flows(
    rows: dict[str, pd.DataFrame], rank: int, lanes: Lanes, ids: Iterator[int]
) -> Iterator[bytes]:
    """An "s" at each runtime call and an "f" at each GPU event of the same correlation; one
    flow per GPU event (a graph launch starts many), numbered across the file."""
    runtime = rows["runtime"]
    launches: dict[int, tuple[int, int]] = {}
    for pid, tid, start, corr in zip(
        *(runtime[c].tolist() for c in ("pid", "tid", "start_ns", "correlation"))
    ):
        if corr != NO_ID and corr not in launches:
            launches[corr] = (lanes.cpu[(pid, tid)], start)
    if not launches:
        return
    for table in ("kernels", "memcpy", "memset"):
        gpu = rows[table]
        columns = (gpu[c].tolist() for c in ("device", "stream", "start_ns", "correlation"))
        for device, stream, start, corr in zip(*columns):
            launch = launches.get(corr)
            if launch is None:
                continue
            flow = next(ids)
            yield _flow(b"s", flow, rank, launch[0], launch[1])
            yield _flow(b"f", flow, rank, lanes.gpu[(device, stream)], start)


def _flow(phase: bytes, flow: int, pid: int, tid: int, ts: int) -> bytes:
    # "bp":"e": the end binds to the slice that encloses it (the kernel starting there).
    bind = b',"bp":"e"' if phase == b"f" else b""
    return b'{"ph":"%s","cat":"ac2g","name":"ac2g","id":%d,"pid":%d,"tid":%d,"ts":%s%s}' % (
        phase,
        flow,
        pid,
        tid,
        us(ts),
        bind,
    )
