"""What recording nn.Module calls (capture/modules.py) costs the example notebooks' cells.

    python bench/modules.py [--repeat N] [--seconds S] [--notebooks GLOB]

Each notebook's code cells run in order in one namespace (its set-up); each ``%%gpuprofile``
cell runs under the capture with its own flags, once with module ranges and once with
``--no-modules``, back to back (the order alternates each round), N rounds or more (short
cells run until each side has run ``--seconds``), torch on one thread. Under ``--stack``
"modules on" is the hook that names torch's own module events (capture/module_names.py).
Timed: the cell's body inside the capture, not the capture's start or teardown.

Printed per cell: module calls recorded; the best time of each side; the ratio, as the median
of the rounds' own on/off ratios (a round's two runs are back to back, so a slow spell of the
machine moves both), with the 10th and 90th percentiles; and the cost the cell's module calls
imply at the per-call cost measured in the same run (bench/module_call_cost.py's loop), which
is steady where the ratio is not. Cells with no module call show the ratio's noise: nothing
differs between their two sides. Target: within 5%. A last row, not an example, is a small
transformer whose steps are mostly module calls: where the cost shows. Cells that read a
profile (``gpuprofile.last()``, ``.report()``) are skipped. Not a test: it prints, and always
exits 0.
"""

from __future__ import annotations

import os

# Before numpy/torch are imported anywhere: one thread, like the test suite.
os.environ["OMP_NUM_THREADS"] = "1"

import argparse
import dataclasses
import gc
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

TARGET = 0.05
MAX_ROUNDS = 200
# Cells that read the profiles the magic made: nothing to time, and they need the magic.
READS_PROFILES = ("gpuprofile.last()", ".report()")
ROOT = Path(__file__).resolve().parents[1]


@dataclasses.dataclass
class Cell:
    name: str
    flags: str  # the %%gpuprofile line's arguments
    body: str
    namespace: dict[str, Any]


def cells_of(notebook: Path) -> list[Cell]:
    """The notebook's profiled cells, its other code cells run on the way (set-up)."""
    namespace: dict[str, Any] = {"__name__": "__main__"}
    cells = []
    sources = [
        "".join(c["source"])
        for c in json.loads(notebook.read_text())["cells"]
        if c["cell_type"] == "code"
    ]
    for source in sources:
        first, _, body = source.partition("\n")
        if first.startswith("%%gpuprofile"):
            name = f"{notebook.stem}[{len(cells)}]"
            cells.append(Cell(name, first.removeprefix("%%gpuprofile"), body, namespace))
            # Run once, not timed: what it leaves (its outputs) later cells may read.
            exec(compile(body, name, "exec"), namespace)
        elif not first.startswith("%") and not any(r in source for r in READS_PROFILES):
            exec(compile(source, notebook.stem, "exec"), namespace)
    return cells


def transformer_cell() -> Cell:
    """Not an example: a step that is mostly module calls (a small encoder, batch 8)."""
    import torch

    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(64, 4, 128, batch_first=True, dropout=0.0)
    namespace = {
        "torch": torch,
        "model": torch.nn.TransformerEncoder(layer, 4, enable_nested_tensor=False),
        "x": torch.randn(8, 16, 64),
    }
    body = "for _ in range(50):\n    model(x).sum().backward()\n"
    return Cell("(small transformer, not an example)", "", body, namespace)


def timed(cell: Cell, options: Any, *, modules: bool) -> tuple[float, int]:
    """The body's time inside the capture, and the module calls recorded (the capture's
    ranges, or under --stack torch's own events, which the capture then names)."""
    from gpuprofile.capture.session import capture

    code = compile(cell.body, cell.name, "exec")
    gc.collect()
    with capture(dataclasses.replace(options, modules=modules)) as recording:
        started = time.perf_counter()
        exec(code, cell.namespace)
        elapsed = time.perf_counter() - started
    assert recording.trace is not None
    ops = recording.trace.ops
    named = ops["name"].astype(str).str.startswith("nn.Module: ")
    form = "python_function" if options.with_stack else "user_annotation"
    return elapsed, int((named & (ops["category"] == form)).sum())


def options_of(cell: Cell) -> Any:
    from IPython.core.magic_arguments import parse_argstring

    from gpuprofile.magic import GpuprofileMagics, _options

    args = parse_argstring(GpuprofileMagics.gpuprofile, cell.flags)
    options = _options(args, cell.namespace)
    return dataclasses.replace(options, export=None)


def paired(run: Callable[[bool], float], repeat: int, seconds: float) -> list[tuple[float, float]]:
    """``(run(True), run(False))`` per round, back to back (the order alternates each round),
    at least ``repeat`` rounds and until each side has run ``seconds`` in all: a 5 ms cell gets
    many more rounds than a 0.2 s one, so both are timed to about the same noise."""
    rounds: list[tuple[float, float]] = []
    while len(rounds) < repeat or (
        sum(on for on, _ in rounds) < seconds and len(rounds) < MAX_ROUNDS
    ):
        if len(rounds) % 2 == 0:
            on = run(True)
            off = run(False)
        else:
            off = run(False)
            on = run(True)
        rounds.append((on, off))
    return rounds


def measure(cell: Cell, repeat: int, seconds: float) -> tuple[list[tuple[float, float]], int]:
    options = options_of(cell)
    calls = 0

    def run(modules: bool) -> float:
        nonlocal calls
        elapsed, recorded = timed(cell, options, modules=modules)
        calls = max(calls, recorded)
        return elapsed

    return paired(run, repeat, seconds), calls


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def arguments(doc: str, argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="rounds at least (best is kept)")
    parser.add_argument(
        "--seconds", type=float, default=1.0, help="and more rounds until each side ran this long"
    )
    parser.add_argument("--notebooks", default="example_notebooks/*.ipynb")
    return parser.parse_args(argv)


def example_cells(notebooks: str) -> list[Cell]:
    """The profiled cells of the notebooks matching the glob, each after its set-up, then the
    small transformer; torch on one thread."""
    import torch

    torch.set_num_threads(1)
    cells: list[Cell] = []
    for notebook in sorted(ROOT.glob(notebooks)):
        print(f"  setting up {notebook.name}", file=sys.stderr, flush=True)
        cells.extend(cells_of(notebook))
    return [*cells, transformer_cell()]


def main(argv: list[str] | None = None) -> int:
    args = arguments(__doc__, argv)
    cells = example_cells(args.notebooks)
    import torch

    sys.path.insert(0, str(Path(__file__).parent))
    from module_call_cost import per_call_us

    cost_us = per_call_us()
    print(
        f"torch {torch.__version__}, {args.repeat} rounds or more (each side "
        f"{args.seconds:g} s at least), modules on vs --no-modules; "
        f"{cost_us:.1f} us per module call (bench/module_call_cost.py's loop)"
    )
    print(
        f"{'cell':<36} {'calls':>5} {'on s':>7} {'off s':>7} {'ratio':>7} "
        f"{'[p10, p90]':>16} {'implied':>8}"
    )
    rows: list[tuple[str, float]] = []
    for cell in cells:
        print(f"  {cell.name}", file=sys.stderr, flush=True)
        rounds, calls = measure(cell, args.repeat, args.seconds)
        ratios = [on / off - 1 for on, off in rounds]
        ratio = percentile(ratios, 0.5)
        off = min(off for _, off in rounds)
        spread = f"[{percentile(ratios, 0.1):+.1%}, {percentile(ratios, 0.9):+.1%}]"
        implied = calls * cost_us * 1e-6 / off
        mark = "" if ratio <= TARGET else "  over 5%"
        print(
            f"{cell.name:<36} {calls:>5} {min(on for on, _ in rounds):>7.3f} {off:>7.3f} "
            f"{ratio:>+7.1%} {spread:>16} {implied:>+8.1%}{mark}"
        )
        rows.append((cell.name, ratio))
    examples = [ratio for name, ratio in rows if not name.startswith("(")]
    if examples:
        print(f"worst example cell: {max(examples):+.1%} (target within {TARGET:.0%})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] if len(sys.argv) > 1 else None))
