"""The Kineto reader is one pipeline: each module of importers/kineto/ is a stage and imports only
the stages before it, never a later one; and Kineto's category names are written in one place.

The imports are read from the source with ``ast`` (module level, inside functions and under
TYPE_CHECKING alike). ``python tests/unit/test_kineto_stages.py [PACKAGE_DIR]`` prints each
stage's imports of the package's stages (of python/gpuprofile/importers/kineto, or of another
checkout's).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "gpuprofile" / "importers" / "kineto"
NAME = "gpuprofile.importers.kineto"
# The stages in the order data flows through them; a stage may import those before it only.
STAGES = (
    "read",
    "format",
    "gather",
    "decode",
    "check",
    "header",
    "columns",
    "direct",
    "capture_ranges",
    "trace",
    "extent",
)
# Kineto category names that only the reader and the export write: defined in format.py alone.
CATEGORY_NAMES = frozenset(("gpu_memcpy", "gpu_memset", "gpu_user_annotation"))


def stage_imports(package: Path) -> dict[str, set[str]]:
    """Per module of the package (by its name in it), the package's modules it imports."""
    # Dotted name -> the module's name in the package ("__init__" for the package itself).
    known = {f"{NAME}.{p.stem}": p.stem for p in package.glob("*.py")} | {NAME: "__init__"}
    graph: dict[str, set[str]] = {}
    for path in sorted(package.glob("*.py")):
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: within the package (its modules are one level)
                    base = f"{NAME}.{base}" if base else NAME
                # "from gpuprofile.importers.kineto import decode" imports a module; an
                # imported name that is no module imports the module it is named in.
                targets = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names
                ]
            else:
                continue
            found.update(known[t] for t in targets if t in known)
        graph[path.stem] = found - {path.stem}
    return graph


def backward(graph: dict[str, set[str]]) -> list[str]:
    """Each import of a stage by an earlier (or unordered) stage, as "a -> b"."""
    problems = []
    for module, targets in graph.items():
        if module == "__init__":
            continue
        for target in sorted(targets):
            if target == "__init__" or STAGES.index(target) >= STAGES.index(module):
                problems.append(f"{module} -> {target}")
    return sorted(problems)


def test_every_module_is_a_stage() -> None:
    modules = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__"}
    assert modules == set(STAGES), "place new modules in STAGES, in the order data flows"


def test_stages_import_only_earlier_stages() -> None:
    assert backward(stage_imports(PACKAGE)) == []


def test_the_check_finds_a_later_stage_imported(tmp_path: Path) -> None:
    # The reader itself, on a package whose decode stage reaches forward into columns (in a
    # function, as a relative import) and whose check imports the package's root.
    (tmp_path / "decode.py").write_text("def f():\n    from .columns import ints\n")
    (tmp_path / "check.py").write_text("from gpuprofile.importers.kineto import load_kineto\n")
    (tmp_path / "columns.py").write_text("from gpuprofile.importers.kineto import decode\n")
    (tmp_path / "__init__.py").write_text("")
    graph = stage_imports(tmp_path)
    assert graph["columns"] == {"decode"} and graph["decode"] == {"columns"}
    assert backward(graph) == ["check -> __init__", "decode -> columns"]


@pytest.mark.parametrize("name", sorted(CATEGORY_NAMES))
def test_kineto_category_names_are_written_once(name: str) -> None:
    root = PACKAGE.parents[1]
    writers = sorted(
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Constant) and node.value == name
    )
    assert writers == ["importers/kineto/format.py"]


def main(argv: list[str]) -> None:
    package = Path(argv[0]).resolve() if argv else PACKAGE
    for module, targets in sorted(stage_imports(package).items()):
        order = [t for t in STAGES if t in targets] + sorted(targets - set(STAGES))
        print(f"{module:>8} -> {', '.join(order) or '(none)'}")
    print(f"backward imports: {backward(stage_imports(package)) or 'none'}")


if __name__ == "__main__":
    main(sys.argv[1:])
