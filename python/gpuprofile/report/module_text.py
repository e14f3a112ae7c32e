"""The text report's lines for the program behind the events: a rank's phases, its time by
module as an indented tree, and the module and line a hint or point is about."""

from __future__ import annotations

from gpuprofile.analyses.frames import SourceLine
from gpuprofile.report.schema import ModuleRow, Phases, SourceRef
from gpuprofile.units import format_fraction, format_time

# Module rows printed per rank: the heaviest, each with the modules above it.
MODULE_ROWS = 15
# Characters of a module path printed (the tree's indentation comes on top).
PATH_WIDTH = 60


def phase_line(phases: Phases | None, wall_ns: int) -> list[str]:
    """``phases: forward 1.2 ms (40%), backward ...``; nothing without host ops, nor where no
    op belongs to any phase (no module calls, no phase marks, no backward: a TensorRT engine's
    layers, a CUDA program's ranges), where "other 100%" would say nothing."""
    if phases is None or not (phases.forward_ns or phases.backward_ns or phases.optimizer_ns):
        return []
    parts = (
        ("forward", phases.forward_ns),
        ("backward", phases.backward_ns),
        ("optimizer", phases.optimizer_ns),
        ("other", phases.other_ns),
    )
    # An inference run has no backward or optimizer: zeros there are not findings. A forward
    # of 0 beside a backward is one nothing marked (no module calls, no phase ranges).
    untold = not phases.forward_ns and (phases.backward_ns or phases.optimizer_ns)
    cells = [
        f"{name} {format_time(ns)} ({format_fraction(ns / wall_ns if wall_ns else None, 0)})"
        if name != "forward" or not untold
        else "forward not told apart (no module calls or phase marks: it is in other)"
        for name, ns in parts
        if ns or name in ("forward", "other")
    ]
    return ["  phases: " + ", ".join(cells)]


def module_lines(rows: list[ModuleRow], rank: int, limit: int = MODULE_ROWS) -> list[str]:
    """The rank's time by module, an indented tree (children under their parent, the largest
    first), cut to ``limit`` rows: the heaviest (forward + backward) with their ancestors."""
    if not rows:
        return []
    kept = _kept(rows, limit)
    # A run without kernels has no GPU time to show: a column of zeros would read as idle.
    gpu = any(row.gpu_ns for row in rows)
    gpu_head = f" {'GPU':>10}" if gpu else ""
    # Likewise an inference run's backward column.
    backward = any(row.backward_ns for row in rows)
    backward_head = f" {'backward':>10}" if backward else ""
    lines = [
        "  time by module (inclusive: a module's time holds its children's):",
        f"    {'forward':>10}{backward_head}{gpu_head}  module",
    ]
    above: list[str] = []  # the paths of the open ancestors, one per depth
    for i, row in enumerate(rows):
        del above[row.depth :]
        parent = above[-1] if above else ""
        above.append(row.path)
        if i not in kept:
            continue
        # Under its parent, a module is named by the rest of its path.
        name = row.path.removeprefix(parent + ".") if parent else row.path
        # torch's own names (Linear_3) say their class already.
        if row.type and not name.rsplit(".", 1)[-1].startswith(f"{row.type}_"):
            name = f"{name} ({row.type})"
        if len(name) > PATH_WIDTH:
            name = "…" + name[-(PATH_WIDTH - 1) :]
        gpu_cell = f" {format_time(row.gpu_ns):>10}" if gpu else ""
        backward_cell = f" {format_time(row.backward_ns):>10}" if backward else ""
        lines.append(
            f"    {format_time(row.forward_ns):>10}{backward_cell}"
            f"{gpu_cell}  {'  ' * row.depth}{name}"
        )
    if len(kept) < len(rows):
        lines.append(
            f"    … {len(rows) - len(kept)} more modules "
            f"(report()['ranks'][{rank}]['modules'], --format json)"
        )
    return lines


def _kept(rows: list[ModuleRow], limit: int) -> set[int]:
    """Row positions to print: the largest rows first, each with the rows above it in the
    tree, while they fit in ``limit``."""
    parent: list[int] = []
    stack: list[int] = []  # positions of the open ancestors, one per depth
    for i, row in enumerate(rows):
        del stack[row.depth :]
        parent.append(stack[-1] if stack else -1)
        stack.append(i)
    kept: set[int] = set()
    for i in sorted(range(len(rows)), key=lambda i: -(rows[i].forward_ns + rows[i].backward_ns)):
        chain = []
        at = i
        while at >= 0 and at not in kept:
            chain.append(at)
            at = parent[at]
        if len(kept) + len(chain) > limit:
            continue
        kept.update(chain)
    return kept


def owner_line(modules: list[str], sources: list[SourceRef]) -> list[str]:
    """``module: Transformer.layers.0.attn · line: cell [5] line 12``, what is known of it."""
    cells = []
    if modules:
        cells.append(f"module: {modules[0]}")
    if sources:
        s = sources[0]
        cells.append(f"line: {SourceLine(s.file, s.line, s.function).label}")
    return [f"     {' · '.join(cells)}"] if cells else []
