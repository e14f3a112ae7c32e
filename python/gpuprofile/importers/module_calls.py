"""Module-call rows (``nn.Module: {path} ({Type})``, the Trace contract's capture form) built
from a module chain known per event: what an importer writes when its format names each op's
module stack (pyprof's funcStack, JAX's scope path) but records no range for the module."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpuprofile.trace.model import MODULE_PREFIX

Chain = list[tuple[str, str]]  # [(path, type)], outermost first; each path extends the last


def module_calls(
    chains: dict[int, Chain], start: Any, dur: Any, pid: Any, tid: Any
) -> dict[str, Any]:
    """Rows of module calls over the events ``chains`` names (event row -> its chain): per
    thread (pid, tid) in time order, a call stays open while consecutive events' chains pass
    through its path and spans their extent; nested calls follow the chains. Two calls of one
    module with no event of another chain between them read as one call (the events tell no
    more). Returns columns name, type, start_ns, dur_ns, pid, tid."""
    rows = sorted(chains, key=lambda r: (int(pid[r]), int(tid[r]), int(start[r])))
    calls: list[tuple[str, str, int, int, int, int]] = []
    open_: list[list[Any]] = []  # [path, type, start, end, pid, tid]
    thread: tuple[int, int] | None = None
    for row in rows:
        here = (int(pid[row]), int(tid[row]))
        if here != thread:
            calls.extend(tuple(o) for o in open_)
            open_, thread = [], here
        chain = chains[row]
        same = 0
        while same < min(len(open_), len(chain)) and open_[same][0] == chain[same][0]:
            same += 1
        calls.extend(tuple(o) for o in open_[same:])
        del open_[same:]
        begin, end = int(start[row]), int(start[row]) + int(dur[row])
        open_.extend([path, kind, begin, end, *here] for path, kind in chain[same:])
        for o in open_:
            o[3] = max(o[3], end)
    calls.extend(tuple(o) for o in open_)
    return {
        "name": [f"{MODULE_PREFIX}{path} ({kind})" for path, kind, *_ in calls],
        "type": [kind for _, kind, *_ in calls],
        "start_ns": np.array([c[2] for c in calls], np.int64),
        "dur_ns": np.array([c[3] - c[2] for c in calls], np.int64),
        "pid": np.array([c[4] for c in calls], np.int64),
        "tid": np.array([c[5] for c in calls], np.int64),
    }
