"""Host-device copies that are slower than they need to be, or block other work.

1. Pageable copies (memcpy rows HtoD/DtoH whose host side is pageable: "Pageable" in the
   CUPTI name; AMD traces write "Host" for both kinds, so they are not judged). The driver
   stages them through a pinned bounce buffer, so they run below the pinned rate (often about
   half) and the host blocks until the staging is done. Gain: (a) the copy time above the
   pinned rate, from the pinned copies of the same direction in this trace when there are
   any, else Hardware.link_bytes_per_s, else half the copy time; plus (b) the GPU idle that
   analyses/idle.py attributes to host-device copies (the host blocked in a copy or in the
   sync after it), which pin_memory + non_blocking=True removes.
2. Pinned copies on a compute stream (a stream that also runs kernels of the rank): they
   serialise with the kernels around them. Gain: their duration, an upper bound reached when
   a side stream prefetches them a step ahead (confidence medium).

Copies smaller than MIN_COPY_BYTES (thresholds.py) are latency-bound (a scalar's .item()):
ignored. So are the program's setup copies: those that end before its first forward
(analyses/modules.py's phases) outside any step, such as ``model.to("cuda")`` moving the
weights once; pinning them would save nothing the steady state spends. The finding names them.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pandas as pd

from gpuprofile.analyses import idle
from gpuprofile.analyses.claims import frame_claim
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.fixes_by_framework import COPY_STREAM, PAGEABLE, Fix, pick
from gpuprofile.analyses.framework import Framework
from gpuprofile.analyses.hints import Hint, heaviest_events
from gpuprofile.analyses.modules import FORWARD
from gpuprofile.analyses.names import matches
from gpuprofile.analyses.steps import step_spans
from gpuprofile.analyses.summary import span_ns
from gpuprofile.analyses.thresholds import MIN_COPY_BYTES, MIN_PAGEABLE_BYTES, worth_reporting
from gpuprofile.trace.model import HOST_DEVICE_KINDS
from gpuprofile.units import format_bytes, format_bytes_per_s, format_time

PAGEABLE_SLOWDOWN = 2.0  # pinned / pageable rate when nothing better is known
# A copy from pageable host memory, as the importers name it: "Memcpy HtoD (Pageable -> Device)".
_PAGEABLE = re.compile("Pageable")

FIX_PAGEABLE = (
    "Allocate host tensors in pinned memory: DataLoader(pin_memory=True), tensor.pin_memory(), "
    "or torch.empty(..., pin_memory=True) for buffers you reuse.",
    "Copy with .to(device, non_blocking=True) so the host does not wait for the copy.",
    "For results coming back, copy into a pinned buffer with non_blocking=True and read it "
    "after a CUDA event, not right away.",
)
FIX_STREAM = (
    "Issue host-device copies on a separate stream and prefetch the next batch while the "
    "current one computes; make the compute stream wait on an event, not the host.",
    "Keep the host buffers pinned (required for copies to overlap compute).",
)
CODE_PAGEABLE = """\
loader = DataLoader(dataset, batch_size=64, num_workers=4, pin_memory=True)
for x, y in loader:
    x = x.to("cuda", non_blocking=True)   # pinned + non_blocking: async DMA, host runs on
    y = y.to("cuda", non_blocking=True)
"""
CODE_STREAM = """\
copy_stream = torch.cuda.Stream()
def prefetch(batch):
    with torch.cuda.stream(copy_stream):
        return [t.pin_memory().to("cuda", non_blocking=True) for t in batch]
next_batch = prefetch(first)
for batch in loader:
    torch.cuda.current_stream().wait_stream(copy_stream)
    current, next_batch = next_batch, prefetch(batch)
    for t in current:
        t.record_stream(torch.cuda.current_stream())
    step(current)
"""


def detect(analysis: Analysis) -> list[Hint]:
    trace = analysis.trace
    hints = []
    for rank in trace.ranks:
        memcpy = analysis.rank_table("memcpy", rank)
        host_device = memcpy[memcpy["kind"].isin(HOST_DEVICE_KINDS)]
        sized = host_device[host_device["bytes"] >= MIN_COPY_BYTES]
        is_setup = _setup_test(analysis, rank)
        setup = is_setup(sized)
        copies = sized[~setup]
        pageable = (~copies["pinned"]) & matches(copies["name"], _PAGEABLE)
        gaps = analysis.idle_gaps
        blocked = gaps[(gaps["rank"] == rank) & (gaps["cause"] == idle.HOST_DEVICE_COPY)]
        blocked = blocked[~is_setup(blocked)]
        hint = _pageable(
            analysis, rank, copies, pageable.to_numpy(), blocked, len(host_device), sized[setup]
        )
        if hint is not None:
            hints.append(hint)
        hint = _compute_stream(analysis, rank, copies[copies["pinned"]], analysis.framework)
        if hint is not None:
            hints.append(hint)
    return hints


def _setup_test(analysis: Analysis, rank: int) -> Callable[[pd.DataFrame], np.ndarray]:
    """A test of rows (start_ns, dur_ns), per row: whether it ends before the rank's first
    forward op and starts in no step, the program's setup (its model moved to the GPU), done
    once. The boundary and the steps are found once per rank."""
    ops = analysis.rank_rows("ops", rank)
    forward = ops[analysis.modules.op_phase[ops] == FORWARD]
    if not len(forward):
        return lambda rows: np.zeros(len(rows), bool)
    first = int(analysis.trace.ops["start_ns"].to_numpy()[forward].min())
    starts, ends = step_spans(analysis.rank_table("ops", rank), span_ns(analysis, rank)[0])

    def is_setup(rows: pd.DataFrame) -> np.ndarray:
        start = rows["start_ns"].to_numpy(np.int64)
        end = start + rows["dur_ns"].to_numpy(np.int64)
        in_step = np.zeros(len(start), bool)
        if len(starts):
            at = np.searchsorted(starts, start, side="right") - 1  # steps do not overlap
            in_step = (at >= 0) & (start < ends[np.maximum(at, 0)])
        return np.asarray((end <= first) & ~in_step)

    return is_setup


def _pageable(
    analysis: Analysis,
    rank: int,
    copies: pd.DataFrame,
    pageable: np.ndarray,
    blocked: pd.DataFrame,
    host_device: int,
    setup: pd.DataFrame,
) -> Hint | None:
    slow = copies[pageable]
    if int(slow["bytes"].sum()) < MIN_PAGEABLE_BYTES:
        return None
    staging_ns = 0
    sources = set()
    for kind, rows in slow.groupby("kind", observed=True):
        rate, source = _pinned_rate(copies[~pageable & (copies["kind"] == kind)], analysis)
        sources.add(source)
        at_pinned = rows["bytes"] / rate if rate else rows["dur_ns"] / PAGEABLE_SLOWDOWN
        staging_ns += round(float((rows["dur_ns"] - at_pinned).clip(lower=0).sum()))
    blocked_ns = int(blocked["dur_ns"].sum())
    gain = staging_ns + blocked_ns
    wall = analysis.wall_ns(rank)
    total_ns = int(slow["dur_ns"].sum())
    total_bytes = int(slow["bytes"].sum())
    kinds = ", ".join(
        f"{kind} x{len(rows)} ({format_bytes(int(rows['bytes'].sum()))}, "
        f"{format_time(int(rows['dur_ns'].sum()))})"
        for kind, rows in slow.groupby("kind", observed=True)
    )
    return Hint(
        kind="pageable-copy",
        subject="pageable copies",
        title=(
            f"{len(slow)} pageable {'copy' if len(slow) == 1 else 'copies'} "
            f"({format_bytes(total_bytes)}) took {format_time(total_ns)}"
        ),
        basis_ns=wall,
        gain_ns=gain,
        claim=frame_claim(slow).union(frame_claim(blocked)),
        gain_method=(
            "Copy time above the pinned rate ("
            + "; ".join(sorted(sources))
            + ") plus GPU idle while the host was blocked in host-device copies."
        ),
        confidence="medium",
        explanation=(
            f"Rank {rank}: {len(slow)} of its {host_device} host-device copies (the copy "
            f"table's HtoD and DtoH rows) were from pageable memory: {kinds}, "
            f"{format_bytes_per_s(total_bytes / total_ns * 1e9)} on average. Pinned, they "
            f"would take {format_time(staging_ns)} less; the GPU also sat idle "
            f"{format_time(blocked_ns)} in {len(blocked)} gaps while the host was blocked in "
            "copies."
            + (
                f" {len(setup)} {'copy' if len(setup) == 1 else 'copies'} "
                f"({format_bytes(int(setup['bytes'].sum()))}, "
                f"{format_time(int(setup['dur_ns'].sum()))}) ran before the first forward, "
                "outside any step: the program's setup (its model moved to the GPU once), not "
                "judged here."
                if len(setup)
                else ""
            )
            + (
                f" The other {small} copies are under {format_bytes(MIN_COPY_BYTES)}: their "
                "time is the call's latency, not the bytes, and they are not judged here."
                if (small := host_device - len(copies) - len(setup))
                else ""
            )
        ),
        numbers={
            "copies": len(slow),
            "host_device_copies": host_device,
            "small_copies": host_device - len(copies) - len(setup),
            "setup_copies": len(setup),
            "bytes": total_bytes,
            "copy_ns": total_ns,
            "staging_ns": staging_ns,
            "blocked_idle_ns": blocked_ns,
        },
        **pick(analysis.framework, Fix(FIX_PAGEABLE, CODE_PAGEABLE), PAGEABLE)._asdict(),
        evidence=(heaviest_events(slow, "memcpy", rank, "pageable copies"),),
        rank=rank,
    )


def _pinned_rate(pinned: pd.DataFrame, analysis: Analysis) -> tuple[float | None, str]:
    """Bytes per ns a pinned copy reaches: measured here, else the hardware's link."""
    if len(pinned) and int(pinned["dur_ns"].sum()) > 0:
        rate = float(pinned["bytes"].sum()) / float(pinned["dur_ns"].sum())
        return rate, f"pinned copies in this trace: {format_bytes_per_s(rate * 1e9)}"
    link = analysis.hardware.link_bytes_per_s
    if link:
        return link / 1e9, f"host link of {analysis.hardware.name}: {format_bytes_per_s(link)}"
    return None, f"assumed {PAGEABLE_SLOWDOWN:g}x the pageable rate"


def _compute_stream(
    analysis: Analysis, rank: int, pinned: pd.DataFrame, kind: Framework
) -> Hint | None:
    kernels = analysis.rank_table("kernels", rank)
    compute = set(zip(kernels["device"].tolist(), kernels["stream"].tolist(), strict=True))
    on_compute = np.fromiter(
        ((d, s) in compute for d, s in zip(pinned["device"], pinned["stream"], strict=True)),
        bool,
        len(pinned),
    )
    serial = pinned[on_compute]
    gain = int(serial["dur_ns"].sum())
    wall = analysis.wall_ns(rank)
    if not worth_reporting("pageable-copy", gain, wall):
        return None
    streams = sorted(set(serial["stream"].tolist()))
    return Hint(
        kind="pageable-copy",
        subject="pinned copies on the compute stream",
        title=(
            f"{len(serial)} host-device {'copy shares' if len(serial) == 1 else 'copies share'}"
            f" the compute stream ({format_time(gain)})"
        ),
        basis_ns=wall,
        gain_ns=gain,
        claim=frame_claim(serial),
        gain_method=(
            "Duration of pinned host-device copies on a stream that also runs kernels: on a "
            "side stream, prefetched a step ahead, they overlap compute. An upper bound."
        ),
        confidence="medium",
        explanation=(
            f"Rank {rank}: {len(serial)} pinned copies "
            f"({format_bytes(int(serial['bytes'].sum()))}, {format_time(gain)}) ran on "
            f"stream(s) {', '.join(map(str, streams))}, where kernels run too, so no kernel of "
            "that stream could overlap them."
        ),
        numbers={"copies": len(serial), "bytes": int(serial["bytes"].sum()), "copy_ns": gain},
        **pick(kind, Fix(FIX_STREAM, CODE_STREAM), COPY_STREAM)._asdict(),
        evidence=(heaviest_events(serial, "memcpy", rank, "copies on the compute stream"),),
        rank=rank,
    )
