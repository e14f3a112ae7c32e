"""What recording one nn.Module call costs under the running profiler, where little else moves:
a Sequential of 20 Linear(8, 8) run 50 times (1,050 module calls) inside a capture, with module
ranges and with --no-modules, interleaved, best of N each.

    python bench/module_call_cost.py [--repeat N]

bench/modules.py times the example cells; a 5 ms cell with 20 module calls there moves by as
much between runs as the target (5%) allows, so this is the steadier figure: microseconds per
module call, and the on/off ratio of the same loop. Not a test: it prints, and exits 0.
"""

from __future__ import annotations

import os

os.environ["OMP_NUM_THREADS"] = "1"  # before torch is imported: one thread, like the tests

import argparse
import time

LAYERS = 20
PASSES = 50
CALLS = PASSES * (LAYERS + 1)


def measure(repeat: int) -> tuple[float, float]:
    """Best times of the loop with module ranges and with --no-modules (seconds)."""
    import torch

    from gpuprofile.capture.options import CaptureOptions
    from gpuprofile.capture.session import capture

    torch.set_num_threads(1)
    model = torch.nn.Sequential(*[torch.nn.Linear(8, 8) for _ in range(LAYERS)])
    x = torch.randn(2, 8)

    def run(modules: bool) -> float:
        with capture(CaptureOptions(modules=modules, interval=0)):
            started = time.perf_counter()
            for _ in range(PASSES):
                model(x)
            return time.perf_counter() - started

    best = {True: float("inf"), False: float("inf")}
    for round_ in range(repeat):
        for side in (True, False) if round_ % 2 == 0 else (False, True):
            best[side] = min(best[side], run(side))
    return best[True], best[False]


def per_call_us(repeat: int = 15) -> float:
    on, off = measure(repeat)
    return (on - off) / CALLS * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()

    import torch

    on, off = measure(args.repeat)
    print(f"torch {torch.__version__}, {CALLS} module calls, best of {args.repeat} each side")
    print(f"modules on  {on * 1e3:8.2f} ms")
    print(f"modules off {off * 1e3:8.2f} ms")
    print(f"ratio {on / off - 1:+.1%}, {(on - off) / CALLS * 1e6:.1f} us per module call")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
