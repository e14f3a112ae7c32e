"""What a Trace knows besides its tables: where it came from, its ranks, and the facts of the
capture that made it.

Each is built once, by the importer or the capture, and never written to afterwards: a changed
fact is a new value (``msgspec.structs.replace``). Times are nanoseconds on the trace's own time
base (from ``origin_ns``) unless a field says "absolute".

Fields, by struct:

- ``TraceMeta``: ``source``; ``origin_ns`` (absolute start of the trace's first event, on the
  source's clock; every table time is relative to it); ``ranks`` (rank -> ``RankMeta``);
  ``windows`` (the recorded windows of a ``--steps`` capture, empty for a trace recorded
  whole); ``steps`` (the steps a capture counted, and its schedule); ``framework`` (versions of
  the capturing framework, ``{"torch": "2.13.0"}``); ``partial`` (the profiled code raised
  before it finished); ``errors`` (what the capture could not do, in the order met);
  ``dropped`` (windows ``--max-events`` dropped unread); ``sampling`` (the gauge sampler's
  settings and what it could not read); ``host`` (the CPU a capture ran on, as calibration
  names it: a capture made on a CPU is measured against that CPU's calibrated roofs when a
  calibration is cached); ``cuda_event_ns`` (on CUDA, the block's device time between two
  CUDA events recorded around it); ``notes`` (what reading the source had to decide that a
  reader should know, e.g. ranks taken from file order); ``inference`` (an inference
  engine's profile, TensorRT: ``layers`` [{op_id, name, type, precision, input_precisions,
  tactic, share_pct, average_ns, median_ns}], ``profile_runs``, ``layer_time_ns``,
  ``inferences``, ``latency`` and ``compute`` ({count, p50_ns, p90_ns, p95_ns, p99_ns,
  mean_ns, min_ns, max_ns}), ``span_ns``, ``throughput_per_s``, ``options``, ``notes``;
  docs/formats/tensorrt.md; None for other traces); ``compiled`` (torch.compile's own
  counts over a capture, read from ``torch._dynamo`` when the program had imported it:
  ``Compiled``; None otherwise and for imported traces).
- ``Compiled``: ``frames`` (frames dynamo compiled during the capture), ``graphs`` (graphs it
  made), ``compile_ns`` (time spent compiling frames, ``_compile.compile_inner``),
  ``graph_breaks`` (each distinct break: ``GraphBreak`` reason, dynamo's explanation, the
  user's file, line and function where dynamo kept them, and how often it was met).
- ``RankMeta``: ``devices`` (device properties, one dict per device the trace lists:
  ``id``, ``name``, ``memory_bytes``, ``sm_count``, ``compute_capability``, ``properties``);
  ``thread_names`` ("pid/tid" -> name); ``files`` (the files this rank was read from);
  ``schema_version``, ``distributed`` (Kineto's ``distributedInfo``), ``record_shapes``,
  ``profile_memory``, ``with_stack``, ``versions`` (CUPTI, CUDA, ROCm versions); ``skipped``
  (events not read, counted by what they were: kinds gpuprofile does not read); ``rejected``
  (events not read because a value they need could not be used, counted by reason: no ts, a
  negative dur, a name that is not text); ``unknown`` (values read as unknown, the event kept,
  counted by reason: a negative grid size, a boolean SM count); ``duplicates`` (events equal in
  every field read to an earlier one, counted once); ``clock_offset_ns`` (added to the rank's own
  clock to place it on the trace's time base; 0 when the ranks' clocks are taken as they are);
  ``base_time_ns`` (Kineto's ``baseTimeNanoseconds``: the absolute time its ``ts`` count from;
  None where the trace has none and its ``ts`` are taken as absolute); ``host_name`` (the
  machine it was recorded on, as Kineto writes it; None when not written).
"""

from __future__ import annotations

from typing import Any

import msgspec

from gpuprofile.trace.allocator import AllocatorState


class Source(msgspec.Struct, frozen=True, kw_only=True):
    # "kineto", "capture", "nsys", "ncu", "tensorrt", "xplane" (importers/formats.py)
    format: str
    version: str | None = None  # the writing tool's version or schema, where it says
    path: str | None = None
    files: tuple[str, ...] = ()


class RankMeta(msgspec.Struct, frozen=True, kw_only=True):
    devices: tuple[dict[str, Any], ...] = ()
    thread_names: dict[str, str] = {}
    files: tuple[str, ...] = ()
    schema_version: int | str | None = None
    distributed: dict[str, Any] | None = None
    record_shapes: bool = False
    profile_memory: bool = False
    with_stack: bool = False
    versions: dict[str, Any] = {}
    skipped: dict[str, int] = {}
    rejected: dict[str, int] = {}
    unknown: dict[str, int] = {}
    duplicates: int = 0
    clock_offset_ns: int = 0
    base_time_ns: int | None = None
    host_name: str | None = None

    def joined(self, other: RankMeta) -> RankMeta:
        """This rank's facts with those of another part of the same rank (a later window):
        files and the counts of events not read add up, names and devices it did not know are
        added."""
        known = {d.get("id") for d in self.devices}
        return msgspec.structs.replace(
            self,
            files=(*self.files, *other.files),
            thread_names={**other.thread_names, **self.thread_names},
            skipped=_added(self.skipped, other.skipped),
            rejected=_added(self.rejected, other.rejected),
            unknown=_added(self.unknown, other.unknown),
            duplicates=self.duplicates + other.duplicates,
            devices=(*self.devices, *(d for d in other.devices if d.get("id") not in known)),
        )


def _added(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    out = dict(a)
    for what, count in b.items():
        out[what] = out.get(what, 0) + count
    return out


class Window(msgspec.Struct, frozen=True, kw_only=True):
    """A recorded window of a ``--steps`` capture: where it lies, and when it was taken."""

    index: int  # its number among the windows the profiler handed over, dropped ones included
    start_ns: int  # its first event's start
    end_ns: int  # its last event's end
    step: int | None = None  # the step count when the profiler handed it over
    events: int | None = None  # timeline events in it
    written_ns: int | None = None  # absolute (time.time_ns()) when it was written out

    def shifted(self, by_ns: int) -> Window:
        """The same window on a time base ``by_ns`` earlier (its times grow by ``by_ns``)."""
        return msgspec.structs.replace(
            self, start_ns=self.start_ns + by_ns, end_ns=self.end_ns + by_ns
        )


class Schedule(msgspec.Struct, frozen=True, kw_only=True):
    """A torch.profiler schedule: skip ``wait`` steps, warm up ``warmup``, record ``active``;
    ``repeat`` times (0: until the capture ends)."""

    wait: int
    warmup: int
    active: int
    repeat: int


class Steps(msgspec.Struct, frozen=True, kw_only=True):
    count: int  # steps marked while the capture ran
    explicit: bool  # marked by gpuprofile.step() (else by optimizer steps)
    schedule: Schedule | None = None  # None: every step was recorded


class Dropped(msgspec.Struct, frozen=True, kw_only=True):
    windows: int  # recorded windows dropped unread
    events: int | None  # the events they held (None: torch could not count them)
    max_events: int  # the cap that dropped them


class Sampling(msgspec.Struct, frozen=True, kw_only=True):
    interval_s: float | None
    missing: dict[str, str] = {}  # source -> why it gave nothing
    dropped: int = 0  # samples the sampler could not keep


class GraphBreak(msgspec.Struct, frozen=True, kw_only=True):
    reason: str  # dynamo's first line ("Failed to trace builtin operator")
    explanation: str = ""  # its "Explanation:" line, when it writes one
    file: str = ""  # the user's innermost frame at the break ("" when dynamo kept none)
    line: int = 0
    function: str = ""
    count: int = 1  # times it was met during the capture


class Compiled(msgspec.Struct, frozen=True, kw_only=True):
    frames: int = 0
    graphs: int = 0
    compile_ns: int = 0
    graph_breaks: tuple[GraphBreak, ...] = ()


class TensorRole(msgspec.Struct, frozen=True, kw_only=True):
    """A tensor whose role the capture knew when it ended (``--memory``): a parameter or a
    gradient of a module it saw called, or an optimizer's state. ``addr`` is its storage's
    address, as the allocator events name the block."""

    addr: int
    bytes: int
    device: int  # -1: host memory
    role: str  # parameters | gradients | optimizer state
    owner: str  # the module path, or the optimizer's class


class TraceMeta(msgspec.Struct, frozen=True, kw_only=True):
    source: Source = Source(format="unknown")
    origin_ns: int = 0
    ranks: dict[int, RankMeta] = {}
    windows: tuple[Window, ...] = ()
    steps: Steps | None = None
    framework: dict[str, str] = {}
    partial: bool = False
    errors: tuple[str, ...] = ()
    dropped: Dropped | None = None
    sampling: Sampling | None = None
    host: str | None = None
    cuda_event_ns: int | None = None
    notes: tuple[str, ...] = ()
    inference: dict[str, Any] | None = None
    # Notebook cells the capture's frames may name: ipykernel's file for a cell's code
    # (``/tmp/ipykernel_<pid>/<hash>.py``) -> the cell's execution count. Empty outside a kernel.
    cells: dict[str, int] = {}
    # With --stack, torch's module events' names -> the modules' paths (``Attention_0`` ->
    # ``Block.attn``), as the capture saw the modules called (capture/module_names.py).
    module_names: dict[str, str] = {}
    compiled: Compiled | None = None
    # The exception that ended a capture's code early ("OutOfMemoryError: CUDA out of ..."),
    # as its type and message; None when the code finished or the trace was imported.
    failure: str | None = None
    # Where the allocator refused (its [OutOfMemory] event): (time_ns, tid); None: not recorded.
    failure_at: tuple[int, int] | None = None
    # With --memory: the tensors whose role the capture knew at its end (TensorRole).
    tensor_roles: tuple[TensorRole, ...] = ()
    # A memory snapshot's allocator state, one per device (trace/allocator.py); () otherwise.
    allocator: tuple[AllocatorState, ...] = ()


class StepsEntry(msgspec.Struct, frozen=True, kw_only=True):
    """gpuprofile's entry in a ``--steps`` export (the file's ``"gpuprofile"`` key): the steps
    and the recorded windows, their times absolute, so the file reads back as the capture."""

    steps: Steps | None = None
    windows: tuple[Window, ...] = ()


def world_size(meta: TraceMeta) -> int | None:
    """The job's size as its ranks' traces declare it (distributedInfo.world_size, the
    largest if they differ); None when none does."""
    sizes = [
        size
        for facts in meta.ranks.values()
        if isinstance(size := (facts.distributed or {}).get("world_size"), int)
        and not isinstance(size, bool)
        and size > 0
    ]
    return max(sizes) if sizes else None
