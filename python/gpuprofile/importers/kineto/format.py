"""The Kineto reader's format stage: what a Kineto (Chrome-trace) file holds as gpuprofile
reads it. The msgspec structs of only the fields read (msgspec decodes straight into them, so
a trace is never materialised as Python dicts; unknown keys are skipped), Kineto's category
names and which table each category's events go into, and how a counter's unit rides in its
name. Defined here once: the reader, the Chrome-trace export and the capture share them.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import msgspec


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
    # Any: an address is an int in Kineto's JSON, but nothing else promises it.
    addr: Any = msgspec.field(name="Addr", default=None)
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
    # Autograd's bookkeeping on ops: the sequence number of the forward op that made a grad_fn
    # (the backward engine op carries the same number) and torch's thread counter (forward 0,
    # backward 1: not an OS tid). Any: checked where read.
    sequence: Any = msgspec.field(name="Sequence number", default=None)
    fwd_tid: Any = msgspec.field(name="Fwd thread id", default=None)
    # gpuprofile's Chrome export writes ops.caller_line here: the line of the user's code the
    # event ran from (importers/kineto/capture_ranges.py). Any: checked where read.
    caller_line: Any = msgspec.field(name="Caller line", default=None)
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
    """A trace's header and its events: decoded (Event) or, read in parts, as raw JSON text.

    The header's fields are Any: each is checked where it is read (header.py), so
    that one of an unexpected type is unknown, with a notice, not the whole file refused."""

    traceEvents: list[E]
    schemaVersion: Any = None
    deviceProperties: Any = None
    computeProperties: Any = None
    distributedInfo: Any = None
    baseTimeNanoseconds: Any = None
    record_shapes: Any = None
    profile_memory: Any = None
    with_stack: Any = None
    with_flops: Any = None
    cupti_version: Any = None
    cuda_runtime_version: Any = None
    cuda_driver_version: Any = None
    roctracer_version: Any = None
    hip_runtime_version: Any = None
    host_name: Any = None
    # gpuprofile's own entry in a --steps export: {"windows": [...], "steps": {...}}. Any: a
    # trace of someone else's with such a key must still load.
    gpuprofile: Any = None


# Kineto's category of each GPU table's events, as torch writes them today and as gpuprofile
# exports them (report/chrome_trace.py).
GPU_CATEGORY = {
    "kernels": "kernel",
    "memcpy": "gpu_memcpy",
    "memset": "gpu_memset",
    # record_function ranges on the GPU timeline: read into their own table.
    "gpu_annotations": "gpu_user_annotation",
}
GPU_ANNOTATION = GPU_CATEGORY["gpu_annotations"]
# Kineto category -> our table; old (2020-2021) traces capitalize categories.
TABLE_OF_CATEGORY = {
    **{category: table for table, category in GPU_CATEGORY.items() if table != "gpu_annotations"},
    "Kernel": "kernels",
    "Memcpy": "memcpy",
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
# Allocator events are instants of this name.
MEMORY_EVENT = "[memory]"
# An allocation the allocator refused (torch's reportOutOfMemoryToProfiler): its Bytes the request.
OUT_OF_MEMORY_EVENT = "[OutOfMemory]"
# The profiler's own bookkeeping, in every torch.profiler trace (as RankMeta.skipped names
# them): its window's span and the instants that mark a window's start and end. Not read, and
# no loss: the report does not list them among the events not read.
PROFILER_SPAN = "Trace"
# CUPTI's range profiler: one event per kernel replayed to read its counters (not read; while
# it runs, every kernel is serialized and replayed, so the trace's times are not the program's).
RANGE_PROFILER = "cuda_profiler_range"
PROFILER_MARKERS = frozenset(
    (PROFILER_SPAN, "instant Iteration Start: PyTorch Profiler", "instant Record Window End")
)


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
