"""Memoising pure per-trace lookups that code without an Analysis asks too.

Analysis (context.py) is the cache of derived facts; per_trace is kept only for functions of
the Trace alone (row lookups, per-rank spans, GPU time) that are also asked where no Analysis
exists: align_clocks runs before it (and matches collectives on the very trace the Analysis
then keeps when no shift is needed), and the widget's range requests and some views hold only a
Trace. Moving those onto the Analysis means passing it through every such caller.
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
