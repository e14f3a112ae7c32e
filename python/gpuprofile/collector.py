"""The cyclic garbage collector, paused while gpuprofile reads a trace or builds a report.

Reading and reporting allocate many short-lived containers; enough of them are alive when a
young collection runs that they count toward a full one, which then walks every object the
process holds (about 200,000 once torch and pandas are imported: 60-100 ms each time) and finds
nothing, since what gpuprofile leaves behind is freed by reference counting. Paused, the
temporaries those collections would have walked are gone before the pause ends; what stays
alive (a report, an analysis's caches) counts toward the next full collection as any
allocation does, and cycles made meanwhile are collected by the first collection after.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """The collector off for the block, then as it was (a nested or concurrent use whose
    collector was already off leaves it so)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
