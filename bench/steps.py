"""What --steps costs a CPU training loop, window by window, against torch.profiler's own schedule.

    python bench/steps.py [--repeat N] [--steps S] [--active A]

The MLP of bench/overhead.py trains S steps under a schedule (wait 0, warmup 1, active A,
repeat 0: a window every A + 1 steps), best of N per mode, modes interleaved:
  torch         torch.profiler with that schedule, on_trace_ready writing each window's Chrome
                trace (the least a tool must do to see a window)
  ours          gpuprofile.profile(steps=(0, A, 0)): each window written out as it ends (as
                torch's does) and scanned, all read in one pass at the end, sampler on
  ours + live   the same with a live widget refilled off the loop's thread (as in a notebook)
Loop time is the training loop alone; total adds the end of the capture (the final merge).
Not a test: it prints, and always exits 0.
"""

from __future__ import annotations

import os

os.environ["OMP_NUM_THREADS"] = "1"

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from overhead import best, collected, interleaved, make_training, torch_profiler


def run_torch(train: Callable[[], None], active: int, directory: Path) -> dict[str, float]:
    from torch.profiler import schedule

    windows = [0]

    def ready(prof: Any) -> None:
        prof.export_chrome_trace(str(directory / f"w{windows[0] % 4}.json"))
        windows[0] += 1

    with collected():
        started = time.perf_counter()
        with torch_profiler(
            schedule=schedule(wait=0, warmup=1, active=active, repeat=0), on_trace_ready=ready
        ) as prof:
            train(lambda: prof.step())
            ended = time.perf_counter()
        done = time.perf_counter()
    return {"loop": ended - started, "total": done - started, "windows": float(windows[0])}


def run_ours(train: Callable[[], None], active: int, live: bool) -> dict[str, float]:
    import gpuprofile
    from gpuprofile.capture.options import CaptureOptions
    from gpuprofile.capture.session import capture
    from gpuprofile.widget.live import LiveFeed
    from gpuprofile.widget.widget import ProfileWidget

    feed = LiveFeed(ProfileWidget()) if live else None
    options = CaptureOptions(steps=(0, active, 0))
    with collected():
        if feed is not None:
            feed.start()
        started = time.perf_counter()
        # As in a notebook: readings, step counts and windows all go to the live panel.
        hooks = feed.hooks(None) if feed is not None else {}
        with capture(options, **hooks) as recording:
            train(gpuprofile.step)
            ended = time.perf_counter()
            if feed is not None:
                feed.cell_ended()
        done = time.perf_counter()
    refills = feed.refills if feed is not None else None
    return {
        "loop": ended - started,
        "total": done - started,
        "windows": float(len(recording.trace.meta.windows)),
        "refills": float(refills.refills) if refills is not None else 0.0,
        "refill_s": refills.busy_s if refills is not None else 0.0,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--active", type=int, default=5)
    args = parser.parse_args(argv)
    import torch

    step_once = make_training(1)

    def train(step: Callable[[], None]) -> None:
        for _ in range(args.steps):
            step_once()
            step()

    step_once()
    with tempfile.TemporaryDirectory(prefix="gpuprofile-bench-") as tmp:
        modes: list[tuple[str, Callable[[], dict[str, float]]]] = [
            ("torch", lambda: run_torch(train, args.active, Path(tmp))),
            ("ours", lambda: run_ours(train, args.active, live=False)),
            ("ours + live", lambda: run_ours(train, args.active, live=True)),
        ]
        runs = interleaved(modes, args.repeat)
    theirs = best(runs["torch"])
    print(
        f"torch {torch.__version__}, {args.steps} steps, schedule wait 0 warmup 1 active "
        f"{args.active}: {theirs['windows']:.0f} windows; best of {args.repeat}"
    )
    print(f"{'mode':<14} {'loop s':>8} {'vs torch':>9} {'total s':>8} {'vs torch':>9}")
    for name in runs:
        row = best(runs[name])
        print(
            f"{name:<14} {row['loop']:>8.2f} {row['loop'] / theirs['loop']:>8.2f}x "
            f"{row['total']:>8.2f} {row['total'] / theirs['total']:>8.2f}x"
            + (
                f"   ({row['refills']:.0f} refills, {row['refill_s']:.2f} s refilling)"
                if name == "ours + live"
                else ""
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
