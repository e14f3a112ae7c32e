"""Memoising pure per-trace lookups that code without an Analysis asks too.

Analysis (context.py) is the cache of derived facts; per_trace is kept only for functions of
the Trace alone that are also asked where no Analysis exists, or below the modules that build
one, so moving them would mean passing the Analysis through every such caller:

- match_collectives: align_clocks runs it before the Analysis exists (and on the very trace
  the Analysis then keeps when no shift is needed);
- rank_table, _rows_per_rank (rank_rows), op_parents, id_index, cpu_op_tree: row lookups that
  the analyses' own functions of a trace (idle, flops, collectives, comm_overlap) walk, and
  the widget's requests and marks ask holding only a Trace;
- outermost_cpu_ops: roofline coverage and comm_overlap, and the widget's range requests;
- wall_ns, gpu_time, gpu_activity: per-rank spans that idle, gauges, gpu_steps and the
  report's per-rank section read given a trace.

What needs no cache at all has none (recorded_windows); what only detectors ask is an
Analysis property (framework). names.per_category caches per categories Index, below traces.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from typing import TypeVar
from weakref import WeakKeyDictionary

from gpuprofile.trace.model import Trace

R = TypeVar("R")


def per_trace(fn: Callable[..., R]) -> Callable[..., R]:
    """Cache fn(trace, *args) for as long as the trace lives. fn must be pure: a Trace is
    immutable, so the same arguments give the same answer."""
    cache: WeakKeyDictionary[Trace, dict[tuple[Hashable, ...], R]] = WeakKeyDictionary()

    @functools.wraps(fn)
    def cached(trace: Trace, *args: Hashable) -> R:
        results = cache.setdefault(trace, {})
        if args not in results:
            results[args] = fn(trace, *args)
        return results[args]

    return cached
