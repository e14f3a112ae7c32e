"""Timeline lanes as every view names and orders them: the widget's timeline
(``widget/timeline.py``), the bokeh page, the SVG snapshot and the Chrome trace export.

A lane is a GPU stream (rank, device, stream), a CPU thread (rank, pid, tid) or a counter
series; ``lane_order`` is the one place that orders them. Lanes group by rank, then by device
("GPU 0"), "CPU" or "counters". Views receive rank, device and stream as fields and these names
for display; no view parses a name back.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal, NamedTuple

import msgspec

SEP = " · "


class Lane(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A lane of the widget's timeline (widget/timeline.py builds them; the widget sends them as
    builtins, and schema_gen types them for the JS). ``group`` is its group's identity
    (collapsing keys on it), ``group_label`` what the group's header says under its rank's,
    ``title`` the lane in one line. A GPU lane has device and stream, a CPU lane pid and tid, a
    counter lane device, unit and its finite extremes (None: no finite sample); the fields a
    kind lacks are left out of its JSON. Mutable: ``rows`` (sub-rows) and a counter's extremes
    are known only once its events are laid out."""

    id: int
    rank: int
    kind: Literal["gpu", "cpu", "counter"]
    group: str
    group_label: str
    label: str
    title: str
    rows: int
    device: int | None = None
    stream: int | None = None
    pid: int | None = None
    tid: int | None = None
    unit: str | None = None
    min: float | None = None
    max: float | None = None


def rank_label(rank: int) -> str:
    return f"rank {rank}"


def gpu_group(device: int) -> str:
    """A GPU's lane group under its rank: "GPU 0"."""
    return f"GPU {device}"


CPU_GROUP = "CPU"
COUNTER_GROUP = "counters"


def stream_label(stream: int) -> str:
    return f"stream {stream}"


def thread_label(tid: int, name: str | None = None) -> str:
    """A CPU thread by its name where the trace gives one, else its id as the OS shows it
    (Kineto writes some 32-bit ids as signed numbers)."""
    return name or f"thread {tid % 2**32}"


def group_key(rank: int, group: str, single: bool) -> str:
    """A lane group's identity across the timeline (what collapsing a group keys on): its name,
    qualified by its rank in a job of several."""
    return group if single else f"{rank_label(rank)}{SEP}{group}"


def lane_title(rank: int, group: str, label: str, single: bool) -> str:
    """A lane in one line, for views without a rank header: "rank 1 · GPU 1 · stream 7"."""
    return SEP.join(([] if single else [rank_label(rank)]) + [group, label])


LaneKind = Literal["gpu", "cpu", "counter"]
_KIND_ORDER = {"gpu": 0, "cpu": 1, "counter": 2}


class LaneKey(NamedTuple):
    """A lane before it is named: its rank, its kind and its ids within the rank, (device,
    stream) for a GPU stream, (pid, tid) for a CPU thread as the trace records them, (its
    position among the counter series,) for a counter."""

    rank: int
    kind: LaneKind
    ids: tuple[int, ...]


def lane_order(keys: Iterable[LaneKey]) -> list[LaneKey]:
    """The distinct lanes of ``keys`` (repeats allowed: one per event will do) in the order
    every view shows them, the widget's timeline, the bokeh page, the SVG snapshot and the
    Chrome export alike: by rank; within a rank GPU streams (by device, then stream) first,
    what a GPU profile is read for and where Nsight puts them, then CPU threads (by pid, then
    tid; their Python stacks can be hundreds of rows deep), then counters in their series'
    order."""
    return sorted(set(keys), key=lambda key: (key.rank, _KIND_ORDER[key.kind], key.ids))


def is_single(ranks: Sequence[int] | set[int]) -> bool:
    """Whether a trace's lanes need no rank to tell them apart."""
    return len(set(ranks)) <= 1
