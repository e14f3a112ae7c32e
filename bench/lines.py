"""What exact lines (capture/line_ranges.py: a range per line of the user's code) cost a
``--stack`` capture of the example notebooks' cells.

    python bench/lines.py [--repeat N] [--seconds S] [--notebooks GLOB]

The cells of bench/modules.py (each ``%%gpuprofile`` cell of the example notebooks, after its
notebook's set-up, and a small transformer's training steps), each under ``--stack`` twice,
interleaved (the order alternates each round), best of N rounds or more (bench/modules.py's
``paired``), torch on one thread: once as shipped, once with the line ranges left out (their
``install`` made a no-op here, which is what ``--stack`` cost before them). Timed: the cell's
body inside the capture. Printed per cell: both times and the ratio. No target: the issue
asks for the lines, this says their price. Not a test: it prints, and always exits 0.
"""

from __future__ import annotations

import os

os.environ["OMP_NUM_THREADS"] = "1"  # before numpy/torch are imported anywhere

import dataclasses
import gc
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from modules import Cell, arguments, example_cells, options_of, paired


def timed(cell: Cell, options: Any, lines: bool) -> float:
    from gpuprofile.capture import line_ranges
    from gpuprofile.capture.session import capture

    install = line_ranges.LineRanges.install
    if not lines:
        line_ranges.LineRanges.install = lambda self: None  # type: ignore[method-assign]
    try:
        code = compile(cell.body, cell.name, "exec")
        gc.collect()
        with capture(dataclasses.replace(options, with_stack=True)):
            started = time.perf_counter()
            exec(code, cell.namespace)
            return time.perf_counter() - started
    finally:
        line_ranges.LineRanges.install = install  # type: ignore[method-assign]


def main(argv: list[str] | None = None) -> int:
    args = arguments(__doc__, argv)
    cells = example_cells(args.notebooks)
    import torch

    print(f"torch {torch.__version__}, {args.repeat}+ rounds, --stack with lines vs without")
    print(f"{'cell':<40} {'lines s':>8} {'without s':>10} {'ratio':>7}")
    for cell in cells:
        print(f"  {cell.name}", file=sys.stderr, flush=True)
        options = options_of(cell)
        on, off = paired(partial(timed, cell, options), args.repeat, args.seconds)
        print(f"{cell.name:<40} {on:>8.3f} {off:>10.3f} {on / off - 1:>+7.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] if len(sys.argv) > 1 else None))
