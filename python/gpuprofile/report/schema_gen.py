"""The files generated from the report's Structs (report/schema.py) and the diff's
(report/diff_schema.py): their JSON Schemas, ``docs/report.schema.json`` and
``docs/diff.schema.json``, and the widget's types, ``js/model/report_types.d.ts``.

    python -m gpuprofile.report.schema_gen --write    # regenerate them all
    python -m gpuprofile.report.schema_gen --check    # exit 1 when any is stale

tests/unit/test_report_schema.py fails when any file differs from what this gives.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from gpuprofile.report import diff_schema
from gpuprofile.report.diff_schema import DiffDocument
from gpuprofile.report.lanes import Lane
from gpuprofile.report.schema import SCHEMA, Report
from gpuprofile.report.widget_summary import SummaryExtras

REPO = Path(__file__).resolve().parents[3]
SCHEMA_FILE = Path("docs") / "report.schema.json"
DIFF_SCHEMA_FILE = Path("docs") / "diff.schema.json"
TYPES_FILE = Path("js") / "model" / "report_types.d.ts"
_HEADER = (
    "// Generated from python/gpuprofile/report/schema.py and diff_schema.py by\n"
    "// `python -m gpuprofile.report.schema_gen --write`: do not edit by hand.\n"
    f"// The widget's summary is the report ({SCHEMA}) as JSON, plus its text.\n"
)


def json_schema(struct: type[msgspec.Struct] = Report, title: str = SCHEMA) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a Struct's JSON: the report's, or the diff's."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": title,
        **msgspec.json.schema(struct),
    }


def typescript() -> str:
    """One TypeScript interface per Struct, from the JSON Schema: what the widget's JSDoc
    imports (``import("./report_types.js").Report``). Beside the report's, the types of what
    the widget's summary adds to it (report/widget_summary.py) and of its timeline's lanes
    (report/lanes.py), which are no part of the report's JSON Schema. The diff's types come
    with the report's: a report's ``baseline`` is a diff."""
    _, definitions = msgspec.json.schema_components([Report, SummaryExtras, Lane])
    out = [_HEADER.rstrip("\n")]
    for name, definition in definitions.items():
        out.append("")
        if definition.get("description"):
            out.append(_comment(definition["description"], ""))
        out.append(f"export interface {name} {{")
        required = set(definition.get("required", []))
        for field, spec in definition["properties"].items():
            optional = "" if field in required else "?"
            out.append(f"  {_key(field)}{optional}: {_ts(spec)};")
        out.append("}")
    out.append("")
    out.append(
        "/** The widget's summary: the report and what the widget adds (widget/widget.py). */"
    )
    out.append("export type Summary = Partial<Report> & SummaryExtras;")
    return "\n".join(out) + "\n"


def _ts(spec: dict[str, Any]) -> str:
    if "$ref" in spec:
        return str(spec["$ref"]).rsplit("/", 1)[-1]
    if "anyOf" in spec:
        # int | float are both "number": said once.
        return " | ".join(dict.fromkeys(_ts(s) for s in spec["anyOf"]))
    if "enum" in spec:  # a Literal
        return " | ".join(json.dumps(value) for value in spec["enum"])
    kind = spec.get("type")
    if kind in ("integer", "number"):
        return "number"
    if kind in ("string", "boolean", "null"):
        return str(kind)
    if kind == "array":
        if "prefixItems" in spec:
            return "[" + ", ".join(_ts(s) for s in spec["prefixItems"]) + "]"
        item = _ts(spec.get("items", {}))
        return f"({item})[]" if " | " in item else f"{item}[]"
    if kind == "object":
        return f"Record<string, {_ts(spec.get('additionalProperties', {}))}>"
    return "unknown"  # Any


def _key(name: str) -> str:
    return name if name.isidentifier() else json.dumps(name)


def _comment(text: str, indent: str) -> str:
    lines = text.strip().splitlines()
    return "\n".join(
        [f"{indent}/**", *(f"{indent} * {line}".rstrip() for line in lines), f"{indent} */"]
    )


def generated() -> dict[Path, str]:
    """Each generated file (relative to the repository) with the text it should hold."""
    return {
        SCHEMA_FILE: json.dumps(json_schema(), indent=1) + "\n",
        DIFF_SCHEMA_FILE: json.dumps(json_schema(DiffDocument, diff_schema.SCHEMA), indent=1)
        + "\n",
        TYPES_FILE: typescript(),
    }


def stale(root: Path = REPO, files: Mapping[Path, str] | None = None) -> list[Path]:
    """The generated files under ``root`` that differ from what they should hold (by default
    this module's: what the Structs give)."""
    return [
        path
        for path, text in (generated() if files is None else files).items()
        if not (root / path).exists() or (root / path).read_text(encoding="utf-8") != text
    ]


def run_generator(argv: list[str], files: Mapping[Path, str], root: Path, usage: str) -> int:
    """A generator's command line: --write writes the files, --check exits 1 when any is
    stale; else the usage, exit 2. This module's, and widget/wire.py's."""
    if argv == ["--write"]:
        for path, text in files.items():
            (root / path).write_text(text, encoding="utf-8")
            print(f"wrote {path}")
        return 0
    if argv == ["--check"]:
        old = stale(root, files)
        for path in old:
            print(f"{path} is stale: regenerate it with --write")
        return 1 if old else 0
    print(usage)
    return 2


if __name__ == "__main__":
    sys.exit(run_generator(sys.argv[1:], generated(), REPO, __doc__ or ""))
