"""The report contract, ``gpuprofile.report/1``, defined once: typed Structs that
``build_report`` returns and every view reads by attribute. JSON is made only at the edges
(``report_json``: ``Profile.report()``, ``--format json``, the history) and read back with
``decode_report``. ``docs/report.schema.json`` and ``js/model/report_types.d.ts`` are generated
from these Structs (``python -m gpuprofile.report.schema_gen --write``); docs/report.md says
what each field means.

Every Struct is frozen: views read the report, none changes it. A field typed ``Number``
holds an int or a float as the analysis gave it (JSON keeps ``1`` and ``1.0`` apart, and the
report's JSON must not change); ``None`` is unknown, and any number computed in floats may be
unknown (a NaN is reported as null).
"""

from __future__ import annotations

import math
from typing import Any

import msgspec

from gpuprofile.analyses.memory_use import MemoryUse
from gpuprofile.report.diff_schema import DiffDocument
from gpuprofile.trace.allocator import AllocatorState

SCHEMA = "gpuprofile.report/1"

Number = int | float
# A hint's numbers: the figures that triggered it, by name.
HintNumber = int | float | str | bool | None


class Source(msgspec.Struct, frozen=True):
    path: str | None
    format: str  # kineto | capture | nsys | ncu | tensorrt | xplane
    version: str | None


class Dropped(msgspec.Struct, frozen=True):
    """Recorded windows dropped unread once the kept ones passed --max-events."""

    windows: int
    events: int | None  # None: torch could not count them
    max_events: int


class Notice(msgspec.Struct, frozen=True):
    kind: str  # partial | steps | dropped | incomplete | ranks | clock | note | ... | roofline
    text: str


class HardwareRoofs(msgspec.Struct, frozen=True):
    """``Hardware.to_dict()``: the roofs the report was measured against."""

    name: str
    source: str  # datasheet | estimated | calibrated | user | unknown
    peak_flops: dict[str, Number]  # FLOP/s per precision
    dram_bytes_per_s: Number | None
    link_bytes_per_s: Number | None
    peer_link_bytes_per_s: Number | None
    sm_count: int | None
    l2_bytes: int | None
    memory_bytes: int | None
    citation: str | None
    notes: str


class Gauge(msgspec.Struct, frozen=True):
    key: str  # gpu-busy | dram-bandwidth | compute | host-link | memory
    label: str
    rank: int
    value: Number | None
    unit: str  # % | B/s | FLOP/s | B
    roof: Number | None
    roof_label: str
    roof_source: str | None
    note: str
    fraction: Number | None


class Evidence(msgspec.Struct, frozen=True):
    table: str  # a Trace table: ops | kernels | memcpy | memset | runtime | memory
    rank: int
    event_ids: list[int]
    windows: list[tuple[int, int]]  # [start_ns, end_ns)
    label: str


class SourceRef(msgspec.Struct, frozen=True):
    """A line of the user's code: ``file`` is "cell [5]" for a notebook cell (see
    analyses/frames.py), else the file's path."""

    file: str
    line: int
    function: str


class Hint(msgspec.Struct, frozen=True):
    """``analyses.hints.Hint.to_dict()``."""

    kind: str
    title: str
    severity: str  # high | medium | low
    gain_ns: int
    gain_method: str
    confidence: str  # high | medium | low
    explanation: str
    numbers: dict[str, HintNumber]
    fix: list[str]
    code: str
    evidence: list[Evidence]
    rank: int | None  # None: about the whole job
    related: list[str]  # roofline point keys
    # The module paths that own its evidence, largest first, and the user's lines (empty
    # without recorded stacks).
    modules: list[str] = []
    sources: list[SourceRef] = []


class RooflinePoint(msgspec.Struct, frozen=True):
    key: str
    level: str  # op | kernel
    name: str
    shapes: str
    rank: int
    count: int
    time_ns: int
    flops: Number | None
    bytes: Number | None
    flops_source: str  # measured | computed | unknown
    bytes_source: str  # measured | computed | partly measured | unknown
    precision: str
    tensor_cores: bool
    intensity: Number | None
    achieved_flops_per_s: Number | None
    achieved_bytes_per_s: Number | None
    bound: str  # memory | compute | unknown
    roof: str | None
    attainable_flops_per_s: Number | None
    pct_of_roof: Number | None
    time_at_roof_ns: Number | None
    saved_ns: Number | None
    event_ids: list[int]
    # As for a Hint: the modules that own its time, largest first, and the user's lines.
    modules: list[str] = []
    sources: list[SourceRef] = []
    # A kernel's name as printed (TopKernel.label); "" for an op, which reads as its name.
    label: str = ""


class Roofline(msgspec.Struct, frozen=True):
    coverage: Number | None  # share of GPU (CPU-only: op) time with known FLOPs
    points: list[RooflinePoint]  # 50 at most
    missing_flops: str  # what the trace's format lacks for a FLOP count


class Workload(msgspec.Struct, frozen=True):
    """What the program is, each field decided from evidence in the trace
    (analyses/workload.py); ``evidence`` holds one sentence per decision."""

    phase: str  # training | inference | mixed | unknown
    engine: str | None  # vllm, sglang, tensorrt, megatron, deepspeed, hf-generate; None
    parallelism: list[str]  # of dp, fsdp, tp, pp, ep, cp
    execution: str  # eager | cuda-graphs | compiled | mixed
    device: str  # cpu | cuda | rocm | tpu
    evidence: list[str]
    optimizers: list[str] = []  # the optimizer classes that stepped ("AdamW")


class Device(msgspec.Struct, frozen=True):
    id: int | None
    name: str | None
    memory_bytes: int | None
    sm_count: int | None
    compute_capability: str | None


class GpuStep(msgspec.Struct, frozen=True):
    name: str
    window_ns: int
    busy_ns: int
    idle_ns: int


class GpuTime(msgspec.Struct, frozen=True):
    window_ns: int
    busy_ns: int
    idle_ns: int
    busy_pct: Number | None
    compute_ns: int
    non_compute_ns: int
    steps: list[GpuStep]


class Counts(msgspec.Struct, frozen=True):
    ops: int
    runtime: int
    kernels: int
    memcpy: int
    memset: int


class TopKernel(msgspec.Struct, frozen=True):
    name: str
    count: int
    total_ns: int
    kind: str = msgspec.field(name="class")  # compute | communication | memory | sync
    # What a tool (Nsight Compute) measured on its launches; None: nothing.
    measured: dict[str, Number | None] | None
    # Why it has its class: what its name says it does, the op that launched it, its stream.
    class_reason: str = ""
    # The name as a person reads it: the called function, told apart from the trace's other
    # kernels (analyses/kernel_names.py); what the text, page and widget print. "": the name.
    label: str = ""


class NameTotal(msgspec.Struct, frozen=True):
    name: str
    count: int
    total_ns: int
    modules: list[str] = []  # top ops: the modules that own its time, largest first


class Copies(msgspec.Struct, frozen=True):
    kind: str  # HtoD | DtoH | DtoD | HtoH | PtoP | unknown
    count: int
    bytes: int | None  # None: a copy of this kind has no size in the trace
    total_ns: int
    gbps: Number | None


class Counter(msgspec.Struct, frozen=True):
    name: str
    device: int
    unit: str
    min: Number | None
    mean: Number | None
    max: Number | None
    count: int


class Sampled(msgspec.Struct, frozen=True):
    interval_s: Number | None
    dropped: int
    counters: list[Counter]
    missing: dict[str, str]  # source -> why it gave nothing


class RankJob(msgspec.Struct, frozen=True):
    """A rank's share of the job view; None for one rank."""

    clock_offset_ns: int
    bubble_fraction: Number | None
    wait_ns: int
    exposed_comm_ns: int
    comm_compute_overlap: Number | None


class ModuleRow(msgspec.Struct, frozen=True):
    """An nn.Module's share of a rank (analyses/modules.py). Times are inclusive of the
    modules it calls; backward is the autograd work its forward ops produced."""

    path: str  # "Transformer.layers.3.mlp", or NO_MODULE: work outside every module
    type: str  # its class name ("" when unknown)
    depth: int  # 0 for a root
    calls: int
    forward_ns: int
    backward_ns: int
    self_ns: int  # forward time outside the modules it calls
    gpu_ns: int  # kernel time launched within, forward and backward
    flops: Number | None
    achieved_flops_per_s: Number | None
    pct_of_roof: Number | None
    alloc_bytes: int | None  # with memory recording
    peak_bytes: int | None
    evidence: list[Evidence]  # its calls (ops), heaviest first: what the timeline outlines


class Phases(msgspec.Struct, frozen=True):
    """A rank's wall time split by phase; the four add up to the wall."""

    forward_ns: int
    backward_ns: int
    optimizer_ns: int
    other_ns: int


class RankReport(msgspec.Struct, frozen=True):
    rank: int
    devices: list[Device]
    wall_ns: int
    gpu: GpuTime | None  # None: no GPU activity on this rank
    counts: Counts
    top_kernels: list[TopKernel]
    top_ops: list[NameTotal]
    copies: list[Copies]
    sampled: Sampled | None
    idle_by_cause: dict[str, int]
    distributed: RankJob | None
    modules: list[ModuleRow] = []  # largest forward + backward first; [] without modules
    phases: Phases | None = None  # None: no host ops to place
    # With allocator events: memory by category and module over time, the peak, and an
    # out-of-memory post-mortem (analyses/memory_use.py).
    memory: MemoryUse | None = None


class Clock(msgspec.Struct, frozen=True):
    method: str  # collective ends | trace clocks | one host's clock
    residual_ns: int | None
    collectives: int


class Straggler(msgspec.Struct, frozen=True):
    rank: int
    wait_caused_ns: int
    arrived_last: int
    cause: str


class Pipeline(msgspec.Struct, frozen=True):
    stages: int
    stage_ranks: list[int]
    microbatches: int
    theoretical_bubble_fraction: Number | None
    bubble_fraction: Number | None
    excess_bubble_fraction: Number | None
    bottleneck_rank: int


class Collective(msgspec.Struct, frozen=True):
    group: str
    name: str
    count: int
    bytes: int | None
    mean_wait_ns: dict[str, Number | None]  # by rank
    alg_bytes_per_s: Number | None
    bus_bytes_per_s: Number | None
    link_roof_bytes_per_s: Number | None
    pct_of_link_roof: Number | None


class StepRank(msgspec.Struct, frozen=True):
    rank: int
    compute_ns: int
    wait_ns: int
    bubble_fraction: Number | None


class JobStep(msgspec.Struct, frozen=True):
    step: int | None
    start_ns: int
    end_ns: int
    ranks: list[StepRank]


class Job(msgspec.Struct, frozen=True):
    """The job view of several ranks (report/distributed.py)."""

    world_size: int | None
    ranks_present: list[int]
    missing_ranks: list[int]
    clock: Clock
    stragglers: list[Straggler]
    pipeline: Pipeline | None
    collectives: list[Collective]
    steps: list[JobStep]


class Report(msgspec.Struct, frozen=True):
    schema: str
    source: Source
    partial: bool
    dropped: Dropped | None
    capture_errors: list[str]
    notices: list[Notice]
    hardware: HardwareRoofs
    gauges: list[Gauge]
    hints: list[Hint]
    idle_by_cause: dict[str, int]
    roofline: Roofline
    ranks: list[RankReport]
    distributed: Job | None
    # An inference engine's profile (TensorRT, TraceMeta.inference) with its precision_mix.
    inference: dict[str, Any] | None
    # What the program is; None only in a report saved before it was added.
    workload: Workload | None = None
    # With no hints: what was looked at and found in order, and what could not be judged.
    no_findings: str = ""
    # The CUDA allocator's state per device at the end, from its snapshot (a --memory capture
    # on CUDA, or a loaded snapshot pickle; docs/memory_snapshot.md); [] otherwise.
    allocator: list[AllocatorState] = []
    # The diff against a baseline run (gpuprofile.diff/1); absent without one.
    baseline: DiffDocument | msgspec.UnsetType = msgspec.UNSET


def to_report(plain: dict[str, Any]) -> Report:
    """The Report of a plain JSON dict (a report as ``report_json`` gave it)."""
    return msgspec.convert(plain, Report)


def decode_report(data: bytes | str) -> Report:
    """The Report of its JSON text (the history, a saved file)."""
    return msgspec.json.decode(data, type=Report)


def report_json(report: Report) -> dict[str, Any]:
    """The report in plain JSON types, as ``Profile.report()`` and ``--format json`` give it:
    lists for tuples (to_builtins keeps an evidence window a tuple), NaN (JSON has none) as
    null, meaning unknown."""
    plain: dict[str, Any] = jsonable(report)
    return plain


def jsonable(value: Any) -> Any:
    """Plain JSON types throughout, so report() equals what --format json prints: Structs
    become dicts, tuples lists, numpy scalars Python numbers, keys text, and NaN (JSON has
    none) null, meaning unknown.

    Made by msgspec's encoder and decoder, in C: a big report is tens of thousands of values,
    which a walk in Python took 10-40 ms over."""
    try:
        return msgspec.json.decode(msgspec.json.encode(value, enc_hook=_numpy_item))
    except UnicodeEncodeError:  # a lone surrogate (text the encoder refuses): walk instead
        return _walked(msgspec.to_builtins(value, enc_hook=_numpy_item))


def _numpy_item(value: Any) -> Any:
    if hasattr(value, "item") and not isinstance(value, str):  # numpy scalars
        return value.item()
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def _walked(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _walked(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_walked(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
