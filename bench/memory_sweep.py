"""What --memory and a sweep cost, against a plain profile measured beside them.

    python bench/memory_sweep.py [--rounds N] [--steps S]

A 2-layer MLP trains on random data (Adam, S steps) on one thread, in interleaved rounds (best
of N per mode, so drift hits every mode alike):
  plain        the loop inside gpuprofile.profile(), then its report built
  memory       the same with profile_memory=True (allocator events, tensor roles, the memory
               view in the report)
  ratios       memory/plain for the block alone (what recording costs the program) and for
               block + report (what the user waits for)
Then a sweep of the same loop over the hidden width (4 values, repeat=1, warmup=0) against a
plain profile of each value, block + report: the sweep's cost per point over a plain profile's
(fitting, its report and text included).
Not a test: it prints, and always exits 0.
"""

from __future__ import annotations

import os

os.environ["OMP_NUM_THREADS"] = "1"
os.environ.setdefault("GPUPROFILE_HISTORY", "off")  # the history's writes are not measured

import argparse
import statistics
import time
from collections.abc import Callable

WIDTHS = (128, 256, 512, 1024)


def make_training(steps: int, width: int = 512) -> Callable[[], None]:
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(256, width), torch.nn.ReLU(), torch.nn.Linear(width, 10)
    )
    optimizer = torch.optim.Adam(model.parameters())
    inputs, labels = torch.randn(128, 256), torch.randint(0, 10, (128,))

    def train() -> None:
        for _ in range(steps):
            optimizer.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(model(inputs), labels).backward()
            optimizer.step()

    train()  # warm: the optimizer's state and the allocator's first blocks exist
    return train


def profiled(train: Callable[[], None], memory: bool) -> tuple[float, float]:
    import gpuprofile

    start = time.perf_counter()
    with gpuprofile.profile(profile_memory=memory, interval=0) as p:
        train()
    block = time.perf_counter() - start
    p.report()
    return block, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    import gpuprofile

    train = make_training(args.steps)
    profiled(train, True)  # first capture's one-time costs out of the way
    runs: dict[str, list[tuple[float, float]]] = {"plain": [], "memory": []}
    for _ in range(args.rounds):
        for mode in runs:
            runs[mode].append(profiled(train, mode == "memory"))
    for mode, got in runs.items():
        block_s, total_s = min(b for b, _ in got), min(t for _, t in got)
        print(f"{mode:<8} block {block_s:.3f} s, with report {total_s:.3f} s")
    block = min(b for b, _ in runs["memory"]) / min(b for b, _ in runs["plain"])
    total = min(t for _, t in runs["memory"]) / min(t for _, t in runs["plain"])
    print(f"memory/plain: block {block:.2f}x, block + report {total:.2f}x")

    trainers = {w: make_training(args.steps, w) for w in WIDTHS}
    plain = []
    for _ in range(args.rounds):
        start = time.perf_counter()
        for w in WIDTHS:
            profiled(trainers[w], False)
        plain.append((time.perf_counter() - start) / len(WIDTHS))
    swept = []
    for _ in range(args.rounds):
        start = time.perf_counter()
        result = gpuprofile.sweep(lambda w: trainers[int(w)](), WIDTHS, name="width", repeat=1,
                                  warmup=0, interval=0)  # fmt: skip
        result.text()
        swept.append((time.perf_counter() - start) / len(WIDTHS))
    point, alone = statistics.median(swept), statistics.median(plain)
    ratio = point / alone
    print(f"sweep per point {point:.3f} s, plain profile + report {alone:.3f} s: {ratio:.2f}x")
    print(result.text())


if __name__ == "__main__":
    main()
