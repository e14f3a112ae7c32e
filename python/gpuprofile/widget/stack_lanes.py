"""A ``--stack`` capture's thread lanes start at the user's code.

Kineto records every Python frame: about 30 levels of ipykernel, asyncio and IPython frames
enclose a notebook cell's code, and torch's own frames sit between it and the ops. The timeline
leaves library frames out (analyses/frames.py decides which, from the path text), so a lane's
nesting starts at the user's first frame; ops, module calls and the user's frames stay. Depths
are computed by the layout from the events shown, so leaving rows out re-bases them.
A trace without any user frame (a library's own trace) keeps all its frames: nothing would be
left to start at.

Cell frames read ``cell [5] line 12: forward`` rather than ipykernel's temporary file name.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpuprofile.analyses.frames import cell_numbers, frame_kinds, frame_title
from gpuprofile.trace.model import Trace


def shown_op_rows(trace: Trace) -> np.ndarray | None:
    """Positions of the ops rows the timeline shows, ascending; None: all of them."""
    ops = trace.ops
    is_frame = (ops["category"] == "python_function").to_numpy()
    if not is_frame.any():
        return None
    frame_rows = np.flatnonzero(is_frame)
    user, library = frame_kinds(ops["name"].iloc[frame_rows])
    if not user.any():
        return None
    hidden = np.zeros(len(ops), bool)
    hidden[frame_rows[library]] = True
    return np.flatnonzero(~hidden)


def op_titles(trace: Trace) -> Callable[[str], str]:
    """How an op's name reads on the timeline: cell frames by cell number and line."""
    cells = cell_numbers(trace.meta.cells)
    return lambda name: frame_title(name, cells)
