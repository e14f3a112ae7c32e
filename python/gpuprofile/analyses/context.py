"""One trace and its hardware, with the derived tables every detector reads computed once.

Each fact is a pure function of (trace, hardware), memoised so that ten detectors reading
the same roofline or idle gaps do not recompute them. The detectors read an Analysis
(detectors/); it knows none of them.

This is the one cache of derived facts: what views, detectors, the report and the widget
share is asked of the Analysis, never recomputed from the Trace. One mechanism: a fact of the
whole trace is a cached_property; a fact with a key (a table, a rank) is a method reading a
dict of its own, filled on demand (``_once``). The functions that compute them are plain and
uncached; those below this module that walk the trace's rows take the Analysis as
``lookups.Lookups``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from functools import cached_property
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import pandas as pd

from gpuprofile.analyses import lookups
from gpuprofile.analyses.clock import align_clocks
from gpuprofile.hardware.match import hardware_for_trace
from gpuprofile.hardware.model import Hardware
from gpuprofile.trace.model import Trace

if TYPE_CHECKING:
    from gpuprofile.analyses.carry_over import CarryOver
    from gpuprofile.analyses.code_patterns import CodePatterns
    from gpuprofile.analyses.comm_overlap import CommOverlap
    from gpuprofile.analyses.compiled import CompiledCode
    from gpuprofile.analyses.frames import Sources
    from gpuprofile.analyses.framework import Framework
    from gpuprofile.analyses.gauges import Gauge
    from gpuprofile.analyses.gpu_time import GpuTime
    from gpuprofile.analyses.job import Job
    from gpuprofile.analyses.kernel_kind import KernelClasses
    from gpuprofile.analyses.memory_use import MemoryUse
    from gpuprofile.analyses.modules import Modules
    from gpuprofile.analyses.one_off import OneOff
    from gpuprofile.analyses.recorded import RecordedInputs
    from gpuprofile.analyses.roofline import Members, Roofline
    from gpuprofile.analyses.workload import Workload

K = TypeVar("K", bound=Hashable)
R = TypeVar("R")


def _once(cache: dict[K, R], key: K, compute: Callable[[K], R]) -> R:
    """cache[key], computed on first use: how an Analysis keeps a fact with a key."""
    if key not in cache:
        cache[key] = compute(key)
    return cache[key]


class Analysis:
    """A trace and the roofs it is measured against.

    Parameters:
        trace: the trace; a job's ranks are aligned on one clock (analyses/clock.py), and
            ``self.trace`` is the aligned trace.
        hardware: the roofs; None: those of the device the trace names (its datasheet, an
            estimate from its properties, or this machine's cached calibration for a capture
            made here on the CPU).
    """

    def __init__(self, trace: Trace, hardware: Hardware | None = None) -> None:
        self._start(trace)
        # A job's ranks on one clock first: every wait, bubble and timeline reads aligned time.
        # The alignment matches collectives, which are kept when no clock moved.
        aligned, alignment = align_clocks(trace, self.collectives)
        if aligned is not trace:
            self._start(aligned)
        self.alignment = alignment
        self.hardware = hardware if hardware is not None else hardware_for_trace(trace)

    def _start(self, trace: Trace) -> None:
        """Derive from trace, forgetting every fact of another (one on other clocks)."""
        vars(self).clear()
        self.trace = trace
        self._rows_per_rank: dict[str, dict[int, np.ndarray]] = {}
        self._id_index: dict[str, pd.Index] = {}
        self._rank_table: dict[tuple[str, int], pd.DataFrame] = {}
        self._wall_ns: dict[int, int] = {}
        self._gpu_activity: dict[int, pd.DataFrame] = {}
        self._gpu_time: dict[int, GpuTime | None] = {}
        self._memory_use: dict[int, MemoryUse | None] = {}

    # --- lookups of the trace's rows (analyses/lookups.py) ---------------------------------

    def id_index(self, table: str) -> pd.Index:
        """The ids of a table's rows, as an Index for looking rows up by id (get_indexer)."""
        return _once(self._id_index, table, lambda t: lookups.id_index(self.trace, t))

    def rank_rows(self, table: str, rank: int) -> np.ndarray:
        """The row positions of a rank's rows in a table, in row order (read-only)."""
        per_rank = _once(self._rows_per_rank, table, lambda t: lookups.rows_per_rank(self.trace, t))
        return per_rank.get(rank, lookups.NO_ROWS)

    def rank_table(self, table: str, rank: int) -> pd.DataFrame:
        """``frame[frame["rank"] == rank]`` of a table (the same rows and index): detectors
        share it, and copy-on-write keeps it from being changed under them."""
        return _once(self._rank_table, (table, rank), lambda _: self._rank_slice(table, rank))

    def _rank_slice(self, table: str, rank: int) -> pd.DataFrame:
        rows = self.rank_rows(table, rank)
        frame = self.trace.table(table)
        # A rank's rows are one run in a merged job: a slice shares the columns, where taking
        # positions would copy every column once per rank. Copy-on-write keeps either read-only.
        if len(rows) and rows[-1] - rows[0] + 1 == len(rows):
            return frame.iloc[int(rows[0]) : int(rows[-1]) + 1]
        return frame.iloc[rows]

    @cached_property
    def op_parents(self) -> np.ndarray:
        """Per ops row, the row position of its parent, -1 when the trace has none."""
        return lookups.op_parents(self.trace, self.id_index("ops"))

    @cached_property
    def cpu_op_tree(self) -> lookups.CpuOpTree:
        """The ops' times, kinds, parents and host threads (lookups.CpuOpTree)."""
        return lookups.cpu_op_tree(self.trace, self.op_parents)

    @cached_property
    def outermost_cpu_ops(self) -> np.ndarray:
        """Per ops row: an aten op with no aten op around it (flops.outermost_cpu_ops)."""
        from gpuprofile.analyses.flops import outermost_cpu_ops

        return outermost_cpu_ops(self.trace, self.op_parents)

    # --- per-rank spans ----------------------------------------------------------------------

    def wall_ns(self, rank: int) -> int:
        """From the rank's first event to its last one's end, window by window (summary.py)."""
        from gpuprofile.analyses.summary import wall_ns

        return _once(self._wall_ns, rank, lambda r: wall_ns(self, r))

    def gpu_activity(self, rank: int) -> pd.DataFrame:
        """The rank's kernels, memcpys and memsets as (start_ns, end_ns) (gpu_time.py)."""
        from gpuprofile.analyses.gpu_time import gpu_activity

        return _once(self._gpu_activity, rank, lambda r: gpu_activity(self, r))

    def gpu_time(self, rank: int) -> GpuTime | None:
        """The rank's GPU window, busy and compute time; None without GPU activity."""
        from gpuprofile.analyses.gpu_time import gpu_time

        return _once(self._gpu_time, rank, lambda r: gpu_time(self, r))

    def memory_use(self, rank: int) -> MemoryUse | None:
        """The rank's memory by category and module over time, its peak and an out-of-memory
        failure's post-mortem; None without allocator events (memory_use.py)."""
        from gpuprofile.analyses.memory_use import memory_use

        return _once(self._memory_use, rank, lambda r: memory_use(self, r))

    # --- derived tables ----------------------------------------------------------------------

    @cached_property
    def kernel_classes(self) -> KernelClasses:
        """Each kernel name's class and why: from its name, the trace's record, its launching
        ops and its stream (analyses/kernel_kind.py)."""
        from gpuprofile.analyses.kernel_kind import kernel_classes

        return kernel_classes(self.trace, self.id_index("ops"), self.op_parents)

    @cached_property
    def kernel_labels(self) -> dict[str, str]:
        """Each kernel name's short name, told apart from the trace's other kernels
        (kernel_names.short_kernel_names): what every finding and table prints."""
        from gpuprofile.analyses.kernel_names import parts_per_name, short_kernel_names
        from gpuprofile.analyses.names import categorical, category_texts

        names = categorical(self.trace.kernels["name"])
        texts = category_texts(names).tolist()
        readable = [parts[0] for parts in parts_per_name(names).tolist()]
        return short_kernel_names(texts, readable=dict(zip(texts, readable)))

    def kernel_label(self, name: str) -> str:
        """A kernel's short name as the trace's tables and findings print it."""
        from gpuprofile.analyses.kernel_names import short_kernel_name

        return self.kernel_labels.get(name) or short_kernel_name(name)

    @cached_property
    def framework(self) -> Framework:
        """The framework that wrote the profiled program (analyses/framework.py): every
        detector's fix speaks its language (fixes_by_framework.pick)."""
        from gpuprofile.analyses.framework import framework

        return framework(self.trace)

    @cached_property
    def workload(self) -> Workload:
        """What the program is: phase, engine, parallelism, execution, device, with the
        evidence of each (analyses/workload.py); findings and fixes are chosen by it."""
        from gpuprofile.analyses.workload import workload

        return workload(self, self.compiled)

    @cached_property
    def one_off_costs(self) -> list[OneOff]:
        """Each rank's one-time work: context creation, first calls, compiling, the
        profiler's start (analyses/one_off.py); the report names it first when it dominates."""
        from gpuprofile.analyses.one_off import one_off_costs

        return one_off_costs(self, self.compiled)

    @cached_property
    def collectives(self) -> pd.DataFrame:
        """Collectives matched across ranks, one row per (instance, rank): arrivals, ends,
        waits (see analyses/collectives.py); empty on one rank. Clock alignment reads them
        first (__init__), and they stay when no clock moved."""
        from gpuprofile.analyses.collectives import COLUMNS, match_collectives

        if len(self.trace.ranks) < 2:
            return pd.DataFrame(columns=list(COLUMNS))
        return match_collectives(self)

    @cached_property
    def comm_overlap(self) -> dict[int, CommOverlap | None]:
        """Per rank: its communication and how much compute hid it (analyses/comm_overlap.py);
        the communication detector and the report's distributed section both read it."""
        from gpuprofile.analyses.comm_overlap import comm_overlap

        return {rank: comm_overlap(self, rank) for rank in self.trace.ranks}

    @cached_property
    def carry_over(self) -> list[CarryOver]:
        """GPU work of earlier steps that ran inside the recorded window, per rank that has
        any (analyses/carry_over.py)."""
        from gpuprofile.analyses.carry_over import carry_over

        return carry_over(self.trace)

    @cached_property
    def recorded_inputs(self) -> RecordedInputs:
        """Every op's Input Dims, Input type and Concrete Inputs, each distinct text decoded
        once (analyses/recorded.py): FLOPs and attention read them."""
        from gpuprofile.analyses.recorded import recorded_inputs

        return recorded_inputs(self.trace.ops)

    @cached_property
    def op_costs(self) -> pd.DataFrame:
        """Per op: FLOPs and minimal bytes from recorded shapes (see analyses/flops.py)."""
        from gpuprofile.analyses.flops import op_costs

        return op_costs(self, self.recorded_inputs)

    @cached_property
    def kernel_costs(self) -> pd.DataFrame:
        """Per kernel: FLOPs and bytes inherited from the launching op, split by duration."""
        from gpuprofile.analyses.flops import kernel_costs

        return kernel_costs(self.trace, self.op_costs)

    @cached_property
    def roofline_members(self) -> list[Members]:
        """The ops and kernels the roofline's points group, per level (analyses/roofline.py):
        the roofline and the widget's point members read them."""
        from gpuprofile.analyses.roofline import member_sets

        return member_sets(self.trace, self.op_costs, self.kernel_costs)

    @cached_property
    def roofline(self) -> Roofline:
        from gpuprofile.analyses.roofline import roofline

        return roofline(
            self, self.hardware, self.op_costs, self.kernel_costs, self.roofline_members
        )

    @cached_property
    def far_points(self) -> pd.DataFrame:
        """The op-level roofline points far below their roof, with their gains (empty where
        the hardware is unknown: no distance to a roof then)."""
        from gpuprofile.analyses.roofline import far_points

        if not self.hardware.known:
            return self.roofline.points.iloc[0:0].assign(gain_ns=0.0)
        return far_points(self.roofline.points, self.op_costs)

    @cached_property
    def idle_gaps(self) -> pd.DataFrame:
        """Every GPU idle interval in each rank's window, with the cause it is attributed to."""
        from gpuprofile.analyses.idle import idle_gaps

        return idle_gaps(self, self.blocking_calls)

    @cached_property
    def blocking_calls(self) -> pd.DataFrame:
        """Runtime calls that make the host wait or copy, with their cause (analyses/idle.py):
        the idle gaps and the sync-stall detector read them."""
        from gpuprofile.analyses.idle import blocking_calls

        return blocking_calls(self)

    @cached_property
    def job(self) -> Job | None:
        """The job view (ranks, stragglers, bubbles, collectives); None on one rank."""
        if len(self.trace.ranks) < 2:
            return None
        from gpuprofile.analyses.job import job

        return job(
            self.trace,
            self.collectives,
            self.idle_gaps,
            self.kernel_classes,
            self.kernel_labels,
            self.hardware.peer_link_bytes_per_s,
        )

    @cached_property
    def modules(self) -> Modules:
        """Each op's and kernel's nn.Module call and phase (analyses/modules.py)."""
        from gpuprofile.analyses.modules import attribute_modules

        return attribute_modules(self)

    @cached_property
    def compiled(self) -> CompiledCode:
        """torch.compile's regions, kernels, compile time and breaks (analyses/compiled.py)."""
        from gpuprofile.analyses.compiled import compiled_code

        return compiled_code(self, self.modules)

    @cached_property
    def sources(self) -> Sources:
        """Each op's and kernel's innermost frame of the user's code (analyses/frames.py)."""
        from gpuprofile.analyses.frames import attribute_sources

        return attribute_sources(self)

    @cached_property
    def code_patterns(self) -> CodePatterns:
        """Loops, mask routing and elementwise chains in module calls (analyses/code_patterns.py):
        three detectors read them, and each leaves out what another claims."""
        from gpuprofile.analyses.code_patterns import code_patterns
        from gpuprofile.analyses.pattern_times import achievable_ns
        from gpuprofile.analyses.thresholds import ACHIEVABLE_ROOF_SHARE

        bandwidth = self.hardware.dram_bytes_per_s
        roof = (
            achievable_ns(self, self.op_costs, bandwidth, ACHIEVABLE_ROOF_SHARE)
            if bandwidth and not self.modules.calls.empty
            else None
        )
        return code_patterns(self, self.modules, self.sources, roof)

    @cached_property
    def gauges(self) -> list[Gauge]:
        from gpuprofile.analyses.gauges import gauges

        return gauges(
            self,
            self.roofline,
            {rank: self.gpu_time(rank) for rank in self.trace.ranks},
            lambda rank: use.peak.total_bytes if (use := self.memory_use(rank)) else None,
        )
