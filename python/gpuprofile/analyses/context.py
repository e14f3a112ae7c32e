"""One trace and its hardware, with the derived tables every detector reads computed once.

Each property is a pure function of (trace, hardware), memoised so that ten detectors reading
the same roofline or idle gaps do not recompute them. The detectors read an Analysis
(detectors/); it knows none of them.

This is the cache of derived facts: a fact that views and detectors share (decoded inputs, op
costs, the roofline's member sets, communication overlap, carry-over) is a property here, not a
module-level memo. What stays in analyses/memo.py's per_trace is a function of the Trace alone
that code holding no Analysis asks as well (clock alignment before the Analysis exists, the
widget's range requests, views given a trace).
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

import pandas as pd

from gpuprofile.analyses.clock import align_clocks
from gpuprofile.hardware.match import hardware_for_trace
from gpuprofile.hardware.model import Hardware
from gpuprofile.trace.model import Trace

if TYPE_CHECKING:
    from gpuprofile.analyses.carry_over import CarryOver
    from gpuprofile.analyses.comm_overlap import CommOverlap
    from gpuprofile.analyses.framework import Framework
    from gpuprofile.analyses.gauges import Gauge
    from gpuprofile.analyses.job import Job
    from gpuprofile.analyses.recorded import RecordedInputs
    from gpuprofile.analyses.roofline import Members, Roofline


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
        # A job's ranks on one clock first: every wait, bubble and timeline reads aligned time.
        self.trace, self.alignment = align_clocks(trace)
        self.hardware = hardware if hardware is not None else hardware_for_trace(trace)

    @cached_property
    def framework(self) -> Framework:
        """The framework that wrote the profiled program (analyses/framework.py): every
        detector's fix speaks its language (fixes_by_framework.pick)."""
        from gpuprofile.analyses.framework import framework

        return framework(self.trace)

    @cached_property
    def collectives(self) -> pd.DataFrame:
        """Collectives matched across ranks, one row per (instance, rank): arrivals, ends,
        waits (see analyses/collectives.py); empty on one rank."""
        from gpuprofile.analyses.collectives import COLUMNS, match_collectives

        if len(self.trace.ranks) < 2:
            return pd.DataFrame(columns=list(COLUMNS))
        return match_collectives(self.trace)

    @cached_property
    def comm_overlap(self) -> dict[int, CommOverlap | None]:
        """Per rank: its communication and how much compute hid it (analyses/comm_overlap.py);
        the communication detector and the report's distributed section both read it."""
        from gpuprofile.analyses.comm_overlap import comm_overlap

        return {rank: comm_overlap(self.trace, rank) for rank in self.trace.ranks}

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

        return op_costs(self.trace, self.recorded_inputs)

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
            self.trace, self.hardware, self.op_costs, self.kernel_costs, self.roofline_members
        )

    @cached_property
    def idle_gaps(self) -> pd.DataFrame:
        """Every GPU idle interval in each rank's window, with the cause it is attributed to."""
        from gpuprofile.analyses.idle import idle_gaps

        return idle_gaps(self.trace, self.blocking_calls)

    @cached_property
    def blocking_calls(self) -> pd.DataFrame:
        """Runtime calls that make the host wait or copy, with their cause (analyses/idle.py):
        the idle gaps and the sync-stall detector read them."""
        from gpuprofile.analyses.idle import blocking_calls

        return blocking_calls(self.trace)

    @cached_property
    def job(self) -> Job | None:
        """The job view (ranks, stragglers, bubbles, collectives); None on one rank."""
        if len(self.trace.ranks) < 2:
            return None
        from gpuprofile.analyses.job import job

        return job(
            self.trace, self.collectives, self.idle_gaps, self.hardware.peer_link_bytes_per_s
        )

    @cached_property
    def gauges(self) -> list[Gauge]:
        from gpuprofile.analyses.gauges import gauges

        return gauges(self.trace, self.roofline)
