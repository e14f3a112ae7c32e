"""Host work outside the GPU window: a step whose wall is mostly time before the first GPU work
or after the last (preprocessing, decoding, postprocessing, logging) is bound by that host
work, whatever the GPU findings inside the window say.

Fires when the time outside the rank's GPU window holds at least the share of the wall the
thresholds table sets (half: the wall is more than twice the GPU window). Its main ops are the
outermost aten ops (the ops the program called, not those they call) by their time outside the
window. One-time work (analyses/one_off.py: context creation, compiling) is the one-off
notice's and is left out of both. Gain: that time, an upper bound (moving the work off the
critical path, to loader workers or the GPU, hides it; some of it may be needed where it is).
Confidence low: the trace shows where the time went, not whether it can move. When
torch.compile's dispatch of its graph holds half of it, the fix is CUDA graphs, not loaders.
Traces of ``--steps`` windows are left out: the time between windows is not recorded.
"""

from __future__ import annotations

import numpy as np

from gpuprofile.analyses.claims import Claim
from gpuprofile.analyses.context import Analysis
from gpuprofile.analyses.hints import Evidence, Hint
from gpuprofile.analyses.host_ops import main_ops, windows_of
from gpuprofile.analyses.intervals import IntervalSet
from gpuprofile.analyses.summary import span_ns
from gpuprofile.analyses.thresholds import MIN_OUTSIDE_NS, worth_reporting
from gpuprofile.units import format_fraction, format_time

FIX = (
    "Move the host work off the step's critical path: prepare batches in DataLoader workers "
    "(num_workers, prefetch_factor) or on the GPU (torchvision.transforms.v2 on CUDA "
    "tensors), and start the next batch's preparation while the GPU runs this one.",
    "If that work is not what you are tuning, profile the model step alone (gpuprofile.step() "
    "around it, or --steps) so it does not hide the GPU's share.",
)
# torch.compile's own dispatch (guards, cache lookup, launching its kernels): the host time is
# the compiled graph's calling, not data preparation.
_COMPILED_DISPATCH = ("Torch-Compiled Region", "TorchDynamo Cache Lookup", "CompiledFunction")
COMPILED_FIX = (
    "This host time is torch.compile calling its graph (guard checks, the cache lookup, "
    'launching its kernels) for little GPU work: compile with mode="reduce-overhead" so a '
    "call in a loop replays a CUDA graph, or compile a larger part of the step so each call "
    "launches more work.",
    FIX[1],
)
COMPILED_CODE = 'step = torch.compile(step, mode="reduce-overhead")  # CUDA graphs: one launch\n'
CODE = """\
loader = DataLoader(dataset, batch_size=64, num_workers=4, pin_memory=True,
                    prefetch_factor=4, persistent_workers=True)
"""


def detect(analysis: Analysis) -> list[Hint]:
    trace = analysis.trace
    if trace.meta.windows:
        return []
    hints = []
    for rank in trace.ranks:
        gpu = analysis.gpu_time(rank)
        if gpu is None:
            continue
        start, end = span_ns(analysis, rank)
        wall = end - start
        windows = [(start, gpu.start_ns), (gpu.start_ns + gpu.window_ns, end)]
        windows = [(a, b) for a, b in windows if b > a]
        # One-time work (context creation, compiling) is the one-off notice's: not claimed here.
        once = _one_off_set(analysis, rank)
        outside = sum(b - a for a, b in windows) - int(
            sum(once.coverage(np.array([a]), np.array([b]))[0] for a, b in windows)
        )
        if outside < MIN_OUTSIDE_NS or not worth_reporting("host-outside-gpu", outside, wall):
            continue
        main = main_ops(analysis, rank, windows_of(windows), _within(once, windows))
        said = ", ".join(f"{name} {format_time(ns)}" for name, ns in main.items())
        dispatch = sum(ns for name, ns in main.items() if name.startswith(_COMPILED_DISPATCH))
        compiled = dispatch * 2 >= outside
        hints.append(
            Hint(
                kind="host-outside-gpu",
                subject="host work outside the GPU window",
                title=(
                    f"Host work outside the GPU window takes {format_fraction(outside / wall)} "
                    f"of the wall ({format_time(outside)})"
                ),
                basis_ns=wall,
                gain_ns=outside,
                claim=Claim(np.array([a for a, _ in windows]), np.array([b for _, b in windows])),
                gain_method=(
                    "The rank's wall time before its first GPU work and after its last, less "
                    "one-time work (the one-off notice's): what moving that host work off the "
                    "critical path could hide, an upper bound."
                ),
                confidence="low",
                explanation=(
                    f"Of the {format_time(wall)} wall, the GPU worked within a "
                    f"{format_time(gpu.window_ns)} window; {format_time(outside)} passed on the "
                    "host before it or after it, one-time work apart"
                    + _where(main, outside, said)
                    + ". Findings inside the GPU window cannot speed that part up."
                ),
                numbers={
                    "wall_ns": wall,
                    "gpu_window_ns": gpu.window_ns,
                    "outside_ns": outside,
                    "main_ops": said,
                },
                fix=COMPILED_FIX if compiled else FIX,
                code=COMPILED_CODE if compiled else CODE,
                evidence=(
                    Evidence(
                        table="ops",
                        rank=rank,
                        windows=tuple(windows),
                        label="host time outside the GPU window",
                    ),
                ),
                rank=rank,
            )
        )
    return hints


def _where(main: dict[str, int], outside: int, said: str) -> str:
    """Where the time went: "mostly in" the ops when they hold most of it, else how little
    of it any traced op holds."""
    held = sum(main.values())
    if held >= outside / 2:
        return f", mostly in {said}"
    if held:
        return f"; traced ops hold {format_time(held)} of it ({said}), the rest no traced op"
    return "; no traced op holds it (untraced Python, I/O or waiting)"


def _one_off_set(analysis: Analysis, rank: int) -> IntervalSet:
    mine = [o for o in analysis.one_off_costs if o.rank == rank]
    start = np.array([o.start_ns for o in mine], np.int64)
    return IntervalSet(start, start + np.array([o.dur_ns for o in mine], np.int64))


def _within(once: IntervalSet, windows: list[tuple[int, int]]) -> IntervalSet:
    """The one-time work's intervals cut to the windows (main_ops subtracts them op by op)."""
    starts, ends = [], []
    for a, b in windows:
        lo, hi = np.maximum(once.block_start, a), np.minimum(once.block_end, b)
        keep = hi > lo
        starts.append(lo[keep])
        ends.append(hi[keep])
    return IntervalSet(
        np.concatenate(starts or [np.zeros(0, np.int64)]),
        np.concatenate(ends or [np.zeros(0, np.int64)]),
    )
