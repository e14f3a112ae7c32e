"""The package's layers point one way: trace <- importers, hardware <- analyses <- report <- widget
<- the user's API (Profile, load) <- cli, magic; capture beside analyses, producing Traces.

Every ``import`` of the package is read from the source with ``ast``, wherever it sits: at
module level, inside functions, and under ``TYPE_CHECKING`` (a type-only arrow is still an
arrow). ``python tests/unit/test_layers.py [PACKAGE_DIR]`` prints the graph between packages
(of python/gpuprofile, or of another checkout's).
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "gpuprofile"

# Lower layers first; a module may import only from layers below its own, or from its own
# package. capture and analyses share a rank but must not import each other.
LAYERS: dict[str, int] = {
    "errors": 0,
    "units": 0,
    "collector": 0,
    "trace": 1,
    "importers": 2,
    "hardware": 2,
    "capture": 3,
    "analyses": 3,
    "doctor": 3,
    "report": 4,
    "widget": 5,
    "store": 5,  # the history: reports and digests of runs, beside the widget
    "profiles": 6,
    "result": 6,  # profiles.py's name before, for reading older checkouts
    "load": 7,
    "compare": 7,  # gpuprofile.diff: resolves paths and Profiles, beside load
    "show": 7,  # gpuprofile.show: a recorded run back in the notebook
    "cli": 8,
    "magic": 8,
    "__init__": 9,
    "__main__": 9,
}
# What a layer may import beyond what is below it: nothing, and these are taken away.
FORBIDDEN = {
    "capture": {"analyses", "report", "widget"},
    "analyses": {"capture"},
    "doctor": {"capture", "analyses", "report", "widget"},
    "widget": {"capture"},
    "store": {"capture", "widget"},
}


def modules() -> dict[str, Path]:
    """Dotted name of every module of the package, and its file."""
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def imports(known: dict[str, Path]) -> dict[str, set[str]]:
    """Per module, the package's modules it imports (anywhere in its source)."""
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        is_package = path.name == "__init__.py"
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(node, name, is_package)
                for alias in node.names:
                    # "from gpuprofile.analyses import idle" imports a module; else the package.
                    child = f"{base}.{alias.name}"
                    targets.add(child if child in known else base)
        graph[name] = {t for t in targets if t in known and t != name}
    return graph


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    parts = parts[: len(parts) - node.level + 1]
    return ".".join([*parts, node.module] if node.module else parts)


def layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def wrong_way(graph: dict[str, set[str]]) -> list[str]:
    problems = []
    for module, targets in graph.items():
        here = layer_of(module)
        for target in targets:
            there = layer_of(target)
            if there == here:
                continue
            if LAYERS.get(there, 99) >= LAYERS.get(here, 99) or there in FORBIDDEN.get(here, set()):
                problems.append(f"{module} -> {target} ({here} may not import {there})")
    return sorted(problems)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_every_module_belongs_to_a_layer() -> None:
    unplaced = {layer_of(m) for m in modules()} - set(LAYERS)
    assert not unplaced, f"add these to LAYERS: {sorted(unplaced)}"


def test_layers_point_one_way() -> None:
    assert wrong_way(imports(modules())) == []


def test_no_import_cycle() -> None:
    assert cycles(imports(modules())) == []


def detector_imports(graph: dict[str, set[str]]) -> list[str]:
    """Detectors importing other detectors."""
    prefix = "gpuprofile.analyses.detectors."
    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        if module.startswith(prefix)
        for target in targets
        if target.startswith(prefix)
    )


def test_no_detector_imports_another() -> None:
    assert detector_imports(imports(modules())) == []


def test_the_checks_see_arrows_inside_functions_and_for_types(tmp_path: Path) -> None:
    # The reader itself: a function-level import and a TYPE_CHECKING one both count.
    source = tmp_path / "gpuprofile"
    (source / "trace").mkdir(parents=True)
    (source / "widget").mkdir()
    (source / "__init__.py").write_text("")
    (source / "trace" / "__init__.py").write_text("")
    (source / "widget" / "__init__.py").write_text("")
    (source / "trace" / "model.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from gpuprofile.widget.view import View\n"
        "def f():\n    from ..widget import view\n"
    )
    (source / "widget" / "view.py").write_text("from gpuprofile.trace.model import f\n")
    global PACKAGE
    saved, PACKAGE = PACKAGE, source
    try:
        graph = imports(modules())
    finally:
        PACKAGE = saved
    assert graph["gpuprofile.trace.model"] == {"gpuprofile.widget.view"}
    assert wrong_way(graph) == [
        "gpuprofile.trace.model -> gpuprofile.widget.view (trace may not import widget)"
    ]
    assert cycles(graph) == [["gpuprofile.trace.model", "gpuprofile.widget.view"]]


def main(argv: list[str]) -> None:
    """The graph between layers: each arrow with how many module imports make it."""
    global PACKAGE
    if argv:
        PACKAGE = Path(argv[0]).resolve()
    graph = imports(modules())
    arrows: dict[tuple[str, str], int] = defaultdict(int)
    for module, targets in graph.items():
        for target in targets:
            if layer_of(module) != layer_of(target):
                arrows[(layer_of(module), layer_of(target))] += 1
    for (a, b), n in sorted(arrows.items(), key=lambda kv: (LAYERS.get(kv[0][0], 99), kv[0])):
        print(f"{a:>10} -> {b:<10} {n}")
    print(f"cycles: {cycles(graph) or 'none'}")
    print(f"wrong-way arrows: {wrong_way(graph) or 'none'}")
    print(f"detectors importing detectors: {detector_imports(graph) or 'none'}")


if __name__ == "__main__":
    main(sys.argv[1:])
