"""Memoising pure per-trace analyses, so detectors can share them without passing them around."""

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
